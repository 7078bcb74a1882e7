package allocation

import (
	"github.com/shardwise/shardwise/shared/cluster"

	"slices"
	"strings"
	"testing"
)

func TestPlanCycle(t *testing.T) {
	noBuiltin := DefaultConfig()
	noBuiltin.BuiltinBalancer.Enabled = false
	cases := []struct {
		name      string
		snap      func() *fixtureResult
		cfg       Config
		wantMoves []string
		wantScale bool
		wantNote  string
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
			cfg: noBuiltin,
			// a carries 8.02 threads: T = 2; [2, 4) holds hot[1] at 2.5, the closest to T.
			wantMoves: []string{"hot[1] a->c write-hotspot"},
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
			name: "queue latency under threshold: no move",
			snap: func() *fixtureResult {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{3, 3, 1}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 1)
				return &fixtureResult{f.snap(), []string{"a"}}
			},
			cfg: noBuiltin,
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

type fixtureResult struct {
	s   *cluster.Snapshot
	hot []string
}
