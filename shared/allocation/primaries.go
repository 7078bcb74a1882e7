package allocation

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

const (
	// primarySpread is the least gap in WRITE utilization between two nodes that primary balancing
	// closes, and the least a group must close it by twice over (it moves a whole primary): under
	// it, a relocation's bytes buy too little. A tenth of a node's threads is the same margin the
	// hotspot rules leave between the allocation threshold (90 %) and saturation.
	primarySpread = 0.1
	// primaryGroups bounds the groups primary balancing judges in one cycle, so a cluster with many
	// segment-replication indices costs a bounded search, the same for the same snapshot.
	primaryGroups = 256
)

// primaryOption is one group primary balancing may issue: a primary of a segment-replication index
// from a heavy node to a light one, alone or with a cooler copy sent back in the same call.
type primaryOption struct {
	group                  []Move
	heavyAfter, lightAfter float64 // utilizations after the group
	gapBefore              float64
}

func (o *primaryOption) gapAfter() float64 { return math.Abs(o.heavyAfter - o.lightAfter) }

// betterPrimary prefers the group that leaves the pair closest, then the fewer relocations, then
// the fewer bytes.
func betterPrimary(a, b *primaryOption) bool {
	if b == nil {
		return true
	}
	if d := a.gapAfter() - b.gapAfter(); math.Abs(d) > 1e-9 {
		return d < 0
	}
	if len(a.group) != len(b.group) {
		return len(a.group) < len(b.group)
	}
	return groupBytes(a.group) < groupBytes(b.group)
}

func groupBytes(g []Move) int64 {
	var n int64
	for _, m := range g {
		n += m.SizeBytes
	}
	return n
}

