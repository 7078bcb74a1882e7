package allocation

import (
	"slices"
	"strings"
	"testing"
)

// TestPlacementRelief: a hot node the relief search finds no single group for gets the first groups
// of a desired placement, when the placement as a whole takes it off saturation.
func TestPlacementRelief(t *testing.T) {
	// Random segment-replication seed 154 of 200, as its cluster stood when node-0 went hot: node-0
	// holds seg-0's primaries 0 and 2, seg-1's primary 0 and doc-0's primary 1 (106 %). Every lone
	// move of a primary spreads its index past OpenSearch's balance threshold, no count-neutral
	// return to node-0 is cooler than what it takes, and seg-0's copies on node-2 are of shards
	// node-0 holds: only a rotation keeps every count (seg-0[0] node-0→node-2, seg-0[2]'s replica
	// node-2→node-1, seg-0[1]'s replica node-1→node-0).
	build := func(load float64) *fixture {
		return newFixture("node-0", "node-1", "node-2").
			segment("seg-0", 1<<30, []float64{load, load, load}, []string{"node-0", "node-1"}, []string{"node-2", "node-1"}, []string{"node-0", "node-2"}).
			segment("seg-1", 4<<30, []float64{load, load, load}, []string{"node-0", "node-2"}, []string{"node-1", "node-2"}, []string{"node-1", "node-0"}).
			index("doc-0", 2<<30, []float64{0.58, 0.58}, []string{"node-1", "node-2"}, []string{"node-0", "node-1"}).
			queueing("node-0", 20)
	}
	cases := []struct {
		name  string
		load  float64
		moves []string
		// note starts the unrelieved note expected when nothing is planned.
		note string
	}{
		{
			name: "a rotation takes node-0 off saturation", load: 2.53,
			moves: []string{"seg-0[0] node-0->node-2 write-hotspot", "seg-0[2] node-2->node-1 make-room", "seg-0[1] node-1->node-0 swap-return"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := build(tc.load).snap()
			cfg := DefaultConfig()
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "node-0")}, cfg)
			if got := moveNames(plan); !slices.Equal(got, tc.moves) {
				var notes []string
				for _, n := range plan.Notes {
					notes = append(notes, n.Kind+": "+n.Reason)
				}
				t.Fatalf("moves: got %v want %v\nnotes:\n%s", got, tc.moves, strings.Join(notes, "\n"))
			}
			if len(plan.Moves) > 0 && !strings.Contains(plan.Moves[0].Reason, "the relief search found no single group; a desired placement of") {
				t.Errorf("the hot copy's reason does not name the placement: %s", plan.Moves[0].Reason)
			}
			unrelieved := slices.ContainsFunc(plan.Unrelieved, func(u Unrelieved) bool { return strings.HasPrefix(u.Reason, tc.note) })
			if unrelieved != (tc.note != "") {
				t.Errorf("unrelieved: got %+v, want a reason starting %q; notes %+v, scale-up %+v", plan.Unrelieved, tc.note, plan.Notes, plan.ScaleUp)
			}
		})
	}
}

// TestPlacementDrainsWhereTheSearchDoesNot: when the relief search's best group leaves the hot node
// saturated, the desired placement's first groups are taken instead if they take it off saturation
// (in at most two moves, landing within the hour). Node a (150 %) holds big (4.4 threads) beside
// copies it alone may hold; the search prefers big to b swapped with a 1.5-thread copy that keeps b
// within its goal (the gentler rule), which leaves a at 114 %; the placement swaps it with a
// 0.1-thread copy, leaving b at 92 %, under saturation, and a at 96 %.
func TestPlacementDrainsWhereTheSearchDoesNot(t *testing.T) {
	f := newFixture("a", "b", "c", "d").
		index("big", 1<<30, []float64{4.4}, []string{"a"}).
		index("mid", 12<<30, []float64{1.2, 1.2}, []string{"a"}, []string{"a"}).
		index("pinned", 1<<30, []float64{5.2}, []string{"a"}).
		index("base", 1<<30, []float64{1.5, 1.5, 1.5, 1.5, 4.5, 4.5}, []string{"b"}, []string{"c"}, []string{"d"}, []string{"b"}, []string{"c"}, []string{"d"}).
		index("cool", 1<<30, []float64{0.1, 0.1, 0.1}, []string{"b"}, []string{"c"}, []string{"d"}).
		queueing("a", 20)
	exclude(f, "b,c,d", "pinned")
	s := f.snap()
	plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a")}, DefaultConfig())
	want := []string{"big[0] a->b write-hotspot", "cool[0] b->a swap-return"}
	if got := moveNames(plan); !slices.Equal(got, want) {
		t.Fatalf("moves: got %v want %v", got, want)
	}
	const why = "the relief search's best group (big[0] to b as a swap) leaves it saturated at 114%; a desired placement of 1 groups"
	if !strings.Contains(plan.Moves[0].Reason, why) {
		t.Errorf("reason %q does not say %q", plan.Moves[0].Reason, why)
	}
}
