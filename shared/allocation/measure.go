package allocation

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// The kinds of relief plan a hot node gets (option.kind): the planner's own names, in its notes,
// move reasons, projections and measurements.
const (
	// PlanMove is one copy off the hot node.
	PlanMove = "move"
	// PlanCountSwap is a move with a cooler copy sent back only so that OpenSearch's balancer does
	// not undo it.
	PlanCountSwap = "count-swap"
	// PlanSwap is the hot copy to a target and cooler copies of that target back, so it fits.
	PlanSwap = "swap"
	// PlanChain makes room on the target first, then moves the hot copy there.
	PlanChain = "chain"
	// PlanBundle is several groups for one hot node issued together.
	PlanBundle = "bundle"
	// PlanPassOn is the hot copy to a target that passes a copy of the same index on to a third
	// node, so that no node's count of the index rises past OpenSearch's balance threshold (a step
	// of a desired placement, placement.go).
	PlanPassOn = "pass-on"
	// PlanPrimaryBalance is a segment-replication primary off a node its primaries set apart, alone
	// or swapped count-neutrally (primaries.go); it is measured like a relief group.
	PlanPrimaryBalance = "primary-balance"
)

// The notes of a relief measured: what a group planned for a hot node was projected to take off
// it, against what the first samples after its moves completed show.
const (
	// NoteReliefMeasured: the source's WRITE load fell as projected (within the tolerance).
	NoteReliefMeasured = "relief-measured"
	// NoteReliefMissed: the source's WRITE load did not fall as projected: the group relieved
	// nothing, and its kind of plan is not repeated on that node for Config.ReliefCoolingOff.
	NoteReliefMissed = "relief-missed"
	// NoteKindCoolingOff: a kind of plan that measured no relief on this node was not tried again.
	NoteKindCoolingOff = "kind-cooling-off"
)

const (
	// reliefShortfall is the share of the projected relief the measured relief may fall short by and
	// still count: load drifts between the plan and the samples that judge it.
	reliefShortfall = 0.5
	// reliefNoise is the least shortfall, as a share of the node's threads, that counts: a sample's
	// noise on a node whose relief was projected small.
	reliefNoise = 0.05
	// projectionWait is how long a projection waits for its moves to complete; a group the move
	// function did not issue (dry-run, a budget, a refusal) is dropped after it.
	projectionWait = time.Hour
)

// ReliefProjection is a relief group as planned, kept in the memory until the samples after its moves
// completed measure what it did. Loads are in WRITE threads.
type ReliefProjection struct {
	Node     string    `json:"node"`
	NodeName string    `json:"node_name"`
	Kind     string    `json:"kind"`
	At       time.Time `json:"at"`
	Threads  int       `json:"threads"`
	// SourceBefore is the hot node's measured load when planned (its demand when queueing);
	// SourceAfter what the group, with the relocations already under way, leaves on it.
	SourceBefore float64 `json:"source_before"`
	SourceAfter  float64 `json:"source_after"`
	// Target is the hot copy's target and TargetAfter its projected load after the group.
	Target      string  `json:"target"`
	TargetName  string  `json:"target_name"`
	TargetAfter float64 `json:"target_after"`
	Moves       []Moved `json:"moves"`
	// GroupRelief is the load the group's copies were to take off the source: those leaving it
	// less those sent back to it, as planned.
	GroupRelief float64 `json:"group_relief"`
	// Completed is the first snapshot in which every copy was started on its target; zero until.
	Completed time.Time `json:"completed,omitzero"`
}

// Moved is one move of a projected group.
type Moved struct {
	Index string `json:"index"`
	Shard int    `json:"shard"`
	From  string `json:"from"`
	To    string `json:"to"`
	// FileSeconds is the planner's estimate of the copy's file phase when planned, and WriteLoad
	// the copy's WRITE threads then (see EstimateRelocation).
	FileSeconds float64 `json:"file_seconds,omitempty"`
	WriteLoad   float64 `json:"write_load,omitempty"`
	// Sharers is how many recoveries FileSeconds has share the copy's recovery rate: those the
	// planner counted, until the first sample that shows the copy relocating says how many do
	// (timeRelocations).
	Sharers int `json:"sharers,omitempty"`
	// Underway is the first sample that showed the copy relocating from From to To, Landed the
	// first after it that showed it started on To (see learnRelocations).
	Underway time.Time `json:"underway,omitzero"`
	Landed   time.Time `json:"landed,omitzero"`
}

