package allocation

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
)

// The desired placement for a hot region is searched within counts, not a clock, so the same
// snapshot always gives the same target.
const (
	// placementPeers bounds the nodes, besides the hot one, whose copies the target may rearrange:
	// the least utilized nodes not hot with an incoming recovery slot free.
	placementPeers = 6
	// placementCopies bounds the copies of each node of the region the target may move.
	placementCopies = 16
	// placementSteps bounds the relocations in a target: one cycle's default budget of moves.
	placementSteps = chainDepth + 1
	// placementBeam is how many partial placements are carried from one step to the next.
	placementBeam = 24
	// placementExpansions bounds the placements weighed (a step applied to a partial placement).
	placementExpansions = 40000
	// placementFinalists bounds the placements, best first, judged by the deciders and OpenSearch's
	// balancer as the groups they would issue.
	placementFinalists = 48
	// placementJudged bounds the groups judged in full (every decider, OpenSearch's balancer)
	// across the finalists and their runs of first steps.
	placementJudged = 64
	// placementUneven is what each (index, node) count a placement changes weighs against the
	// excess over the goal it removes, in utilization: OpenSearch's balancer undoes a placement
	// that spreads an index past its threshold, so one that keeps the counts level ranks first
	// among those that relieve about as much; each finalist is then weighed against the
	// balancer's model itself (invitesBuiltin).
	placementUneven = 0.2
	// placementSaturated weighs a peer's utilization over 1 − placementHeadroom in the excess.
	placementSaturated = 10
	placementHeadroom  = 0.02
)

// PlanPlacement is a group of moves toward the desired placement of a hot region (placement.go),
// issued when the relief search's own groups do not bring the hot node to its goal.
const PlanPlacement = "placement"

// NotePlacement says what the desired placement for a hot node is and which of its steps wait for
// a later cycle (the recovery limits or the cycle's budget held them back).
const NotePlacement = "desired-placement"

// pCopy is a copy of the hot region the target may move.
type pCopy struct {
	c    *cluster.Copy
	load float64
	home int // its node's place in the region
}

// pStep is one step of a placement: a move of copy a to node to, or, with b ≥ 0, an exchange of
// copies a and b between their nodes.
type pStep struct {
	a, b int
	to   int
}

// pState is a placement of the region's copies reached from the snapshot by steps.
type pState struct {
	at     []int // each copy's node in the region
	load   []float64
	steps  []pStep
	moves  int
	bytes  int64
	excess float64
	// np counts the NOT_PREFERRED answers the placement's relocations take (a cost, not a filter).
	np int
	// uneven counts the (index, node) pairs whose count of copies the placement changes: each is
	// a spread OpenSearch's balancer may weigh (see placementUneven).
	uneven int
	key    string
}

// region is the hot node (node 0) and its candidate peers, with the copies the target may move.
type region struct {
	nodes   []*cluster.Node
	goal    []float64
	threads []float64
	copies  []pCopy
	// verdicts[i][j] is copy i's worst answer on node j in the snapshot's view, evaluated once
	// (-1 until then).
	verdicts [][]Decision
	// in and out are the recoveries each node of the region can still start this cycle (its
	// node_concurrent_incoming and _outgoing_recoveries less those in flight and planned): a
	// placement's relocations all start in one call, so it fits them.
	in, out []int
	p       *planner
	weighed int
}

// excessOf is the region's excess over the goals, in utilization summed over its nodes; a peer
// pushed past saturation weighs placementSaturated times over: the admission rules never let a
// group leave a node it sends a hot copy to saturated.
func (r *region) excessOf(load []float64) float64 {
	e := 0.0
	for j, l := range load {
		u := l / r.threads[j]
		e += math.Max(0, u-r.goal[j])
		if j > 0 {
			e += placementSaturated * math.Max(0, u-1+placementHeadroom)
		}
	}
	return e
}

// verdict is copy i's worst decider answer on region node j, NO where the node holds its shard.
func (r *region) verdict(i, j int) Decision {
	if r.verdicts[i][j] < 0 {
		c, n := r.copies[i].c, r.nodes[j]
		d := No
		if !r.p.v.Holds(n.ID, c.ID()) && !r.p.returning(c, n.ID) {
			d = Worst(Evaluate(r.p.v, c, n))
		}
		r.verdicts[i][j] = d
	}
	return r.verdicts[i][j]
}

