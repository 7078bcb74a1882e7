package allocation

import (
	"fmt"
	"math"

	"github.com/shardwise/shardwise/shared/cluster"
)

// The rules under which a move may happen; an Admission names the one that decided.
const (
	// RuleAllYes: every decider says YES.
	RuleAllYes = "all-yes"
	// RuleFitsAfterGroup: the write-load decider objects to the copy alone, but the moves issued with
	// it (cooler copies sent back, or moved off first) leave the target at or under its goal.
	RuleFitsAfterGroup = "fits-after-group"
	// RuleImprovesExcess: the write-load decider says NOT_PREFERRED and no better target exists, but
	// the move strictly lowers the cluster's excess Σ max(0, utilization − goal) and leaves the target
	// unsaturated and cooler than the source.
	RuleImprovesExcess = "improves-excess"
	// RuleFitsAfterReturn: a lone move the improvement rule accepts (the target over its goal),
	// issued without a count-neutral return because OpenSearch's balancer is expected to make one
	// once it lands (builtinReturn), and that return comes off the target: the target ends within
	// its goal after it, as after a swap, without the return sharing the hot node's recovery rate.
	RuleFitsAfterReturn = "fits-after-return"
	// RuleSwapReturn: a cooler copy sent back to a hot node in the same call as the hot copy leaving
	// it; the write-load decider objects (the node is hot), the group as a whole lowers the excess and
	// leaves the node unsaturated, or takes at least half its load over saturation off it.
	RuleSwapReturn = "swap-return"
	// RuleStagedReturn: a swap's return issued once its hot copy's files are copied; the write-load
	// decider objects (the node it returns to is still hot in the stats), but the swap was judged
	// whole when planned and its hot copy relocates.
	RuleStagedReturn = "staged-return"
	// RuleCountNeutral: the index-balance decider objects to the copy alone, but the copies of the
	// index sent back in the same call leave the target with no more of them than before.
	RuleCountNeutral = "count-neutral"
	// RuleCannotRemain: a copy that may not stay where it is takes any home that is not a NO.
	RuleCannotRemain = "cannot-remain"
	// RuleRefused: the move may not happen.
	RuleRefused = "refused"
)

// excessEpsilon is the least drop in excess (in utilization) that counts as lowering it.
const excessEpsilon = 1e-6

// Projection is what the group a move belongs to does to WRITE utilization: the move's source and
// target after the whole group, and the excess over the goal, summed over the nodes the group
// touches, before and after.
type Projection struct {
	SourceBefore float64 `json:"source_before"`
	SourceAfter  float64 `json:"source_after"`
	TargetBefore float64 `json:"target_before"`
	TargetAfter  float64 `json:"target_after"`
	TargetGoal   float64 `json:"target_goal"`
	TargetHot    bool    `json:"target_hot,omitempty"`
	// TargetIndexDelta is how many copies of the move's index the whole group adds to its target
	// (for a staged return, with the hot move of the swap it completes).
	TargetIndexDelta int     `json:"target_index_delta,omitempty"`
	ExcessBefore     float64 `json:"excess_before"`
	ExcessAfter      float64 `json:"excess_after"`
}

