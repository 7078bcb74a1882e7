package allocation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
)

// The desired placement's search is bounded by counts, as the relief search is, so the same snapshot
// always gives the same placement.
const (
	// placementSteps bounds the groups of one desired placement.
	placementSteps = 6
	// placementEvaluations bounds its decider evaluations and group admissions, and apart its
	// weighings against OpenSearch's balancer (searchWeighings).
	placementEvaluations = 8192
	// placementCopies bounds the hot node's copies tried for each step, hottest first.
	placementCopies = 16
	// placementReturns bounds the copies of a target tried as a return or passed on, per target.
	placementReturns = 8
	// placementOnward bounds the nodes a passed-on copy is tried on.
	placementOnward = 4
	// placementPace is the relief time, in seconds, at which a step's excess lowered counts half:
	// of two steps, the one that lowers the excess more per relief time leads.
	placementPace = 1800.0
)

// placement is the desired placement for a hot node the relief search found no group for: the
// groups, in order, that a bounded local search over the whole cluster's nodes found to lower the
// excess over the goal, each judged on the view after the ones before it, down to the node's goal
// or as far as the bounds reach. Each group is a lone move, a swap (a copy of the target back to
// the hot node) or a pass-on (the target passes a copy of the moved copy's index on to a third
// node, so that no node's count of the index rises past OpenSearch's balance threshold). Every
// group meets the deciders as the move function re-checks them (admitGroup: NO is absolute, a
// NOT_PREFERRED a cost the group's projection weighs), and leaves every index within OpenSearch's
// balance threshold, so its balancer has nothing to undo.
type placement struct {
	steps        []*option
	excessBefore float64
	excessAfter  float64
	utilBefore   float64
	utilAfter    float64
	bounds       SearchBounds
}

func (pl placement) String() string {
	return fmt.Sprintf("a desired placement of %d groups found by local search over moves, swaps and pass-ons (%d of %d decider evaluations) takes it from %.0f%% to %.0f%% and the excess over the goal of the nodes it touches from %.3f to %.3f",
		len(pl.steps), pl.bounds.Evaluations, pl.bounds.MaxEvaluations, pl.utilBefore*100, pl.utilAfter*100, pl.excessBefore, pl.excessAfter)
}

// place searches the desired placement for the search's hot node: at each step, of every group
// that moves one of its copies off and lowers the excess, the one that lowers it most per relief
// time (placementPace), until the node is within goal, no group lowers the excess, or the bounds
// are spent. A step short of the goal is kept: many small copies relieve a node only together.
// The view is left as it was.
func (s *search) place(goal float64) placement {
	p, v := s.p, s.p.v
	src := s.src.ID
	pl := placement{utilBefore: v.Utilization(src)}
	cp := v.checkpoint()
	defer v.rollback(cp)
	used := map[cluster.ShardID]bool{}
	aloneHot := v.Cfg.AllocationUtilization * float64(p.largestNode())
	for len(pl.steps) < placementSteps && !s.spent() && v.Utilization(src) > goal+1e-9 {
		var best *option
		bestScore := 0.0
		tried := 0
		for _, c := range p.copiesOn(src) {
			if tried >= placementCopies || s.spent() {
				break
			}
			if !p.movable(c) || used[c.ID()] || !c.LoadKnown || c.WriteLoad < v.Cfg.MinShardWriteLoad || c.WriteLoad >= aloneHot ||
				v.copyOn(c.Index, c.Shard, src) == nil {
				continue
			}
			tried++
			for rank, t := range s.targets(c) {
				if s.spent() {
					break
				}
				vs := s.evaluate(c, t)
				limited := countLimitedOnly(vs)
				if !allWeighable(vs) && !limited {
					continue
				}
				for _, g := range s.placementGroups(s.move(c, c.WriteLoad, t, vs), t, limited, used) {
					floor := -1.0
					if best != nil {
						floor = bestScore
					}
					if o, score := s.judgePlaced(g, t, rank, floor); o != nil {
						best, bestScore = o, score
					}
				}
			}
		}
		if best == nil {
			break
		}
		pr := v.Project(best.group, best.hot())
		pl.excessBefore += pr.ExcessBefore
		pl.excessAfter += pr.ExcessAfter
		for _, m := range best.group {
			v.apply(m)
			used[cluster.ShardID{Index: m.Index, Shard: m.Shard}] = true
		}
		pl.steps = append(pl.steps, best)
	}
	pl.utilAfter = v.Utilization(src)
	pl.bounds = s.bounds
	return pl
}