// primaryBalance keeps the primaries of segment-replication indices spread by load, not only by
// count (OpenSearch issue 6481: one node with 549 primaries, another with none). Under segment
// replication only a primary indexes, and each replica bears cluster.SegmentReplicaShare of its
// shard's load, so nodes with equal shard counts can differ by all of their indexing, and a rise
// in write load saturates the primary-heavy node alone. OpenSearch's balancer counts copies, so it
// sees nothing to fix.
//
// When nothing is hot and OpenSearch's balancer has no move of its own left to make, the most
// utilized node with no recovery in flight that holds such a primary sends one to a node at least
// primarySpread less utilized, also with no recovery in flight, that holds no copy of its shard:
// alone when OpenSearch's balancer would leave the counts be, else swapped count-neutrally
// with a cooler copy of another shard (a replica of the same index first) sent back in the same
// call. The group must close the pair's gap by at least primarySpread/2, leave the heavier node
// the cooler for it, and pass every decider (AdmitGroup, as the move function re-checks it). A
// reroute move of a primary relocates it and it stays primary, so the primary's whole load goes
// with it and a replica's share comes back. One group a cycle, which the next samples measure
// before the next. It reports whether it planned one.
func (p *planner) primaryBalance() bool {
	v := p.v
	if v.Snap.IntervalSeconds <= 0 || !p.hasSegment() {
		return false
	}
	busy := p.recoveriesInFlight()
	if len(busy) > 0 && v.builtinUnsettled() != "" {
		// Not urgent: while OpenSearch's balancer still has moves of its own to make (an index
		// spread past its threshold, its relocations in flight counted as landed), it would pick
		// up the copies this moves (the simulator counts those as undone); the next sample plans
		// it.
		return false
	}
	var nodes []*cluster.Node
	// waiting: a node left out while its last relocation settles or a recovery copies into or
	// out of it, so no note says nothing fits.
	waiting := false
	for _, n := range v.DataNodes() {
		if v.excluded[n.ID] || n.Write.Threads <= 0 {
			continue
		}
		if p.settling[n.ID] || busy[n.ID] > 0 {
			// A recovery on the node shares its recovery rate, and a primary written as it
			// relocates replays what it indexed while its files copied: the slower the copy, the
			// longer the replay. Once the balancer has nothing left to place, the quiet nodes go
			// meanwhile: a cluster whose balancer relocates for minutes would otherwise leave its
			// primaries crowded until a load step finds them there (segment-replication seed 74
			// of 200: OpenSearch relocated two copies for the five minutes before the step).
			waiting = true
			continue
		}
		nodes = append(nodes, n)
	}
	slices.SortStableFunc(nodes, func(a, b *cluster.Node) int {
		return cmp.Or(cmp.Compare(v.Utilization(b.ID), v.Utilization(a.ID)), cmp.Compare(a.Name, b.Name))
	})
	judged := 0
	var blocked *cluster.Node // the most utilized node with primaries and a gap, but no group
	for hi, heavy := range nodes {
		primaries := p.segmentPrimaries(heavy.ID)
		if len(primaries) == 0 || !p.outgoingFree(heavy.ID) {
			continue
		}
		if m := p.coolingOff(heavy.ID, PlanPrimaryBalance); m != nil {
			// A primary-balance group measured no relief here: not again until ReliefCoolingOff
			// passes or the node's load changes.
			p.measureNote(NoteKindCoolingOff, *m, "%s: no %s is planned until %s or its load changes by %.0f%% of its threads (now %.2f WRITE threads): %s",
				heavy.Name, PlanPrimaryBalance, m.MeasuredAt.Add(v.Cfg.ReliefCoolingOff.Std()).UTC().Format(time.TimeOnly), returnLoadChange*100, p.measured[heavy.ID], m)
			continue
		}
		var best *primaryOption
		for li := len(nodes) - 1; li > hi && judged < primaryGroups; li-- {
			light := nodes[li]
			gap := v.Utilization(heavy.ID) - v.Utilization(light.ID)
			if gap < primarySpread {
				break
			}
			if !p.incomingFree(light.ID) {
				continue
			}
			// The heavy node must hold more primary load than the light one by the primary moved:
			// the group corrects where primaries are, and does not trade other load for it.
			lightPrimaries := p.primaryLoad(light.ID)
			for _, c := range primaries {
				if judged >= primaryGroups {
					break
				}
				if p.primaryLoad(heavy.ID)-lightPrimaries < c.WriteLoad || v.Holds(light.ID, c.ID()) || p.returning(c, light.ID) {
					continue
				}
				for _, o := range p.primaryGroups(c, heavy, light, gap, &judged) {
					if betterPrimary(o, best) {
						best = o
					}
				}
			}
		}
		if best != nil {
			p.addPrimaryGroup(heavy, best)
			return true
		}
		if blocked == nil && p.primaryLoad(heavy.ID) > 0 && v.Utilization(heavy.ID)-v.Utilization(nodes[len(nodes)-1].ID) >= primarySpread {
			blocked = heavy
		}
	}
	if blocked != nil && !waiting {
		lightest := nodes[len(nodes)-1]
		p.note(NotePrimaryImbalance, blocked.Name, "", nil,
			"%s is at %.0f%% WRITE with %.2f threads of segment-replication primaries, %.0f points over %s, but no primary move or count-neutral swap closes the gap by %.0f points within the deciders and OpenSearch's balancer (%d groups judged)",
			blocked.Name, v.Utilization(blocked.ID)*100, p.primaryLoad(blocked.ID), (v.Utilization(blocked.ID)-v.Utilization(lightest.ID))*100,
			lightest.Name, primarySpread/2*100, judged)
	}
	return false
}

// hasSegment reports whether any index shardwise may move uses segment replication.
func (p *planner) hasSegment() bool {
	for i := range p.v.Snap.Indices {
		if ix := &p.v.Snap.Indices[i]; ix.Segment() && !ix.System() {
			return true
		}
	}
	return false
}

// segmentPrimaries lists the movable primaries with a rate of segment-replication indices on a node,
// hottest first, at most roomCandidates of them.
func (p *planner) segmentPrimaries(node string) []*cluster.Copy {
	var out []*cluster.Copy
	for _, c := range p.copiesOn(node) {
		if len(out) == roomCandidates {
			break
		}
		ix := p.v.Index(c.Index)
		if c.Primary && ix != nil && ix.Segment() && !ix.System() && p.movable(c) && c.LoadKnown && c.WriteLoad >= p.v.Cfg.MinShardWriteLoad {
			out = append(out, c)
		}
	}
	return out
}