// Admission is the answer to "may this move happen", with the rule that decided and why.
type Admission struct {
	Allowed bool   `json:"allowed"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
	why     func() string
}

// Why returns the admission's sentence, building it on first use.
func (a *Admission) Why() string {
	if a.Reason == "" && a.why != nil {
		a.Reason = a.why()
		a.why = nil
	}
	return a.Reason
}

func admission(ok bool, rule, format string, args ...any) Admission {
	return Admission{Allowed: ok, Rule: rule, why: func() string { return fmt.Sprintf(format, args...) }}
}

// weighable reports whether a NOT_PREFERRED verdict is a cost the admission rules weigh rather
// than a refusal: the write-load decider's (weighed on the group's projected utilizations) and the
// index-balance decider's (weighed on the group's counts: a group that leaves the target with no
// more copies of the index than before, a count-neutral swap, spreads the index no worse). NO is
// never weighable, nor any other decider's NOT_PREFERRED. This is the one place the rule is written.
func weighable(vd *Verdict) bool {
	return writeLoadPreference(vd) || vd.Decision == NotPreferred && vd.Decider == DeciderIndexBalance
}

// writeLoadPreference reports whether vd is the write-load decider's NOT_PREFERRED, which Admit
// weighs on the group's projected utilizations (its improvement rules) rather than on counts.
func writeLoadPreference(vd *Verdict) bool {
	return vd.Decision == NotPreferred && vd.Decider == DeciderWriteLoad
}

// blocks reports whether a verdict refuses a move, judged with its group's projection: NO always;
// a NOT_PREFERRED that is not weighable; index balance's when the group adds a copy of the index to
// the target. The write-load decider's NOT_PREFERRED is left to the admission rules.
func blocks(vd *Verdict, pr Projection) bool {
	switch {
	case vd.Decision == Yes:
		return false
	case !weighable(vd):
		return true
	case vd.Decider == DeciderIndexBalance:
		return pr.TargetIndexDelta > 0
	}
	return false
}

// Admit decides whether a move may happen, from its phase, its deciders' verdicts and the projected
// utilizations of its group. NO is absolute. NOT_PREFERRED from the write-load decider is a
// preference: a write-hotspot move takes such a target when the group makes it fit, or when the move
// strictly lowers the cluster's excess and leaves the target unsaturated and cooler than the source.
// NOT_PREFERRED from index balance is a preference a count-neutral group meets (see blocks). Any
// other NOT_PREFERRED refuses, except for a copy that may not remain where it is.
func Admit(phase Phase, verdicts []Verdict, pr Projection) Admission {
	var writeLoadNP *Verdict
	for i := range verdicts {
		vd := &verdicts[i]
		switch {
		case vd.Decision == No:
			return admission(false, RuleRefused, "%s says NO: %s", vd.Decider, vd.Why())
		case writeLoadPreference(vd):
			writeLoadNP = vd
		}
	}
	var otherNP *Verdict
	for i := range verdicts {
		if vd := &verdicts[i]; vd.Decision == NotPreferred && !writeLoadPreference(vd) {
			otherNP = vd
			break
		}
	}
	if phase == PhaseCannotRemain {
		if writeLoadNP != nil || otherNP != nil {
			return admission(true, RuleCannotRemain, "no decider says NO; a NOT_PREFERRED home beats one the copy may not stay on")
		}
		return admission(true, RuleAllYes, "every decider says YES")
	}
	for i := range verdicts {
		if vd := &verdicts[i]; !writeLoadPreference(vd) && blocks(vd, pr) {
			return admission(false, RuleRefused, "%s says NOT_PREFERRED: %s", vd.Decider, vd.Why())
		}
	}
	if writeLoadNP == nil {
		if otherNP != nil {
			return admission(true, RuleCountNeutral, "%s said NOT_PREFERRED (%s), but the group sends back as many copies of the index as it brings, so the target's count does not rise",
				otherNP.Decider, otherNP.Why())
		}
		return admission(true, RuleAllYes, "every decider says YES")
	}
	drop := pr.ExcessBefore - pr.ExcessAfter
	switch phase {
	case PhaseSwapReturn:
		// A step that lowers the excess is kept even while the node it returns to stays hot: many
		// small copies relieve a node only together, over a few cycles. A swap of copies of equal
		// load relieves nothing and is refused where the group is built (search.admit).
		if drop > excessEpsilon && pr.TargetAfter < pr.TargetBefore {
			return admission(true, RuleSwapReturn, "the swap lowers excess over the goal from %.3f to %.3f and takes the node it returns to from %.0f%% to %.0f%%",
				pr.ExcessBefore, pr.ExcessAfter, pr.TargetBefore*100, pr.TargetAfter*100)
		}
		return admission(false, RuleRefused, "the swap would not lower excess (%.3f → %.3f) or would leave the node it returns to no cooler (%.0f%% from %.0f%%)",
			pr.ExcessBefore, pr.ExcessAfter, pr.TargetAfter*100, pr.TargetBefore*100)
	case PhaseMakeRoom:
		// A copy a target passes on to make room, or to keep an index's counts level: the group as
		// a whole is weighed, as for the hot copy's own move. The node it goes to must end within
		// its goal, and the group lower the excess.
		if drop > excessEpsilon && pr.TargetAfter <= pr.TargetGoal && !pr.TargetHot {
			return admission(true, RuleFitsAfterGroup, "with the moves issued alongside, the node it goes to ends at %.0f%%, within its goal %.0f%%; excess over the goal %.3f → %.3f",
				pr.TargetAfter*100, pr.TargetGoal*100, pr.ExcessBefore, pr.ExcessAfter)
		}
		return admission(false, RuleRefused, "%s says NOT_PREFERRED (%s) and the group would leave the node it goes to at %.0f%% against its goal %.0f%%, excess %.3f → %.3f",
			writeLoadNP.Decider, writeLoadNP.Why(), pr.TargetAfter*100, pr.TargetGoal*100, pr.ExcessBefore, pr.ExcessAfter)
	case PhaseStagedReturn:
		// The swap it completes was judged whole when planned, and its hot copy relocates: the node
		// it returns to is hot in the stats, and no better than a swap's return issued with it.
		return admission(true, RuleStagedReturn, "it completes a swap judged whole when planned, whose hot copy relocates off the node it returns to (now at %.0f%% with it, goal %.0f%%)",
			pr.TargetAfter*100, pr.TargetGoal*100)
	case PhaseWriteHotspot:
		switch {
		case pr.TargetHot:
			return admission(false, RuleRefused, "the target is a write hotspot itself")
		case pr.TargetAfter <= pr.TargetGoal && drop > excessEpsilon:
			return admission(true, RuleFitsAfterGroup, "with the moves issued alongside, the target ends at %.0f%%, within its goal %.0f%%; excess over the goal %.3f → %.3f",
				pr.TargetAfter*100, pr.TargetGoal*100, pr.ExcessBefore, pr.ExcessAfter)
		case drop > excessEpsilon && pr.TargetAfter < 1 && pr.TargetAfter < pr.SourceBefore:
			return admission(true, RuleImprovesExcess, "%s said NOT_PREFERRED (%s), but no target says YES and this lowers the cluster's excess over the goal from %.3f to %.3f, leaving the target at %.0f%% (under saturation and under the source's %.0f%% before the move)",
				writeLoadNP.Decider, writeLoadNP.Why(), pr.ExcessBefore, pr.ExcessAfter, pr.TargetAfter*100, pr.SourceBefore*100)
		}
		return admission(false, RuleRefused, "%s says NOT_PREFERRED (%s) and the move fails the improvement rule: excess %.3f → %.3f, target %.0f%% against saturation and the source's %.0f%% before the move",
			writeLoadNP.Decider, writeLoadNP.Why(), pr.ExcessBefore, pr.ExcessAfter, pr.TargetAfter*100, pr.SourceBefore*100)
	}
	return admission(false, RuleRefused, "%s says NOT_PREFERRED: %s", writeLoadNP.Decider, writeLoadNP.Why())
}

// Goal is the WRITE utilization a node should end at: AllocationUtilization, or lower when its WRITE
// queue holds a backlog. A queue latency of L seconds is L seconds of work waiting for every thread;
// spare capacity (1 − u) drains it within DrainWithin D when u ≤ 1 − L/D. The goal never drops
// under HotUtilization, below which a node is not hot at all.
func (v *View) Goal(node string) float64 {
	goal := v.Cfg.AllocationUtilization
	n := v.Node(node)
	if n == nil {
		return goal
	}
	if d := v.Cfg.DrainWithin.Std().Seconds(); d > 0 && n.Write.QueueLatencySeconds > 0 {
		goal = math.Min(goal, math.Max(v.Cfg.HotUtilization, 1-n.Write.QueueLatencySeconds/d))
	}
	return goal
}

func (v *View) utilOf(node string, load float64) float64 {
	n := v.Node(node)
	if n == nil || n.Write.Threads <= 0 {
		return 0
	}
	return load / float64(n.Write.Threads)
}

func (v *View) excessOf(node string, load float64) float64 {
	return math.Max(0, v.utilOf(node, load)-v.Goal(node))
}

// Project returns the projection of the i-th move of group, measured on v before any of the group
// is applied.
func (v *View) Project(group []Move, i int) Projection {
	var nodes [8]string
	touched := nodes[:0]
	delta := map[string]float64{}
	for _, m := range group {
		for _, n := range []string{m.From, m.To} {
			if _, ok := delta[n]; !ok {
				delta[n] = 0
				touched = append(touched, n)
			}
		}
		delta[m.From] -= m.WriteLoad
		delta[m.To] += m.WriteLoad
	}
	var pr Projection
	for _, n := range touched {
		pr.ExcessBefore += v.excessOf(n, v.WriteLoad(n))
		pr.ExcessAfter += v.excessOf(n, v.WriteLoad(n)+delta[n])
	}
	m := group[i]
	for _, g := range group {
		if g.Index == m.Index {
			if g.To == m.To {
				pr.TargetIndexDelta++
			}
			if g.From == m.To {
				pr.TargetIndexDelta--
			}
		}
	}
	if c := m.Completes; c != nil && c.Index == m.Index && c.From == m.To {
		// A staged return completes a swap whose hot copy of the same index left its target:
		// judged with that move, as the swap was when planned, it adds no copy of the index there.
		pr.TargetIndexDelta--
	}
	pr.SourceBefore = v.utilOf(m.From, v.WriteLoad(m.From))
	pr.SourceAfter = v.utilOf(m.From, v.WriteLoad(m.From)+delta[m.From])
	pr.TargetBefore = v.utilOf(m.To, v.WriteLoad(m.To))
	pr.TargetAfter = v.utilOf(m.To, v.WriteLoad(m.To)+delta[m.To])
	pr.TargetGoal = v.Goal(m.To)
	pr.TargetHot = v.hot[m.To]
	return pr
}

// Judged is one move of a group with its verdicts and admission.
type Judged struct {
	Verdicts  []Verdict
	Admission Admission
}

// AdmitGroup judges the moves issued together (one move, a swap, a chain) on v: each copy must still
// be STARTED on its source, each target in the cluster, and Admit must allow every move, each judged
// after the group's earlier moves and with the group's projection. When every move is allowed the
// group is applied to v and ok is true; otherwise v is left as it was and the first refusal is
// returned last.
func AdmitGroup(v *View, group []Move) (judged []Judged, ok bool) { return admitGroup(v, group, true) }

func admitGroup(v *View, group []Move, keep bool) (judged []Judged, ok bool) {
	prs := make([]Projection, len(group))
	for i := range group {
		prs[i] = v.Project(group, i)
	}
	cp := v.checkpoint()
	undoAll := func() { v.rollback(cp) }
	for i, m := range group {
		c := v.copyOn(m.Index, m.Shard, m.From)
		if c == nil || c.State != cluster.StateStarted {
			undoAll()
			return append(judged, Judged{Admission: admission(false, RuleRefused, "%s[%d] is no longer STARTED on %s", m.Index, m.Shard, m.FromName)}), false
		}
		target := v.Node(m.To)
		if target == nil {
			undoAll()
			return append(judged, Judged{Admission: admission(false, RuleRefused, "target %s has left the cluster", m.ToName)}), false
		}
		vs := Evaluate(v, c, target)
		a := Admit(m.Phase, vs, prs[i])
		judged = append(judged, Judged{Verdicts: vs, Admission: a})
		if !a.Allowed {
			undoAll()
			return judged, false
		}
		v.apply(m)
	}
	if !keep {
		undoAll()
	}
	return judged, true
}