// hotRegion gathers the hot node's movable copies and the least utilized peers' (nil when there
// are no peers).
func (p *planner) hotRegion(node *cluster.Node, goal float64) *region {
	v := p.v
	var peers []*cluster.Node
	for _, n := range v.DataNodes() {
		if n.ID == node.ID || v.hot[n.ID] || v.excluded[n.ID] || n.Write.Threads <= 0 || !p.incomingFree(n.ID) || p.climbing[n.ID] {
			continue
		}
		peers = append(peers, n)
	}
	if len(peers) == 0 {
		return nil
	}
	slices.SortStableFunc(peers, func(a, b *cluster.Node) int {
		return cmp.Or(cmp.Compare(v.Utilization(a.ID), v.Utilization(b.ID)), cmp.Compare(a.Name, b.Name))
	})
	peers = peers[:min(len(peers), placementPeers)]
	r := &region{p: p, nodes: append([]*cluster.Node{node}, peers...)}
	aloneHot := v.Cfg.AllocationUtilization * float64(p.largestNode())
	hottest := 0.0
	hotIndex := map[string]bool{}
	for j, n := range r.nodes {
		r.threads = append(r.threads, float64(n.Write.Threads))
		if j == 0 {
			r.goal = append(r.goal, goal)
		} else {
			r.goal = append(r.goal, v.Goal(n.ID))
		}
		if j == 0 {
			for _, c := range p.copiesOn(n.ID) {
				if len(r.copies) == placementCopies {
					break
				}
				if !p.movable(c) || !c.LoadKnown || c.WriteLoad < v.Cfg.MinShardWriteLoad || c.WriteLoad >= aloneHot {
					continue
				}
				hottest = max(hottest, c.WriteLoad)
				hotIndex[c.Index] = true
				r.copies = append(r.copies, pCopy{c: c, load: c.WriteLoad, home: j})
			}
			continue
		}
		// A peer's copies of the hot node's indices first, coolest first: exchanged for a hot
		// copy they keep every node's count of the index level for OpenSearch's balancer. Then
		// the others, hottest first, to make room. None hotter than anything the hot node could
		// send: it cannot help by going there.
		var same, other []*cluster.Copy
		for _, c := range p.copiesOn(n.ID) {
			if !p.movable(c) || !c.LoadKnown || c.WriteLoad >= hottest {
				continue
			}
			if hotIndex[c.Index] {
				same = append(same, c)
			} else {
				other = append(other, c)
			}
		}
		slices.Reverse(same)
		pick := append(slices.Clone(same[:min(len(same), placementCopies/2)]), other...)
		for _, c := range pick[:min(len(pick), placementCopies)] {
			r.copies = append(r.copies, pCopy{c: c, load: c.WriteLoad, home: j})
		}
	}
	lim := v.Snap.Settings.Recoveries.Effective()
	p.countRecoveries()
	for _, n := range r.nodes {
		r.in = append(r.in, lim.NodeIncoming-p.incoming[n.ID])
		r.out = append(r.out, lim.NodeOutgoing-p.outgoing[n.ID])
	}
	r.verdicts = make([][]Decision, len(r.copies))
	for i := range r.verdicts {
		r.verdicts[i] = slices.Repeat([]Decision{-1}, len(r.nodes))
	}
	return r
}

// child applies step st to s, or returns nil when a decider says NO, the node holds the shard, or
// the step moves a copy already moved.
func (r *region) child(s *pState, st pStep) *pState {
	a := st.a
	if s.at[a] != r.copies[a].home || (st.b >= 0 && s.at[st.b] != r.copies[st.b].home) {
		return nil
	}
	from := s.at[a]
	to := st.to
	if st.b >= 0 {
		to = s.at[st.b]
	}
	da := r.verdict(a, to)
	if da == No || r.shardAt(s, a, to) {
		return nil
	}
	n := &pState{at: slices.Clone(s.at), load: slices.Clone(s.load), steps: append(slices.Clip(s.steps), st),
		moves: s.moves + 1, bytes: s.bytes + r.copies[a].c.SizeBytes, np: s.np}
	if da == NotPreferred {
		n.np++
	}
	n.at[a] = to
	n.load[from] -= r.copies[a].load
	n.load[to] += r.copies[a].load
	if b := st.b; b >= 0 {
		db := r.verdict(b, from)
		if db == No || r.shardAt(s, b, from) {
			return nil
		}
		if db == NotPreferred {
			n.np++
		}
		n.at[b] = from
		n.load[to] -= r.copies[b].load
		n.load[from] += r.copies[b].load
		n.moves++
		n.bytes += r.copies[b].c.SizeBytes
	}
	if !r.fits(n) {
		return nil
	}
	n.excess = r.excessOf(n.load)
	n.uneven = r.unevenOf(n)
	r.weighed++
	return n
}