// primaryLoad is the WRITE load of the segment-replication primaries a node holds in the snapshot.
func (p *planner) primaryLoad(node string) float64 {
	sum := 0.0
	for _, c := range p.copiesOn(node) {
		if ix := p.v.Index(c.Index); c.Primary && ix != nil && ix.Segment() {
			sum += p.v.CopyLoad(c)
		}
	}
	return sum
}

// primaryGroups returns the admitted groups that send primary c from heavy to light: alone, when
// OpenSearch's balancer would leave it, and swapped with each of the first roomCandidates cooler
// copies on light that heavy may take.
func (p *planner) primaryGroups(c *cluster.Copy, heavy, light *cluster.Node, gap float64, judged *int) []*primaryOption {
	v := p.v
	out := newMove(c, heavy, light, c.WriteLoad, PhasePrimaryBalance)
	var opts []*primaryOption
	try := func(group []Move) {
		*judged++
		if invites, _, _ := v.invitesBuiltin(group); invites {
			return
		}
		back := 0.0
		if len(group) > 1 {
			back = group[1].WriteLoad
		}
		o := &primaryOption{group: group, gapBefore: gap,
			heavyAfter: v.utilOf(heavy.ID, v.WriteLoad(heavy.ID)-c.WriteLoad+back),
			lightAfter: v.utilOf(light.ID, v.WriteLoad(light.ID)+c.WriteLoad-back)}
		if o.lightAfter > o.heavyAfter || o.gapAfter() > gap-primarySpread/2 {
			return
		}
		js, ok := admitGroup(v, group, false)
		if !ok {
			return
		}
		for i := range group {
			group[i].Verdicts = js[i].Verdicts
			group[i].Reason = js[i].Admission.Rule + ": " + js[i].Admission.Why()
		}
		opts = append(opts, o)
	}
	try([]Move{out})
	var returns []*cluster.Copy
	for _, r := range p.copiesOn(light.ID) {
		if p.movable(r) && r.LoadKnown && r.WriteLoad < c.WriteLoad && r.ID() != c.ID() && !v.Holds(heavy.ID, r.ID()) && !p.returning(r, heavy.ID) {
			returns = append(returns, r)
		}
	}
	// A replica of the same index first (the index's counts stay level too), then a copy of an
	// index OpenSearch's balancer would bring to the heavy node anyway (View.bringsTo), then the
	// coolest, then the smallest.
	brings := v.bringsTo(heavy.ID, returns)
	slices.SortStableFunc(returns, func(a, b *cluster.Copy) int {
		sa, sb := a.Index == c.Index && !a.Primary, b.Index == c.Index && !b.Primary
		if sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		if ba, bb := brings[a.Index], brings[b.Index]; ba != bb {
			if ba {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.WriteLoad, b.WriteLoad), cmp.Compare(a.SizeBytes, b.SizeBytes))
	})
	for _, r := range returns[:min(len(returns), roomCandidates)] {
		try([]Move{out, newMove(r, light, heavy, r.WriteLoad, PhaseSwapReturn)})
	}
	return opts
}

