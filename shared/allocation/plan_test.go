package allocation

import (
	"github.com/shardwise/shardwise/shared/cluster"

	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlanCycle(t *testing.T) {
	noBuiltin := DefaultConfig()
	noBuiltin.BuiltinBalancer.Enabled = false
	noReplay := noBuiltin
	noReplay.TranslogReplaySpeed = 0
	noSpread := noBuiltin
	noSpread.SpreadAheadMean = 0
	cases := []struct {
		name      string
		snap      func() *fixtureResult
		cfg       Config
		wantMoves []string
		wantScale bool
		wantBound string
		wantNote  string
		wantRule  string
		wantWhy   string // in the write-hotspot move's reason
	}{
		{
			name: "middling shard leaves the hot node for the least utilized node",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5, 0.02}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{1, 0.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			// Without the replay in the relief time the equal-size copies tie: a carries 8.02
			// threads, T = 2; [2, 4) holds hot[1] at 2.5, the closest to T.
			cfg:       noReplay,
			wantMoves: []string{"hot[1] a->c write-hotspot"},
		},
		{
			name: "of equal-size copies that each reach the goal, the coolest lands first and leaves",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5, 0.02}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{1, 0.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			// a must shed 0.82 threads. hot[2] replays 1.5 threads over its 26 s of files at 0.23
			// (167 s), hot[1] 2.5 (278 s): hot[2] relieves a two minutes sooner.
			cfg:       noBuiltin,
			wantMoves: []string{"hot[2] a->c write-hotspot"},
			wantWhy:   "relocation est. 3m13s: files in 26s at 40 MiB/s shared by 1, then 2m47s replaying 1.50 WRITE threads",
		},
		{
			name: "the least utilized node has no incoming recovery slot free: the next one takes the copy",
			snap: func() *fixtureResult {
				// As above, but two copies are relocating from b to c, so c already runs
				// node_concurrent_incoming_recoveries (2) recoveries and a move there would be refused.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5, 0.02}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{1, 0.5}, []string{"b"}, []string{"c"}).
					index("moving", 1<<20, []float64{0, 0}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				s := relocating(f.snap(), "moving", "id-c")
				return &fixtureResult{s, []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"hot[2] a->b write-hotspot"},
		},
		{
			name: "every node with room has its incoming slots taken: no move and no scale-up until they free",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5, 0.02}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{1, 0.5}, []string{"b"}, []string{"c"}).
					index("tob", 1<<20, []float64{0, 0}, []string{"c"}, []string{"c"}).
					index("toc", 1<<20, []float64{0, 0}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				s := relocating(relocating(f.snap(), "tob", "id-b"), "toc", "id-c")
				return &fixtureResult{s, []string{"a"}}
			},
			cfg:      noBuiltin,
			wantNote: "throttled",
		},
		{
			name: "one shard outweighs its node: no move, scale up",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{7.9, 0.5}, []string{"a"}, []string{"a"}).
					queueing("a", 9)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantScale: true,
			wantBound: BoundCopy,
			wantNote:  "unfixable-hotspot",
		},
		{
			name: "every write node hot: no move, scale up",
			snap: func() *fixtureResult {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{3, 3, 3, 3, 3, 3}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}, []string{"b"}).
					queueing("a", 5).queueing("b", 5)
				return &fixtureResult{f.snap(), []string{"a", "b"}}
			},
			cfg:       noBuiltin,
			wantScale: true,
			// Every node is hot and the load is over 90 % of all threads: the stronger proof is named.
			wantBound: BoundCapacity,
		},
		{
			name: "no target says YES: a not-preferred target is taken when it lowers the excess",
			snap: func() *fixtureResult {
				// a carries 10 threads of 8; b and c 4.9 each. 2.5 more puts them at 92.5 %, over 90 %
				// but under saturation and under a's 93.75 % after the move. One such move leaves a
				// hot, so a second copy goes to c in the same group: a ends at 62.5 %.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{2.5, 2.5, 2.5, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("big", 1<<30, []float64{4.9, 4.9}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"hot[0] a->b write-hotspot", "hot[1] a->c write-hotspot"},
			wantRule:  RuleImprovesExcess,
		},
		{
			name: "swap for utilization: a cooler copy comes back so the hot copy fits",
			snap: func() *fixtureResult {
				// b at 4 threads would reach 93.75 % with hot[0]; sending warm[0] (1.5) back leaves
				// it at 75 % and a at 75 %.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{1.5}, []string{"b"}).
					index("filler", 1<<30, []float64{2.5, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"hot[0] a->b write-hotspot", "warm[0] b->a swap-return"},
			wantRule:  RuleFitsAfterGroup,
		},
		{
			name: "short chain: a cool copy makes room on the target, then the hot copy moves",
			snap: func() *fixtureResult {
				// Nothing may go back to a (filters), b would reach 100 %, c 106 %: no move or swap
				// helps. warm[0] fits on c (87.5 %), cold[0] comes back to keep counts level, and
				// hot[0] fits on b (75 %).
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{2}, []string{"b"}).
					index("filler", 1<<30, []float64{2.5, 5}, []string{"b"}, []string{"c"}).
					index("cold", 1<<20, []float64{0}, []string{"c"}).
					queueing("a", 6)
				for i := range f.s.Indices {
					if n := f.s.Indices[i].Name; n == "warm" || n == "filler" {
						f.s.Indices[i].Filters.Exclude = map[string]string{"_name": "a"}
					}
				}
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"warm[0] b->c make-room", "cold[0] c->b make-room", "hot[0] a->b write-hotspot"},
			wantRule:  RuleAllYes,
		},
		{
			name: "relief in flight that reaches the goal: no new move",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				s := f.snap()
				s.Copies[0].State, s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-b"
				return &fixtureResult{s, []string{"a"}}
			},
			cfg:      noBuiltin,
			wantNote: "relief-in-flight",
		},
		{
			name: "relief in flight short of the goal: relieving goes on",
			snap: func() *fixtureResult {
				// a carries 9.5 threads; 1 relocating off to b leaves 8.5 (106 %). T = 1.5: hot[3]
				// (2.5) is in [T, max); c, not b, which the relocation fills.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{1, 3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				s := f.snap()
				s.Copies[0].State, s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-b"
				return &fixtureResult{s, []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"hot[3] a->c write-hotspot"},
		},
		{
			name: "a node that just joined, empty, takes the hot copy before an idle node holding copies",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("idle", 1<<30, []float64{0, 0, 0}, []string{"b"}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"hot[2] a->c write-hotspot"},
		},
		{
			name: "a copy on a drained node may not remain: it moves even where only not-preferred homes exist",
			snap: func() *fixtureResult {
				// b is the only other node and already holds 6 of 8 threads: the write-load decider
				// prefers not, but a drained node must not keep the copy.
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{2}, []string{"a"}).
					index("y", 1<<30, []float64{6}, []string{"b"})
				return &fixtureResult{f.snap(), nil}
			},
			cfg:       drained("a"),
			wantMoves: []string{"x[0] a->b cannot-remain"},
		},
		{
			name: "over capacity: no move, scale up names the capacity bound",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4, 4, 3.75, 3.75, 3.75, 3.75}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantScale: true,
			wantBound: BoundCapacity,
		},
		{
			name: "two hot nodes, one target with room for one: it takes relief from one only",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("h1", 1<<30, []float64{3, 3, 2}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("h2", 1<<30, []float64{3, 3, 2}, []string{"b"}, []string{"b"}, []string{"b"}).
					index("filler", 1<<30, []float64{4}, []string{"c"}).
					queueing("a", 6).queueing("b", 5)
				return &fixtureResult{f.snap(), []string{"a", "b"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"h1[2] a->c write-hotspot"},
			// b's search found nothing: an unrelieved hotspot, not a scale-up.
			wantScale: false,
		},
		{
			name: "not sustained yet: no move",
			snap: func() *fixtureResult {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{3, 3, 3}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 5)
				return &fixtureResult{f.snap(), nil}
			},
			cfg: noBuiltin,
		},
		{
			// Spreading ahead off: a at 88 % against b's 0 % is skewed (the next case).
			name: "queue latency under threshold: no move",
			snap: func() *fixtureResult {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{3, 3, 1}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 1)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg: noSpread,
		},
		{
			// a building its streak is not calm: nothing spreads ahead until it is hot or calm.
			name: "queue latency under threshold, a building a streak: no spread either",
			snap: func() *fixtureResult {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{3, 3, 1}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 4)
				return &fixtureResult{f.snap(), nil}
			},
			cfg: noBuiltin,
		},
		{
			// a at 88 % against the cluster's 29 %: at a 50 % mean it would be at 150 %, saturated.
			// At that growth x[0] brings it to 86 %, under its goal (z[0] alone would not).
			name: "a calm cluster's skewed node is spread ahead of the peak",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{3}, []string{"a"}).
					index("y", 1<<30, []float64{3}, []string{"a"}).
					index("z", 1<<30, []float64{1}, []string{"a"}).
					queueing("a", 1)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"x[0] a->b write-hotspot"},
			wantWhy:   "skew: a: WRITE use 88% against the cluster's 29%: at a 50% cluster mean it would be at 150%, saturated; spreading it ahead of the peak, every load judged at that growth (×1.71); moving x[0] (5.14 WRITE threads",
		},
		{
			name: "index colocation: the coolest over-limit copy spreads out when nothing is hot",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("crowd", 1<<30, []float64{3, 2, 1, 0.5}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"})
				return &fixtureResult{f.snap(), nil}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"crowd[3] a->b index-balance"},
		},
		{
			name: "index colocation waits for rates: no blind move on the first sample",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("crowd", 1<<30, []float64{3, 2, 1, 0.5}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"})
				s := f.snap()
				s.IntervalSeconds = 0
				return &fixtureResult{s, nil}
			},
			cfg: noBuiltin,
		},
		{
			name: "a saturated node's copies are sized by its demand: the copy its counters fit would not",
			snap: func() *fixtureResult {
				// a serves 8 threads and rejects half as many writes again: demand 12, so its copies
				// bear 4.5, 4.5 and 3 threads. By the counters hot[2] (2) fits b at 81 %; by demand
				// it takes b to 94 %, which only the improvement rule accepts.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{4.5, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 62).rejecting("a", 0.5)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"hot[2] a->b write-hotspot"},
			wantRule:  RuleImprovesExcess,
			wantWhy:   "(3.00 WRITE threads",
		},
		{
			name: "a demand estimate proves nothing: a copy outweighs its node only by its counters",
			snap: func() *fixtureResult {
				// big[0] shows 6 threads; a's demand (12 of 8 served) sizes it at 9, over 90 % of any
				// node, yet only the counters can prove that: the small copy moves, no signal.
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{6}, []string{"a"}).
					index("small", 1<<30, []float64{2}, []string{"a"}).
					index("other", 1<<30, []float64{1, 1}, []string{"b"}, []string{"c"}).
					queueing("a", 62).rejecting("a", 0.5)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       noBuiltin,
			wantMoves: []string{"small[0] a->b write-hotspot"},
		},
		{
			name: "a hot source that stays over 90 % still takes a cold copy back to keep counts level",
			snap: func() *fixtureResult {
				// a carries 11.6 threads (145 %): no copy brings it to its goal. hot[0] leaving for b
				// ends a at 95 %: over 90 % but cooler and unsaturated, so a cold copy may come back
				// with it and shard counts stay level for OpenSearch's balancer. (The relief search
				// alone prefers hot[2], nearest half the hottest load, which leaves a at 100 %,
				// saturated; the desired placement's hot[0] drains it.)
				f := newFixture("a", "b").
					index("hot", 1<<30, []float64{4, 4, 3.6}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("cold", 1<<20, []float64{0, 0, 0}, []string{"b"}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       DefaultConfig(),
			wantMoves: []string{"hot[0] a->b write-hotspot", "cold[0] b->a swap-return"},
		},
		{
			name: "a swap that leaves the hot node saturated needs half its overload off",
			snap: func() *fixtureResult {
				// a carries 14.4 threads (180 %). No copy alone brings it under saturation, but
				// hot[2] leaving with a cold copy back takes 4.4 of its 6.4 threads over saturation
				// off: more than half, so the swap is made.
				f := newFixture("a", "b").
					index("hot", 1<<30, []float64{5, 5, 4.4}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("cold", 1<<20, []float64{0, 0, 0}, []string{"b"}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       DefaultConfig(),
			wantMoves: []string{"hot[2] a->b write-hotspot", "cold[0] b->a swap-return"},
		},
		{
			name: "move that unbalances counts is swapped with a cold copy",
			snap: func() *fixtureResult {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("cold", 1<<20, []float64{0, 0, 0}, []string{"b"}, []string{"b"}, []string{"b"}).
					index("mid", 1<<30, []float64{1, 1, 1}, []string{"c"}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg:       DefaultConfig(),
			wantMoves: []string{"hot[2] a->b write-hotspot", "cold[0] b->a swap-return"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fr := tc.snap()
			plan, _ := PlanCycle(fr.s, Memory{Streaks: streaks(fr.s, fr.hot...)}, tc.cfg)
			got := moveNames(plan)
			if !slices.Equal(got, tc.wantMoves) {
				t.Errorf("moves: got %v want %v\nnotes: %+v", got, tc.wantMoves, plan.Notes)
			}
			if (plan.ScaleUp != nil) != tc.wantScale {
				t.Errorf("scale up: got %+v want %v", plan.ScaleUp, tc.wantScale)
			}
			if tc.wantBound != "" && (plan.ScaleUp == nil || plan.ScaleUp.Bound != tc.wantBound) {
				t.Errorf("scale up bound: got %+v want %s", plan.ScaleUp, tc.wantBound)
			}
			if tc.wantRule != "" && (len(plan.Moves) == 0 || !slices.ContainsFunc(plan.Moves, func(m Move) bool {
				return m.Phase == PhaseWriteHotspot && strings.Contains(m.Reason, "rule "+tc.wantRule+":")
			})) {
				t.Errorf("rule: want a write-hotspot move accepted by %s, got %+v", tc.wantRule, plan.Moves)
			}
			if tc.wantWhy != "" && !slices.ContainsFunc(plan.Moves, func(m Move) bool {
				return m.Phase == PhaseWriteHotspot && strings.Contains(m.Reason, tc.wantWhy)
			}) {
				t.Errorf("reason: want a write-hotspot move saying %q, got %+v", tc.wantWhy, plan.Moves)
			}
			if tc.wantNote != "" && !slices.ContainsFunc(plan.Notes, func(n Note) bool { return n.Kind == tc.wantNote }) {
				t.Errorf("notes: got %+v, want one of kind %s", plan.Notes, tc.wantNote)
			}
			for _, m := range plan.Moves {
				if m.Reason == "" || (m.Phase == PhaseWriteHotspot && !strings.Contains(m.Reason, "WRITE")) {
					t.Errorf("move %s[%d] has no reason with evidence: %q", m.Index, m.Shard, m.Reason)
				}
			}
		})
	}
}

// relocating marks every copy of index as relocating to the node with id to.
func relocating(s *cluster.Snapshot, index, to string) *cluster.Snapshot {
	for i := range s.Copies {
		if s.Copies[i].Index == index {
			s.Copies[i].State, s.Copies[i].RelocatingNode = cluster.StateRelocating, to
		}
	}
	return s
}

func drained(nodes ...string) Config {
	c := DefaultConfig()
	c.BuiltinBalancer.Enabled = false
	c.ExcludedNodes = nodes
	return c
}

type fixtureResult struct {
	s   *cluster.Snapshot
	hot []string
}

// A relocation off a hot node that ended since the last sample: this sample still mixes before and
// after, so the node waits one sample.
func TestPlanCycleSettling(t *testing.T) {
	f := newFixture("a", "b", "c").
		index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
		queueing("a", 6)
	s := f.snap()
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	mem := Memory{Streaks: streaks(s, "a"), Relocating: map[string]time.Time{"id-a": s.At.Add(-30 * time.Second)}}
	plan, next := PlanCycle(s, mem, cfg)
	if len(plan.Moves) != 0 || !slices.ContainsFunc(plan.Notes, func(n Note) bool { return n.Kind == "relief-settling" }) {
		t.Errorf("got moves %v notes %+v, want none and a relief-settling note", moveNames(plan), plan.Notes)
	}
	if len(next.Relocating) != 0 {
		t.Errorf("memory: got relocations %v, want none left", next.Relocating)
	}
	plan, _ = PlanCycle(s, Memory{Streaks: streaks(s, "a")}, cfg)
	if len(plan.Moves) == 0 {
		t.Errorf("without the ended relocation: got no move, notes %+v", plan.Notes)
	}
}