// same reports whether m and o are one relocation: the same copy between the same nodes.
func (m Moved) same(o Moved) bool {
	return m.Index == o.Index && m.Shard == o.Shard && m.From == o.From && m.To == o.To
}

// key identifies the group: a dry-run plans the same group every cycle, and it is projected once.
func (p *ReliefProjection) key() string {
	parts := []string{p.Node}
	for _, m := range p.Moves {
		parts = append(parts, fmt.Sprintf("%s/%d/%s/%s", m.Index, m.Shard, m.From, m.To))
	}
	return strings.Join(parts, " ")
}

// Measurement is a projection judged against the samples after its moves completed. Loads are in
// WRITE threads of the source, of which it has Threads.
type Measurement struct {
	Node           string    `json:"node"`
	NodeName       string    `json:"node_name"`
	Kind           string    `json:"kind"`
	TargetName     string    `json:"target_name"`
	PlannedAt      time.Time `json:"planned_at"`
	MeasuredAt     time.Time `json:"measured_at"`
	Threads        int       `json:"threads"`
	SourceBefore   float64   `json:"source_before"`
	ProjectedAfter float64   `json:"projected_after"`
	MeasuredAfter  float64   `json:"measured_after"`
	// Tolerance is how far MeasuredAfter may be over ProjectedAfter and the relief still count.
	Tolerance float64 `json:"tolerance"`
	// ProjectedGroup is the load the group's copies were to take off the source, MeasuredGroup
	// what those copies carry in the samples after (those that left less those sent back): a
	// source whose load did not fall while its copies took their load elsewhere was relieved, and
	// more load arrived (a ramp), which is not the group's failure.
	ProjectedGroup float64 `json:"projected_group"`
	MeasuredGroup  float64 `json:"measured_group"`
	Relieved       bool    `json:"relieved"`
}

// ProjectedRelief and MeasuredRelief are the load the group was to take off the source and what
// it did, in threads.
func (m Measurement) ProjectedRelief() float64 { return m.SourceBefore - m.ProjectedAfter }

// MeasuredRelief is the load the group took off the source by the samples, in threads.
func (m Measurement) MeasuredRelief() float64 { return m.SourceBefore - m.MeasuredAfter }

func (m Measurement) String() string {
	verdict := "relieved it as projected"
	switch {
	case !m.Relieved:
		verdict = "relieved nothing"
	case m.MeasuredAfter > m.ProjectedAfter+m.Tolerance:
		// Its copies took their load off it, and more load arrived from elsewhere (random seed
		// 191 of 200: copies reassigned to it after a node left).
		verdict = fmt.Sprintf("relieved it as projected, its copies having taken their load elsewhere, while %.2f threads more than projected reached it from elsewhere (a rise in load, or copies placed on it)",
			m.MeasuredAfter-m.ProjectedAfter)
	}
	return fmt.Sprintf("the %s planned at %s off %s (to %s) was projected to take %.2f of %.2f WRITE threads off it (to %.2f of %d), its copies %.2f; the samples after it completed measure %.2f (%.2f off, tolerance %.2f), its copies carrying %.2f: it %s",
		m.Kind, m.PlannedAt.UTC().Format(time.TimeOnly), m.NodeName, m.TargetName, m.ProjectedRelief(), m.SourceBefore, m.ProjectedAfter, m.Threads,
		m.ProjectedGroup, m.MeasuredAfter, m.MeasuredRelief(), m.Tolerance, m.MeasuredGroup, verdict)
}

// measuredLoads is each data node's WRITE load in the snapshot as the planner sizes relief: what
// its counters served, or, while it queues, its demand (Hotspot.Demand) and its busy threads.
func measuredLoads(snap *cluster.Snapshot, hotspots []Hotspot) map[string]float64 {
	byNode := map[string]*Hotspot{}
	for i := range hotspots {
		byNode[hotspots[i].Node] = &hotspots[i]
	}
	out := make(map[string]float64, len(snap.Nodes))
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		load := n.Write.Load
		if h := byNode[n.ID]; h != nil {
			load = math.Max(load, h.Demand)
			if h.Hot {
				load = math.Max(load, float64(min(n.Write.Active, n.Write.Threads)))
			}
		}
		out[n.ID] = load
	}
	return out
}

