package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestReliefInFlight: a hot node whose backlog grows has its projected load raised to its demand
// (View.SetDemand); a copy relocating off it is relief under way all the same. Random seeds 1, 13
// and 24 planned a further group every cycle for such a node, which the move function held back
// while the copy relocated (safety.Throttle holds a node with one of shardwise's moves in flight),
// and the cycles counted as relieved.
func TestReliefInFlight(t *testing.T) {
	cases := []struct {
		name string
		// served is a's WRITE load by its counters: hot[0], hot[1], hot[2] and idx[0] on a.
		loads []float64
		// own: the relocation of hot[0] a→c is a move of a relief group the planner projected.
		own       bool
		wantMoves bool
		wantNote  string
		wantWhy   string
	}{
		{
			name:     "the copy relocating off the hot node brings its demand to the goal: it waits",
			loads:    []float64{3, 2, 1.5, 1},
			wantNote: "copies relocating off it bring it to",
		},
		{
			name:     "relief of its own in flight leaves it over the goal: it waits for it to land",
			loads:    []float64{2, 2.5, 2, 1.5},
			own:      true,
			wantNote: "hot[0] a→c, a relief group's move, still relocates",
		},
		{
			name:      "a relocation not of its own leaves it over the goal: a further group",
			loads:     []float64{2, 2.5, 2, 1.5},
			wantMoves: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c", "d").
				index("hot", 1<<30, tc.loads[:3], []string{"a", "b"}, []string{"a", "d"}, []string{"a", "d"}).
				index("idx", 1<<30, tc.loads[3:], []string{"a"}).
				index("cool", 1<<30, []float64{0.5, 0.5}, []string{"b"}, []string{"c"})
			s := f.snap()
			a := s.NodeByRef("a")
			// a serves its 8 threads and its queue grows 5 s of work a thread over the 30 s interval:
			// a demand of 8 + 8/6 threads.
			a.Write.Load, a.Write.Utilization, a.Write.Active = 8, 1, 8
			a.Write.QueueLatencySeconds, a.Write.Queue = 10, 500
			for i := range s.Copies {
				if c := &s.Copies[i]; c.Index == "hot" && c.Shard == 0 && c.Node == a.ID {
					c.State, c.RelocatingNode = cluster.StateRelocating, "id-c"
				}
			}
			mem := Memory{Streaks: map[string]Streak{a.ID: {Count: 1, Since: s.At.Add(-30 * time.Second), At: s.At.Add(-30 * time.Second), Queue: 400, Latency: 5}}}
			if tc.own {
				mem.Projections = []ReliefProjection{{Node: a.ID, NodeName: "a", Kind: PlanMove, At: s.At.Add(-2 * time.Minute), Threads: 8,
					Target: "id-c", TargetName: "c", Moves: []Moved{{Index: "hot", Shard: 0, From: a.ID, To: "id-c", Underway: s.At.Add(-time.Minute)}}}}
			}
			plan, _ := PlanCycle(s, mem, DefaultConfig())
			if len(plan.Hotspots) == 0 || !plan.Hotspots[0].Hot || plan.Hotspots[0].Demand <= 8 {
				t.Fatalf("hotspots %+v: want a hot with a demand over the 8 threads it serves", plan.Hotspots)
			}
			for _, m := range plan.Moves {
				if tc.own && (m.From == a.ID || m.To == a.ID || m.From == "id-c" || m.To == "id-c") {
					t.Errorf("move %s[%d] %s→%s: want none touching a or c while hot[0] relocates between them", m.Index, m.Shard, m.FromName, m.ToName)
				}
			}
			if got := len(plan.Moves) > 0; got != tc.wantMoves {
				t.Errorf("moves %v: got any %v want %v; notes %+v", moveNames(plan), got, tc.wantMoves, plan.Notes)
			}
			if tc.wantNote != "" && !slices.ContainsFunc(plan.Notes, func(n Note) bool {
				return n.Kind == NoteReliefInFlight && n.Node == "a" && strings.Contains(n.Reason, tc.wantNote)
			}) {
				t.Errorf("notes %+v: want a %s note on a saying %q", plan.Notes, NoteReliefInFlight, tc.wantNote)
			}
			if len(plan.Unrelieved) > 0 {
				t.Errorf("unrelieved %+v: want none while relief is in flight or planned", plan.Unrelieved)
			}
		})
	}
}