// placementGroups lists the groups that move m's copy to t: alone (unless t is at a shard-count
// limit, which a copy leaving it first lifts), swapped with a cooler copy of t (same index first,
// then the lightest), or with a copy of the same index that t passes on to a third node.
func (s *search) placementGroups(m Move, t *cluster.Node, limited bool, used map[cluster.ShardID]bool) [][]Move {
	p, v := s.p, s.p.v
	src := s.src
	var groups [][]Move
	if !limited {
		groups = append(groups, []Move{m})
	}
	pair := func(first, second Move) []Move {
		if limited {
			return []Move{second, first}
		}
		return []Move{first, second}
	}
	var room []*cluster.Copy
	for _, r := range p.copiesOn(t.ID) {
		if !p.movable(r) || used[r.ID()] || !r.LoadKnown || r.WriteLoad >= m.WriteLoad || r.Index == m.Index && r.Shard == m.Shard ||
			v.copyOn(r.Index, r.Shard, t.ID) == nil {
			continue
		}
		room = append(room, r)
	}
	// Same-index copies first: they keep the index's counts level; then those of an index
	// OpenSearch's balancer would bring to the source anyway (View.bringsTo); then the lightest.
	brings := v.bringsTo(src.ID, room)
	slices.SortStableFunc(room, func(a, b *cluster.Copy) int {
		if sa, sb := a.Index == m.Index, b.Index == m.Index; sa != sb {
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
		switch {
		case a.WriteLoad < b.WriteLoad:
			return -1
		case a.WriteLoad > b.WriteLoad:
			return 1
		}
		return 0
	})
	room = room[:min(len(room), placementReturns)]
	for _, r := range room {
		if !v.Holds(src.ID, r.ID()) && !p.returning(r, src.ID) {
			groups = append(groups, pair(m, newMove(r, t, src, r.WriteLoad, PhaseSwapReturn)))
		}
		if r.Index != m.Index {
			continue
		}
		for i, u := range s.onward(r, t) {
			if i == placementOnward {
				break
			}
			on := newMove(r, t, u, r.WriteLoad, PhaseMakeRoom)
			groups = append(groups, pair(m, on))
			// A rotation: u sends a cooler copy of the index on to the hot node, so that no
			// node's count of it changes.
			for _, q := range s.rotations(m, u, used) {
				back := newMove(q, u, src, q.WriteLoad, PhaseSwapReturn)
				if limited {
					groups = append(groups, []Move{on, back, m})
				} else {
					groups = append(groups, []Move{m, on, back})
				}
			}
		}
	}
	return groups
}

// rotations lists the copies of m's index on u that may close a rotation to the hot node: cooler than
// m's copy, of a shard the hot node holds no copy of, and none that left it within the hour.
func (s *search) rotations(m Move, u *cluster.Node, used map[cluster.ShardID]bool) []*cluster.Copy {
	p, v := s.p, s.p.v
	var out []*cluster.Copy
	for _, q := range p.copiesOn(u.ID) {
		if len(out) == placementReturns {
			break
		}
		if q.Index != m.Index || q.Shard == m.Shard || !p.movable(q) || used[q.ID()] || !q.LoadKnown || q.WriteLoad >= m.WriteLoad ||
			v.copyOn(q.Index, q.Shard, u.ID) == nil || v.Holds(s.src.ID, q.ID()) || p.returning(q, s.src.ID) {
			continue
		}
		out = append(out, q)
	}
	return out
}

// onward lists the nodes a copy passed on by target t may go to, least utilized first: not the hot
// node nor t, none hot, excluded, holding the copy's shard, held by shardwise's own moves or without
// an incoming recovery slot, and none the copy left within the hour.
func (s *search) onward(r *cluster.Copy, t *cluster.Node) []*cluster.Node {
	p, v := s.p, s.p.v
	var out []*cluster.Node
	for _, u := range v.DataNodes() {
		if u.ID == s.src.ID || u.ID == t.ID || v.hot[u.ID] || v.excluded[u.ID] || v.Holds(u.ID, r.ID()) || p.isHeld(u.ID) ||
			!p.incomingFree(u.ID) || p.returning(r, u.ID) {
			continue
		}
		out = append(out, u)
	}
	slices.SortStableFunc(out, func(a, b *cluster.Node) int {
		ua, ub := v.Utilization(a.ID), v.Utilization(b.ID)
		switch {
		case ua < ub:
			return -1
		case ua > ub:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// judgePlaced judges one group of the desired placement on the view and returns it with its score,
// the excess it lowers per relief time: nil when the hot node sheds under minRelief (a swap of copies
// of equal load is no relief), the excess does not fall, the score does not beat floor (the best
// group so far: the cheap figures come first, as at a thousand nodes OpenSearch's balance is costly
// to weigh), the move function would not admit it, OpenSearch's balancer would undo it, or that
// kind of plan relieved nothing here a short while ago.
func (s *search) judgePlaced(group []Move, t *cluster.Node, rank int, floor float64) (*option, float64) {
	p, v := s.p, s.p.v
	src := s.src.ID
	kind := PlanMove
	for _, m := range group {
		switch {
		case m.Phase == PhaseMakeRoom:
			kind = PlanPassOn
		case m.Phase == PhaseSwapReturn && kind == PlanMove:
			kind = PlanSwap
		}
	}
	delta := loadDelta(group, src)
	o := &option{group: group, kind: kind, target: t, rank: rank}
	if -delta < p.minRelief(group[o.hot()].WriteLoad) {
		return nil, 0
	}
	pr := v.Project(group, o.hot())
	o.drop = pr.ExcessBefore - pr.ExcessAfter
	if o.drop <= excessEpsilon {
		return nil, 0
	}
	score := o.drop / (1 + s.reliefTime(o)/placementPace)
	if score <= floor+1e-12 {
		return nil, 0
	}
	judged, ok := admitGroup(v, group, false)
	s.bounds.Evaluations += len(group)
	if !ok {
		return nil, 0
	}
	if invites, _, _ := v.invitesBuiltin(group); invites {
		return nil, 0
	}
	if p.coolingOff(src, kind) != nil {
		return nil, 0
	}
	o.judged = judged
	o.srcAfter = v.utilOf(src, v.WriteLoad(src)+delta)
	return o, score
}

// placed plans the desired placement for a hot node and returns its first groups, merged into one
// group as a bundle is (the move function lets a node take part in one group a cycle), as far as the
// cycle's move budget, the recovery slots and the deciders on the view with them allow; nil when the
// placement, whole, leaves the node saturated. The rest is planned again next cycle, on fresh
// stats.
func (p *planner) placed(h Hotspot, node *cluster.Node, goal float64) *option {
	s := &search{p: p, src: node, latency: h.QueueLatencySeconds, weighedFrom: p.v.weighings, bounds: SearchBounds{MaxEvaluations: placementEvaluations,
		MaxWeighings: placementEvaluations, MaxCandidates: placementCopies, MaxReturns: placementReturns}}
	pl := s.place(goal)
	if len(pl.steps) == 0 || pl.utilAfter >= 1-1e-9 {
		// A placement that leaves the node saturated relieves nothing the samples would show: its
		// queue still grows, and each step holds the node until it lands.
		return nil
	}
	v := p.v
	var out *option
	for _, step := range pl.steps {
		group := step.group
		if out != nil {
			group = append(slices.Clone(out.group), step.group...)
		}
		if !p.budgetFits(len(group)) || p.spentNode(group) != "" || !p.withinRecoveries(group) {
			break
		}
		judged, ok := admitGroup(v, group, false)
		if !ok {
			break
		}
		if invites, _, _ := v.invitesBuiltin(group); invites {
			break
		}
		o := &option{group: group, judged: judged, kind: step.kind, target: step.target, rank: step.rank}
		if out != nil {
			o.kind, o.target, o.rank = PlanBundle, out.target, out.rank
		}
		o.srcAfter = v.utilOf(node.ID, v.WriteLoad(node.ID)+loadDelta(group, node.ID))
		pr := v.Project(group, o.hot())
		o.drop = pr.ExcessBefore - pr.ExcessAfter
		out = o
		if o.srcAfter < 1-1e-9 {
			// Off saturation its queue drains; the rest waits for the samples that show it, and
			// leaves shardwise's moves in flight to other nodes (safety.max_own_moves_in_flight).
			break
		}
	}
	if out != nil {
		out.expect = fmt.Sprintf("%s; these are its first %d moves", pl, len(out.group))
	}
	return out
}