// fits reports whether s's relocations stay within the recoveries each node can start.
func (r *region) fits(s *pState) bool {
	var in, out [placementPeers + 1]int
	for i, j := range s.at {
		if h := r.copies[i].home; j != h {
			in[j]++
			out[h]++
			if in[j] > r.in[j] || out[h] > r.out[h] {
				return false
			}
		}
	}
	return true
}

// unevenOf counts the (index, node) pairs whose count of copies s changes.
func (r *region) unevenOf(s *pState) int {
	type key struct {
		index string
		node  int
	}
	var keys [2 * placementSteps]key
	var deltas [2 * placementSteps]int
	n := 0
	add := func(k key, d int) {
		for i := range n {
			if keys[i] == k {
				deltas[i] += d
				return
			}
		}
		keys[n], deltas[n] = k, d
		n++
	}
	for i, j := range s.at {
		if c := r.copies[i]; j != c.home {
			add(key{c.c.Index, c.home}, -1)
			add(key{c.c.Index, j}, 1)
		}
	}
	uneven := 0
	for i := range n {
		if deltas[i] != 0 {
			uneven++
		}
	}
	return uneven
}

// shardAt reports whether another copy of copy i's shard in the region is on node j in s.
func (r *region) shardAt(s *pState, i, j int) bool {
	id := r.copies[i].c.ID()
	for k := range r.copies {
		if k != i && s.at[k] == j && r.copies[k].c.ID() == id {
			return true
		}
	}
	return false
}

// stateKey identifies a placement by where each moved copy ends, whatever the steps' order.
func stateKey(s *pState, r *region) string {
	var b strings.Builder
	for i, j := range s.at {
		if j != r.copies[i].home {
			fmt.Fprintf(&b, "%d>%d,", i, j)
		}
	}
	return b.String()
}

// placementBetter orders placements: the lower excess over the region's goals (zero: every node
// within its goal) with placementUneven for each index count changed, then the fewer relocations,
// the fewer NOT_PREFERRED answers taken, the fewer bytes, then the key.
func placementBetter(a, b *pState) int {
	ca, cb := a.excess+placementUneven*float64(a.uneven), b.excess+placementUneven*float64(b.uneven)
	if math.Abs(ca-cb) > excessEpsilon {
		return cmp.Compare(ca, cb)
	}
	return cmp.Or(cmp.Compare(a.moves, b.moves), cmp.Compare(a.np, b.np), cmp.Compare(a.bytes, b.bytes), cmp.Compare(a.key, b.key))
}

// desiredPlacements searches the region's placements by beam search over moves and count-neutral
// exchanges, each copy relocated at most once and at most placementSteps relocations, and returns
// those that lower the hot node's load and the region's excess, best first (placementBetter).
func (r *region) desiredPlacements() (finalists []*pState, start *pState) {
	start = &pState{at: make([]int, len(r.copies)), load: make([]float64, len(r.nodes))}
	for i, c := range r.copies {
		start.at[i] = c.home
	}
	for j, n := range r.nodes {
		start.load[j] = r.p.v.WriteLoad(n.ID)
	}
	start.excess = r.excessOf(start.load)
	seen := map[string]bool{"": true}
	var found []*pState
	beam := []*pState{start}
	for depth := 0; depth < placementSteps && len(beam) > 0 && r.weighed < placementExpansions; depth++ {
		var next []*pState
		for _, s := range beam {
			for _, st := range r.steps(s) {
				if r.weighed >= placementExpansions {
					break
				}
				if s.moves+1+boolInt(st.b >= 0) > placementSteps {
					continue
				}
				c := r.child(s, st)
				if c == nil {
					continue
				}
				c.key = stateKey(c, r)
				if seen[c.key] {
					continue
				}
				seen[c.key] = true
				next = append(next, c)
				if c.excess < start.excess-excessEpsilon && start.load[0]-c.load[0] >= r.p.v.Cfg.MinShardWriteLoad {
					found = append(found, c)
				}
			}
		}
		slices.SortFunc(next, placementBetter)
		beam = next[:min(len(next), placementBeam)]
	}
	slices.SortFunc(found, placementBetter)
	return found[:min(len(found), placementFinalists)], start
}