// addPrimaryGroup plans a primary-balance group with its reasons.
func (p *planner) addPrimaryGroup(heavy *cluster.Node, o *primaryOption) {
	v := p.v
	m := o.group[0]
	light := v.Node(m.To)
	why := fmt.Sprintf("primary balance (segment replication: only primaries index, a replica bears %.0f%% of its shard's load): %s is at %.0f%% WRITE with %.2f threads of primaries, %s at %.0f%% with %.2f; moving primary %s[%d] (%.2f threads) %s→%s",
		cluster.SegmentReplicaShare*100, heavy.Name, v.Utilization(heavy.ID)*100, p.primaryLoad(heavy.ID), light.Name, v.Utilization(light.ID)*100, p.primaryLoad(light.ID),
		m.Index, m.Shard, m.WriteLoad, m.FromName, m.ToName)
	if len(o.group) > 1 {
		b := o.group[1]
		kind := "replica"
		if b.Primary {
			kind = "primary"
		}
		why += fmt.Sprintf(", swapped count-neutrally with %s %s[%d] (%.2f threads) %s→%s", kind, b.Index, b.Shard, b.WriteLoad, b.FromName, b.ToName)
	}
	why += fmt.Sprintf(", leaves %s at %.0f%% and %s at %.0f%% (gap %.0f → %.0f points)",
		heavy.Name, o.heavyAfter*100, light.Name, o.lightAfter*100, o.gapBefore*100, o.gapAfter()*100)
	if len(o.group) > 1 {
		p.swaps++
	}
	// Measured like a relief group (measure.go): the heavy node's WRITE load must fall by what the
	// group carries off it, or the kind cools off there.
	pr := ReliefProjection{Node: heavy.ID, NodeName: heavy.Name, Kind: PlanPrimaryBalance, At: v.Snap.At, Threads: heavy.Write.Threads,
		SourceBefore: p.measured[heavy.ID], Target: light.ID, TargetName: light.Name, TargetAfter: o.lightAfter * float64(light.Write.Threads)}
	for _, g := range o.group {
		pr.Moves = append(pr.Moves, Moved{Index: g.Index, Shard: g.Shard, From: g.From, To: g.To})
		if g.From == heavy.ID {
			pr.GroupRelief += g.WriteLoad
		} else {
			pr.GroupRelief -= g.WriteLoad
		}
	}
	pr.SourceAfter = pr.SourceBefore - pr.GroupRelief
	p.addProjection(pr)
	for i, g := range o.group {
		if len(o.group) > 1 {
			g.SwapGroup = p.swaps
		}
		if i == 0 {
			g.Reason = why + "; rule " + g.Reason
		} else {
			g.Reason = fmt.Sprintf("count-neutral return for %s[%d] (primary balance): %s", m.Index, m.Shard, g.Reason)
		}
		p.add(g)
	}
}

