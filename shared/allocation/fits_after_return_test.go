package allocation

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// fitsAfterReturnFixture: x's three single-copy shards one per node, so a lone move of x[0] off a
// spreads x past the balancer's threshold, and its first step sends x[2], the highest-numbered copy
// on the heaviest node c, back to a. a carries 8.5 threads (106 %) and queues; c carries cLoad.
func fitsAfterReturnFixture(cLoad float64) *fixture {
	return newFixture("a", "b", "c").
		index("x", 1<<30, []float64{3, 0.6, 0.6}, []string{"a"}, []string{"b"}, []string{"c"}).
		index("fa", 1<<30, []float64{5.5}, []string{"a"}).
		index("fb", 1<<30, []float64{4.5}, []string{"b"}).
		index("fc", 1<<30, []float64{cLoad - 0.6}, []string{"c"}).
		queueing("a", 6)
}

// TestFitsAfterReturn: a lone move the improvement rule admitted is weighed as a swap (rule
// fits-after-return) only when the return OpenSearch's balancer is expected to make comes off its
// target back to the hot node, and leaves both within their goals.
func TestFitsAfterReturn(t *testing.T) {
	m := Move{Index: "x", Shard: 0, From: "id-a", To: "id-c", FromName: "a", ToName: "c", WriteLoad: 3}
	back := Move{Index: "x", Shard: 2, From: "id-c", To: "id-a", FromName: "c", ToName: "a", WriteLoad: 0.6}
	toB := Move{Index: "x", Shard: 2, From: "id-c", To: "id-b", FromName: "c", ToName: "b", WriteLoad: 0.6}
	improves := Admission{Allowed: true, Rule: RuleImprovesExcess}
	cases := []struct {
		name  string
		cLoad float64 // c's WRITE threads before the move
		ret   Move
		a     Admission
		// turn: the awaited returns as the balancer pairs them with ret (returnsInTurn).
		turn []ExpectedReturn
		want bool
	}{
		{"the return comes off the target and leaves it within its goal", 4.5, back, improves, nil, true},
		{"the target stays over its goal after the return", 5.0, back, improves, nil, false},
		{"the return comes off another node: the target keeps the copy's whole load", 4.5,
			Move{Index: "x", Shard: 1, From: "id-b", To: "id-a", FromName: "b", ToName: "a", WriteLoad: 0.6}, improves, nil, false},
		{"the return goes to another node than the hot one", 4.5, toB, improves, nil, false},
		{"the return goes to another move's source, whose awaited return the balancer sends to the hot node instead", 4.5, toB, improves,
			[]ExpectedReturn{{Index: "x", Shard: 1, From: "id-b", To: "id-c", ReturnIndex: "x", ReturnShard: 1, ReturnFrom: "id-b", ReturnTo: "id-a"}}, true},
		{"a move every decider accepts keeps its gentler rule", 4.5, back, Admission{Allowed: true, Rule: RuleAllYes}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := NewView(fitsAfterReturnFixture(tc.cLoad).snap(), DefaultConfig(), nil)
			got, ok := fitsAfterReturn(v, m, tc.ret, tc.a, tc.turn)
			if ok != tc.want {
				t.Fatalf("got %v (%s %s), want %v", ok, got.Rule, got.Why(), tc.want)
			}
			if !ok {
				if got.Rule != tc.a.Rule {
					t.Errorf("rule changed to %s without an upgrade", got.Rule)
				}
				return
			}
			if got.Rule != RuleFitsAfterReturn || !got.Allowed {
				t.Errorf("got rule %s allowed %v, want %s", got.Rule, got.Allowed, RuleFitsAfterReturn)
			}
			for _, w := range []string{"the target ends at 86%", "returns x[2] (0.60 threads) c→" + tc.ret.ToName, "a at 76%", "carries 94%"} {
				if !strings.Contains(got.Why(), w) {
					t.Errorf("reason %q lacks %q", got.Why(), w)
				}
			}
		})
	}
}