// steps lists the steps from s: a copy off a node over its goal to any node of the region, a
// copy between peers (to make room), and an exchange of a copy on a node over its goal with a
// cooler one of another node.
func (r *region) steps(s *pState) []pStep {
	var out []pStep
	over := func(j int) bool { return s.load[j]/r.threads[j] > r.goal[j]+excessEpsilon }
	for a := range r.copies {
		if s.at[a] != r.copies[a].home {
			continue
		}
		from := s.at[a]
		for to := range r.nodes {
			// Nothing goes to the hot node alone: a copy comes back to it only in an exchange.
			if to == from || to == 0 {
				continue
			}
			out = append(out, pStep{a: a, b: -1, to: to})
		}
		if !over(from) {
			continue
		}
		for b := range r.copies {
			if s.at[b] != r.copies[b].home || s.at[b] == from || r.copies[b].load >= r.copies[a].load {
				continue
			}
			out = append(out, pStep{a: a, b: b})
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// placementMoves are the relocations of the first k steps of s, in the order they are issued:
// copies between peers first (they make room), then the copies leaving the hot node, then those
// coming back to it. returnsFirst puts those coming back before the hot node's, for a node at a
// shard-count limit.
func (r *region) placementMoves(s *pState, k int, returnsFirst bool) []Move {
	var room, off, back []Move
	for _, st := range s.steps[:k] {
		pairs := [][2]int{{st.a, st.to}}
		if st.b >= 0 {
			pairs = [][2]int{{st.a, r.copies[st.b].home}, {st.b, r.copies[st.a].home}}
		}
		for _, pr := range pairs {
			pc := r.copies[pr[0]]
			from, to := r.nodes[pc.home], r.nodes[pr[1]]
			switch {
			case pc.home == 0:
				off = append(off, newMove(pc.c, from, to, pc.load, PhaseWriteHotspot))
			case pr[1] == 0:
				back = append(back, newMove(pc.c, from, to, pc.load, PhaseSwapReturn))
			default:
				room = append(room, newMove(pc.c, from, to, pc.load, PhasePlacement))
			}
		}
	}
	if returnsFirst {
		return append(append(room, back...), off...)
	}
	return append(append(room, off...), back...)
}

// placement is the hot node's relief toward its desired placement: the region's placements best
// first, and for each the longest run of its first steps that fits the cycle's moves, the recovery
// limits, the deciders (judged as one group) and OpenSearch's balancer. It returns nil unless the
// group lowers the hot node's excess and leaves every node it touches within its goal, and, where
// the relief search found a group (have), brings the hot node to its goal where that group did not.
func (p *planner) placement(node *cluster.Node, goal float64, have *option) *option {
	if have != nil && have.sufficient(goal) {
		return nil
	}
	if p.coolingOff(node.ID, PlanPlacement) != nil {
		return nil
	}
	if p.relocatingOff(node.ID) || p.reliefUnmeasured(node.ID) {
		// Relief already left the node or is leaving it: a further copy off it would share its
		// one recovery limiter with that relocation, and once it has landed the samples after it
		// show what is left to relieve (measure.go).
		return nil
	}
	budget := placementSteps - len(p.plan.Moves)
	if budget <= 0 {
		return nil
	}
	r := p.hotRegion(node, goal)
	if r == nil || len(r.copies) == 0 {
		return nil
	}
	finalists, start := r.desiredPlacements()
	judged := 0
	for _, f := range finalists {
		for k := len(f.steps); k >= 1; k-- {
			for _, returnsFirst := range []bool{false, true} {
				group := r.placementMoves(f, k, returnsFirst)
				if len(group) > budget || !p.withinRecoveries(group) {
					continue
				}
				if judged++; judged > placementJudged {
					return nil
				}
				o := p.placementOption(r, f, k, group, goal, start)
				if o == nil {
					continue
				}
				if !p.withinGoals(group) || have != nil && !o.sufficient(goal) {
					// A placement step that leaves a node it touches over its goal only moves the
					// excess, and the relief search's own group stands unless the placement brings
					// the hot node to its goal.
					continue
				}
				if o.partial {
					p.note(NotePlacement, node.Name, "", nil, "%s: %s", node.Name, o.placement)
				}
				return o
			}
		}
	}
	return nil
}

// reliefUnmeasured reports whether a relief group planned for node has started relocating and its
// effect is not measured yet.
func (p *planner) reliefUnmeasured(node string) bool {
	for _, pr := range p.projections {
		if pr.Node != node {
			continue
		}
		for _, m := range pr.Moves {
			if !m.Underway.IsZero() || !m.Landed.IsZero() {
				return true
			}
		}
	}
	return false
}

// withinGoals reports whether every node group touches ends within its goal.
func (p *planner) withinGoals(group []Move) bool {
	v := p.v
	delta := map[string]float64{}
	for _, m := range group {
		delta[m.From] -= m.WriteLoad
		delta[m.To] += m.WriteLoad
	}
	for n, d := range delta {
		if v.utilOf(n, v.WriteLoad(n)+d) > v.Goal(n)+1e-9 {
			return false
		}
	}
	return true
}

// placementOption judges the first k steps of placement f as one group and returns it as an
// option with its reasons, or nil when a move is refused, OpenSearch's balancer would undo it, or
// it lowers the hot node's excess by too little.
func (p *planner) placementOption(r *region, f *pState, k int, group []Move, goal float64, start *pState) *option {
	v := p.v
	src := r.nodes[0]
	judged, ok := admitGroup(v, group, false)
	if !ok {
		return nil
	}
	if invites, _, _ := v.invitesBuiltin(group); invites {
		return nil
	}
	delta, off := 0.0, 0.0
	for _, m := range group {
		if m.From == src.ID {
			delta -= m.WriteLoad
			off = max(off, m.WriteLoad)
		}
		if m.To == src.ID {
			delta += m.WriteLoad
		}
	}
	if off == 0 || -delta < p.minRelief(off) {
		return nil
	}
	o := &option{group: group, judged: judged, kind: PlanPlacement}
	hi := o.hot()
	o.target = v.Node(group[hi].To)
	o.srcAfter = v.utilOf(src.ID, v.WriteLoad(src.ID)+delta)
	pr := v.Project(group, hi)
	o.drop = pr.ExcessBefore - pr.ExcessAfter
	if o.drop <= excessEpsilon {
		return nil
	}
	names := make([]string, len(r.nodes))
	for j, n := range r.nodes {
		names[j] = n.Name
	}
	var ends []string
	for j, n := range r.nodes {
		if f.load[j] != start.load[j] {
			ends = append(ends, fmt.Sprintf("%s %.0f%%→%.0f%% (goal %.0f%%)", n.Name, start.load[j]/r.threads[j]*100, f.load[j]/r.threads[j]*100, r.goal[j]*100))
		}
	}
	reach := "every node of the region within its goal"
	if f.excess > excessEpsilon {
		reach = fmt.Sprintf("the region's excess over the goals %.3f → %.3f, the least found", start.excess, f.excess)
	}
	steps := fmt.Sprintf("all %d steps", len(f.steps))
	if k < len(f.steps) {
		steps = fmt.Sprintf("its first %d of %d steps (the rest wait for recovery slots or the cycle's moves and are planned again next cycle)", k, len(f.steps))
	}
	o.placement = fmt.Sprintf("desired placement of the hot region [%s]: %d relocations, %.1f GiB, leaving %s (%s), best of %d placements weighed (beam %d, up to %d relocations), %d NOT_PREFERRED answers weighed; issued: %s",
		strings.Join(names, " "), f.moves, float64(f.bytes)/(1<<30), strings.Join(ends, ", "), reach, r.weighed, placementBeam, placementSteps, f.np, steps)
	o.partial = k < len(f.steps)
	return o
}