// measure judges the memory's projections on this snapshot: a group whose copies are all started
// on their targets is complete, and the first sample whose interval starts after that measures it.
// Each verdict is a note; a group that relieved nothing goes to the cooling-off list. It returns
// the projections still waiting.
func (p *planner) measure(projections []ReliefProjection) []ReliefProjection {
	snap := p.sampled
	if len(projections) == 0 {
		return nil
	}
	// started holds each started copy by its shard and node (From unset).
	started := map[Moved]*cluster.Copy{}
	for i := range snap.Copies {
		if c := &snap.Copies[i]; c.State == cluster.StateStarted && c.Node != "" {
			started[Moved{Index: c.Index, Shard: c.Shard, To: c.Node}] = c
		}
	}
	relocating := map[Moved]bool{}
	for i := range snap.Copies {
		if c := &snap.Copies[i]; c.State == cluster.StateRelocating && c.RelocatingNode != "" {
			relocating[Moved{Index: c.Index, Shard: c.Shard, From: c.Node, To: c.RelocatingNode}] = true
		}
	}
	var waiting []ReliefProjection
	for _, pr := range projections {
		pr.Moves = slices.Clone(pr.Moves)
		p.timeRelocations(pr.Moves, relocating, started)
		if pr.Completed.IsZero() {
			if snap.At.Sub(pr.At) >= projectionWait {
				continue
			}
			done := true
			for _, m := range pr.Moves {
				if started[Moved{Index: m.Index, Shard: m.Shard, To: m.To}] == nil {
					done = false
					break
				}
			}
			if done {
				pr.Completed = snap.At
			}
			waiting = append(waiting, pr)
			continue
		}
		interval := time.Duration(snap.IntervalSeconds * float64(time.Second))
		if snap.IntervalSeconds <= 0 || snap.At.Add(-interval).Before(pr.Completed) {
			// This sample's interval still holds the relocation: the next one measures it.
			waiting = append(waiting, pr)
			continue
		}
		n := snap.NodeByID(pr.Node)
		if n == nil {
			// The node left: there is nothing to measure.
			continue
		}
		carried, known := 0.0, true
		for _, m := range pr.Moves {
			c := started[Moved{Index: m.Index, Shard: m.Shard, To: m.To}]
			switch {
			case c == nil:
				// Moved on since: what it carries now says nothing of this group.
				known = false
			case !c.LoadKnown:
				known = false
			case m.From == pr.Node:
				carried += c.WriteLoad
			case m.To == pr.Node:
				carried -= c.WriteLoad
			}
		}
		if !known {
			// A copy's rate is not known yet (a new copy's first sample): the next sample measures it.
			waiting = append(waiting, pr)
			continue
		}
		m := Measurement{Node: pr.Node, NodeName: pr.NodeName, Kind: pr.Kind, TargetName: pr.TargetName, PlannedAt: pr.At,
			MeasuredAt: snap.At, Threads: pr.Threads, SourceBefore: pr.SourceBefore, ProjectedAfter: pr.SourceAfter,
			MeasuredAfter: p.measured[pr.Node]}
		m.Tolerance = math.Max(reliefShortfall*m.ProjectedRelief(), reliefNoise*float64(max(pr.Threads, 1)))
		m.ProjectedGroup, m.MeasuredGroup = pr.GroupRelief, carried
		// Relieved when the source fell as projected, or when the group's copies took off it the
		// load projected (short by at most reliefShortfall of it): a trade of copies of equal load
		// does neither.
		m.Relieved = m.MeasuredAfter <= m.ProjectedAfter+m.Tolerance || carried >= (1-reliefShortfall)*pr.GroupRelief && carried > 0
		kind := NoteReliefMeasured
		if !m.Relieved {
			kind = NoteReliefMissed
			p.missed = slices.DeleteFunc(p.missed, func(x Measurement) bool { return x.Node == m.Node && x.Kind == m.Kind })
			p.missed = append(p.missed, m)
		}
		p.measureNote(kind, m, "%s", m)
	}
	return waiting
}

func (p *planner) measureNote(kind string, m Measurement, reason string, args ...any) {
	mm := m
	p.plan.Notes = append(p.plan.Notes, Note{Kind: kind, Node: m.NodeName, Reason: fmt.Sprintf(reason, args...), Measurement: &mm})
}