// TestReliefLeavesTheReturnToTheBalancer: where the return OpenSearch's balancer is expected to
// make brings the target back within its goal, the hot copy goes alone instead of as a swap whose
// return would share the hot node's recovery rate for its whole relocation. Without the balancer to
// rely on, the same cluster gets the swap.
func TestReliefLeavesTheReturnToTheBalancer(t *testing.T) {
	cases := []struct {
		name    string
		builtin bool
		moves   []string
		why     []string
	}{
		{"the balancer's return takes c back within its goal: the hot copy goes alone", true,
			[]string{"x[0] a->c write-hotspot"},
			[]string{"rule fits-after-return", "the target ends at 86%", "OpenSearch's balancer is expected to even the counts by moving x[2]"}},
		{"no balancer to rely on: x[2] comes back in the same call", false,
			[]string{"x[0] a->c write-hotspot", "x[2] c->a swap-return"},
			[]string{"as a swap", "rule fits-after-group"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fitsAfterReturnFixture(4.5).snap()
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = tc.builtin
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a")}, cfg)
			if got := moveNames(plan); !slices.Equal(got, tc.moves) {
				t.Fatalf("moves: got %v want %v\nnotes: %+v", got, tc.moves, plan.Notes)
			}
			for _, w := range tc.why {
				if !strings.Contains(plan.Moves[0].Reason, w) {
					t.Errorf("reason %q lacks %q", plan.Moves[0].Reason, w)
				}
			}
		})
	}
}

// TestReliefShortOfTheGoalLeavesTheReturnToTheBalancer: a lone move that takes the hot node off
// saturation but leaves it over its goal relies on the return OpenSearch's balancer is expected to
// make too, instead of a swap whose return would share the hot node's recovery rate with the hot
// copy for its whole relocation (its file copy, and so its translog replay, twice as long). With a
// rebalance slot free the balancer may start that return at once, while the hot copy's files still
// copy: the estimate counts it sharing the rate then, and alone when cluster_concurrent_rebalance
// leaves the balancer no slot.
func TestReliefShortOfTheGoalLeavesTheReturnToTheBalancer(t *testing.T) {
	// a carries x[0] (3 threads), pinned[0] (4.5) and held[0] (3), both allowed on a alone: 10.5
	// of 8 threads. With x[0] gone it is at 94 %, over its 90 % goal, and no other copy can go,
	// so x[0] is the one step. x is one copy per node, so x[0] alone spreads x past the balancer's
	// threshold, and its first step sends x[2] from c, the heaviest, back to a.
	build := func() *cluster.Snapshot {
		f := newFixture("a", "b", "c").
			index("x", 1<<30, []float64{3, 0.6, 0.6}, []string{"a"}, []string{"b"}, []string{"c"}).
			index("pinned", 1<<30, []float64{4.5}, []string{"a"}).
			index("held", 1<<30, []float64{3}, []string{"a"}).
			index("fb", 1<<30, []float64{4.5}, []string{"b"}).
			index("fc", 1<<30, []float64{2.9}, []string{"c"}).
			queueing("a", 6)
		f.s.Indices[1].Filters.Require = map[string]string{"_name": "a"}
		f.s.Indices[2].Filters.Require = map[string]string{"_name": "a"}
		return f.snap()
	}
	for _, tc := range []struct {
		name      string
		rebalance int
		why       []string
		not       string
	}{
		{"a rebalance slot free: the return may share the files' copy", 2,
			[]string{"shared by 2", "with 1 relocations in flight or planned against 2 the balancer may start that return at once"}, "shared by 1"},
		{"no rebalance slot: the return waits", 1, []string{"shared by 1"}, "may start that return at once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := build()
			s.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: tc.rebalance, Known: true}
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = true
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a")}, cfg)
			if got, want := moveNames(plan), []string{"x[0] a->c write-hotspot"}; !slices.Equal(got, want) {
				t.Fatalf("moves: got %v want %v\nnotes: %+v", got, want, plan.Notes)
			}
			r := plan.Moves[0].Reason
			for _, w := range append([]string{"a ends at 94% (goal 90%)", "rule all-yes", "OpenSearch's balancer is expected to even the counts by moving x[2]"}, tc.why...) {
				if !strings.Contains(r, w) {
					t.Errorf("reason %q lacks %q", r, w)
				}
			}
			if strings.Contains(r, tc.not) {
				t.Errorf("reason %q has %q", r, tc.not)
			}
		})
	}
}

