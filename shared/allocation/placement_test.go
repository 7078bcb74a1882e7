package allocation

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestReliefPlacement covers the desired placement of a hot region (placement.go): where the
// relief search finds no group, or none that reaches the goal, the steps toward the placement that
// relieves the region most with the fewest relocations.
func TestReliefPlacement(t *testing.T) {
	type placementCase struct {
		reliefCase
		// rule is an admission rule one of the moves between nodes not hot must name.
		rule string
	}
	cases := []placementCase{
		{reliefCase: reliefCase{
			name: "tight packing: no move, swap or chain relieves the node; a two-step placement brings every node within its goal",
			build: func() (*cluster.Snapshot, []string) {
				// a carries big[0] (5) and big[1] (3.5): 8.5 threads, 106 %. b carries 3 + 2.2 + 1
				// (78 %), c 3 + 2.6 + 1 (83 %). big[1] alone takes b or c past saturation; a swap
				// with the lightest copy enough to come back relieves a too little, and no chain
				// makes the room (the only room is on b or c, for copies as heavy as 2.2). The
				// placement: f1[0] (3) b→c and f2[1] (2.6) c→b, then big[1] to b and f2[0] (2.2)
				// back: a ends at 90 %, b at 89 %, c at 88 %, every node within its goal.
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{5, 3.5}, []string{"a"}, []string{"a"}).
					index("f1", 1<<30, []float64{3, 3}, []string{"b"}, []string{"c"}).
					index("f2", 1<<30, []float64{2.2, 2.6}, []string{"b"}, []string{"c"}).
					index("f3", 1<<30, []float64{1, 1}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"f1[0] b->c placement", "f2[1] c->b placement", "big[1] a->b write-hotspot", "f2[0] b->a swap-return"},
			why: []string{"as a placement: a ends at 90% (goal 90%), b at 89%",
				"desired placement of the hot region [a b c]: 4 relocations, 4.0 GiB, leaving a 106%→90% (goal 90%), b 78%→89% (goal 90%), c 82%→88% (goal 90%) (every node of the region within its goal)",
				"issued: all 2 steps"}},
			rule: RulePlacement,
		},
		{reliefCase: reliefCase{
			name: "a group of the relief search that brings the node to its goal stands",
			build: func() (*cluster.Snapshot, []string) {
				// hot[0] (3) fits on c (4 → 7, 88 %): a move every decider accepts; no placement.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 3}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("fill", 1<<30, []float64{5, 4}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[0] a->c write-hotspot"},
			why:   []string{"as a move", "rule all-yes"},
		}},
		{reliefCase: reliefCase{
			name: "no placement lowers the excess: the node is an unrelieved hotspot",
			build: func() (*cluster.Snapshot, []string) {
				// As the tight packing case with b, c and d each holding one copy of 6.2 (78 %):
				// nothing a can send fits beside it, and a copy hotter than either big one is no
				// exchange for it. The cluster has room in total (28.1 of 32 threads).
				f := newFixture("a", "b", "c", "d").
					index("big", 1<<30, []float64{5, 4.5}, []string{"a"}, []string{"a"}).
					index("f1", 1<<30, []float64{6.2, 6.2, 6.2}, []string{"b"}, []string{"c"}, []string{"d"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			notes:      []string{NoteUnrelieved},
			unrelieved: []string{"a"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := runRelief(t, tc.reliefCase)
			ruled := tc.rule == ""
			for _, m := range plan.Moves {
				if m.Phase == PhasePlacement && strings.Contains(m.Reason, "rule "+tc.rule+":") {
					ruled = true
				}
				if m.Phase != PhaseWriteHotspot && m.Reason == "" {
					t.Errorf("%s[%d] %s→%s has no reason", m.Index, m.Shard, m.FromName, m.ToName)
				}
				if len(plan.Moves) > 1 && m.SwapGroup == 0 {
					t.Errorf("%s[%d] is not in the group issued in one call", m.Index, m.Shard)
				}
			}
			if !ruled {
				t.Errorf("no move between nodes not hot names rule %s", tc.rule)
			}
			if strings.Contains(tc.name, "two-step") {
				for _, m := range plan.Moves {
					if m.Phase != PhaseWriteHotspot && !strings.Contains(m.Reason, "a step of the desired placement of a's hot region") {
						t.Errorf("%s[%d]: reason does not name the placement: %s", m.Index, m.Shard, m.Reason)
					}
				}
			}
		})
	}
}