// coolingOff returns the measurement that keeps a kind of plan off a hot node: that kind relieved
// nothing there within Config.ReliefCoolingOff, and the node's load has not changed by
// returnLoadChange of its threads since. nil when the kind may be planned.
func (p *planner) coolingOff(node, kind string) *Measurement {
	for i := range p.missed {
		m := &p.missed[i]
		if m.Node != node || m.Kind != kind {
			continue
		}
		if p.v.Snap.At.Sub(m.MeasuredAt) >= p.v.Cfg.ReliefCoolingOff.Std() {
			return nil
		}
		if math.Abs(p.measured[node]-m.MeasuredAfter) >= returnLoadChange*float64(max(m.Threads, 1)) {
			// The load changed since: what failed then is worth trying again.
			return nil
		}
		return m
	}
	return nil
}

// holdOwnInFlight marks the nodes one of shardwise's own moves is relocating from or to: a relief
// group's move the snapshot shows relocating (a projection's), and every move the ledger says is
// still in flight (Config.WithOwnInFlight), of any phase. The move function holds every node with
// one of shardwise's moves in flight until it lands, so that its effect is measured before the
// next (safety.Throttle). A group planned on such a node would only be held back, every cycle
// while the copy relocates, and would take its targets' room and recovery slots from the groups
// that could go (segment-replication seed 112 of 200: an index-balance move onto node-4 held back
// the relief groups of two hot nodes, planned onto node-4 and refused, for five cycles).
func (p *planner) holdOwnInFlight() {
	hold := func(m Moved) {
		if p.held == nil {
			p.held = map[string][]Moved{}
		}
		for _, n := range []string{m.From, m.To} {
			if !slices.ContainsFunc(p.held[n], m.same) {
				p.held[n] = append(p.held[n], m)
			}
		}
	}
	if len(p.projections) > 0 {
		relocating := map[Moved]bool{}
		for i := range p.v.Snap.Copies {
			if c := &p.v.Snap.Copies[i]; c.State == cluster.StateRelocating && c.RelocatingNode != "" {
				relocating[Moved{Index: c.Index, Shard: c.Shard, From: c.Node, To: c.RelocatingNode}] = true
			}
		}
		for _, pr := range p.projections {
			for _, m := range pr.Moves {
				if relocating[Moved{Index: m.Index, Shard: m.Shard, From: m.From, To: m.To}] {
					hold(m)
				}
			}
		}
	}
	for _, m := range p.v.Cfg.ownInFlight {
		hold(m)
	}
}

// project records the group chosen for a hot node for measure, with each move's relocation
// estimate for learnRelocations.
func (p *planner) project(node *cluster.Node, o *option, targetAfter float64, est []RelocationEstimate) {
	// A spread ahead of the peak is planned at the loads of the cluster's even growth (withSkew);
	// the samples that measure it, and the relocations timed from it, show the loads of now.
	now := 1.0
	if p.skew > 0 {
		now = 1 / p.skew
	}
	pr := ReliefProjection{Node: node.ID, NodeName: node.Name, Kind: o.kind, At: p.v.Snap.At, Threads: node.Write.Threads,
		SourceBefore: p.measured[node.ID], SourceAfter: o.srcAfter * float64(max(node.Write.Threads, 1)) * now,
		Target: o.target.ID, TargetName: o.target.Name, TargetAfter: targetAfter * float64(max(o.target.Write.Threads, 1)) * now}
	for i, m := range o.group {
		pr.Moves = append(pr.Moves, Moved{Index: m.Index, Shard: m.Shard, From: m.From, To: m.To,
			FileSeconds: est[i].FileSeconds, WriteLoad: est[i].WriteLoad * now, Sharers: est[i].Sharers})
		switch node.ID {
		case m.From:
			pr.GroupRelief += m.WriteLoad * now
		case m.To:
			pr.GroupRelief -= m.WriteLoad * now
		}
	}
	p.addProjection(pr)
}

// addProjection keeps a planned group's projection for measure, once.
func (p *planner) addProjection(pr ReliefProjection) {
	k := pr.key()
	for _, old := range p.projections {
		if old.key() == k {
			// The same group planned again (a dry-run, or a group the move function did not issue):
			// the first projection stands.
			return
		}
	}
	p.projections = append(p.projections, pr)
}