// TestAtOnceSettled: a move planned while a rebalance slot was free is estimated beside the return
// OpenSearch's balancer may start at once; once the cycle's later moves fill
// cluster_concurrent_rebalance, the balancer has no slot for it, and the move's reason, estimate and
// projected file phase time it alone (random seed 80 of 200: est. 42m57s "shared by 2", landed
// alone in 21.5 minutes). With a slot still free they stand.
func TestAtOnceSettled(t *testing.T) {
	cfg := DefaultConfig()
	s := newFixture("a", "b", "c").
		index("x", 1<<30, []float64{3, 0.6}, []string{"a"}, []string{"b"}).
		index("y", 1<<30, []float64{1}, []string{"b"}).
		snap()
	s.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 2, Known: true}
	alone := EstimateRelocation(s.Settings, cfg, 1<<30, 3, 1)
	shared := EstimateRelocation(s.Settings, cfg, 1<<30, 3, 2)
	note := "; with 1 relocations in flight or planned against 2 the balancer may start that return at once (cluster_concurrent_rebalance), sharing the recovery rate while the files copy, which the estimate counts"
	hot := Move{Index: "x", Shard: 0, From: "id-a", To: "id-c", FromName: "a", ToName: "c", Phase: PhaseWriteHotspot,
		Reason: "a is hot; " + shared.String() + "; rule all-yes; once it lands, OpenSearch's balancer is expected to even the counts" + note, EstimatedSeconds: shared.Seconds()}
	other := Move{Index: "y", Shard: 0, From: "id-b", To: "id-c", FromName: "b", ToName: "c", Phase: PhaseWriteHotspot}
	cases := []struct {
		name      string
		moves     []Move
		wantAlone bool
	}{
		{"a slot still free: the estimate counts the return", []Move{hot}, false},
		{"a later move fills the slots: timed alone", []Move{hot, other}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &planner{v: NewView(s, cfg, nil)}
			p.plan.Moves = slices.Clone(tc.moves)
			p.projections = []ReliefProjection{{Node: "id-a", Moves: []Moved{{Index: "x", Shard: 0, From: "id-a", To: "id-c", FileSeconds: shared.FileSeconds, Sharers: 2}}}}
			p.atOnce = []atOnceEstimate{{move: Moved{Index: "x", Shard: 0, From: "id-a", To: "id-c"}, alone: alone, shared: shared, note: note}}
			p.settleAtOnce()
			m, pm := p.plan.Moves[0], p.projections[0].Moves[0]
			want, wantNot, secs, files := shared.String(), alone.String(), shared.Seconds(), shared.FileSeconds
			if tc.wantAlone {
				want, wantNot, secs, files = alone.String(), shared.String(), alone.Seconds(), alone.FileSeconds
				if !strings.Contains(m.Reason, "the balancer has no slot for that return until one lands") || strings.Contains(m.Reason, "may start that return at once") {
					t.Errorf("reason %q: want the return said to wait, not to start at once", m.Reason)
				}
			}
			if !strings.Contains(m.Reason, want) || strings.Contains(m.Reason, wantNot) {
				t.Errorf("reason %q: want %q, not %q", m.Reason, want, wantNot)
			}
			if math.Abs(m.EstimatedSeconds-secs) > 1e-9 || math.Abs(pm.FileSeconds-files) > 1e-9 {
				t.Errorf("estimated %.0fs, projected files %.0fs; want %.0fs, %.0fs", m.EstimatedSeconds, pm.FileSeconds, secs, files)
			}
		})
	}
}