// clearWay is the step for a hot node none of whose groups fits, when a primary of a
// segment-replication index on it would fit a cooler node but for that node holding the shard's
// replica (the same-shard rule, NO): the replica, a tenth of the primary's load, moves this cycle
// to a node every decider accepts, and the next cycle's search finds the primary's way clear. Two
// copies of a shard are never in flight at once, so the two moves cannot share a call. The target
// must end within its goal with the primary in place of its replica. It returns reliefPlanned
// when it planned such a move, reliefWaiting when the one it found does not fit what the groups
// planned before it leave of the move function's budgets (noted: the move function would refuse
// it whole), and reliefNone otherwise.
func (p *planner) clearWay(node *cluster.Node, order []Candidate) relief {
	v := p.v
	for i, cand := range order {
		if i == roomCandidates {
			break
		}
		c := cand.Copy
		if !c.Primary || !v.segment(c.Index) {
			continue
		}
		for _, t := range v.DataNodes() {
			if t.ID == node.ID || v.hot[t.ID] || v.excluded[t.ID] || t.Write.Threads <= 0 || !p.incomingFree(t.ID) || !p.outgoingFree(t.ID) || p.isHeld(t.ID) {
				continue
			}
			r := v.copyOn(c.Index, c.Shard, t.ID)
			if r == nil || !p.movable(r) || !r.LoadKnown {
				continue
			}
			after := v.utilOf(t.ID, v.WriteLoad(t.ID)-r.WriteLoad+cand.Load)
			if after > v.Goal(t.ID) || after >= v.Utilization(node.ID) {
				continue
			}
			// But for the replica, the primary may go there: same-shard is the only NO, and no
			// other decider says more than a NOT_PREFERRED the group rules weigh.
			blocked := false
			for _, vd := range Evaluate(v, c, t) {
				if vd.Decision == No && vd.Decider != DeciderSameShard || vd.Decision == NotPreferred && !weighable(&vd) {
					blocked = true
					break
				}
			}
			if blocked {
				continue
			}
			u, vs, ok, _ := p.bestTarget(r, Yes, true)
			if !ok || u.ID == node.ID || p.returning(r, u.ID) {
				// Not back to a node the replica left within the hour while its load is as it
				// was (random segment-replication seed 91: seg-2[1] back to node-8 after 30 min).
				continue
			}
			m := newMove(r, t, u, r.WriteLoad, PhaseClearWay)
			m.Verdicts = vs
			group := []Move{m}
			if invites, _, _ := v.invitesBuiltin(group); invites {
				// A copy of u goes to t in the same call so counts stay level, when t still takes
				// the primary with it.
				back, ok := p.clearWayReturn(m, cand.Load, u, t, node)
				if !ok {
					continue
				}
				group = append(group, back)
			}
			js, ok := admitGroup(v, group, false)
			if !ok {
				continue
			}
			if !p.budgetFits(len(group)) || p.spentNode(group) != "" {
				p.note(NoteThrottled, node.Name, "", nil, "%s: the replica of primary %s[%d] on %s would clear its way, but the groups planned before it use up the cycle's move budget (max_moves_per_cycle %d, %d planned; max_moves_per_node %d); it is looked at again next cycle",
					node.Name, c.Index, c.Shard, t.Name, v.Cfg.movesPerCycle, len(p.plan.Moves), v.Cfg.movesPerNode)
				return reliefWaiting
			}
			m.Reason = fmt.Sprintf("clearing the way for primary %s[%d] (%.2f WRITE threads, segment replication) off hot %s (%.0f%%): no move, swap or chain fits, and %s, at %.0f%%, would take it to %.0f%% (goal %.0f%%) but holds its replica (%.2f threads); the replica moves to %s first, the primary follows once it has left; rule %s: %s",
				c.Index, c.Shard, cand.Load, node.Name, v.Utilization(node.ID)*100, t.Name, v.Utilization(t.ID)*100, after*100, v.Goal(t.ID)*100,
				r.WriteLoad, u.Name, js[0].Admission.Rule, js[0].Admission.Why())
			if len(group) > 1 {
				b := group[1]
				p.swaps++
				m.SwapGroup, b.SwapGroup = p.swaps, p.swaps
				m.Reason += fmt.Sprintf("; swapped with %s[%d] (%.2f threads) %s→%s so shard counts stay level", b.Index, b.Shard, b.WriteLoad, b.FromName, b.ToName)
				b.Reason = fmt.Sprintf("count-neutral return for %s[%d] (clearing the way): %s: %s", m.Index, m.Shard, js[1].Admission.Rule, js[1].Admission.Why())
				p.add(m)
				p.add(b)
				return reliefPlanned
			}
			p.add(m)
			return reliefPlanned
		}
	}
	return reliefNone
}

// clearWayReturn finds a copy on u to send to t with the replica m clearing the way, so shard counts
// stay level for OpenSearch's balancer: a copy of m's index first, then the coolest; t must still
// take the primary (primaryLoad) within its goal with it, and the pair must leave OpenSearch's
// balancer content.
func (p *planner) clearWayReturn(m Move, primaryLoad float64, u, t, hot *cluster.Node) (Move, bool) {
	v := p.v
	var cands []*cluster.Copy
	for _, b := range p.copiesOn(u.ID) {
		if !p.movable(b) || !b.LoadKnown || b.ID() == (cluster.ShardID{Index: m.Index, Shard: m.Shard}) || v.Holds(t.ID, b.ID()) || p.returning(b, t.ID) {
			continue
		}
		if v.utilOf(t.ID, v.WriteLoad(t.ID)-m.WriteLoad+primaryLoad+b.WriteLoad) > v.Goal(t.ID) {
			continue
		}
		cands = append(cands, b)
	}
	slices.SortStableFunc(cands, func(a, b *cluster.Copy) int {
		sa, sb := a.Index == m.Index, b.Index == m.Index
		if sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.WriteLoad, b.WriteLoad), cmp.Compare(a.SizeBytes, b.SizeBytes))
	})
	for _, b := range cands[:min(len(cands), roomCandidates)] {
		vs := Evaluate(v, b, t)
		if Worst(vs) != Yes {
			continue
		}
		back := newMove(b, u, t, b.WriteLoad, PhaseClearWay)
		back.Verdicts = vs
		if invites, _, _ := v.invitesBuiltin([]Move{m, back}); !invites {
			return back, true
		}
	}
	return Move{}, false
}
