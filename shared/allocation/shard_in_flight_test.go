package allocation

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestNoSecondCopyInFlight: never two copies of a shard in flight at once, across cycles as within
// one. Random seed 168 moved hot[1] off node-0 in one cycle and its other copy off node-1 in the
// next, while the first still relocated.
func TestNoSecondCopyInFlight(t *testing.T) {
	cases := []struct {
		name string
		// the state of hot[0]'s copy on b, and the node it relocates to
		state, to string
		want      string // the move planned off a
	}{
		{"its other copy settled: the hot copy that fits best goes", cluster.StateStarted, "", "hot[0]"},
		{"its other copy relocating: another copy goes", cluster.StateRelocating, "id-e", "idx[0]"},
		{"its other copy initializing: another copy goes", cluster.StateInitializing, "", "idx[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c", "d", "e").
				index("hot", 1<<30, []float64{3, 0.2}, []string{"a", "b"}, []string{"a", "c"}).
				index("idx", 1<<30, []float64{4.5}, []string{"a"})
			s := f.snap()
			a := s.NodeByRef("a")
			a.Write.Load, a.Write.Utilization, a.Write.Active = 8, 1, 8
			a.Write.QueueLatencySeconds, a.Write.Queue = 10, 500
			for i := range s.Copies {
				if c := &s.Copies[i]; c.Index == "hot" && c.Shard == 0 && c.Node == "id-b" {
					c.State, c.RelocatingNode = tc.state, tc.to
				}
			}
			mem := Memory{Streaks: map[string]Streak{a.ID: {Count: 1, Since: s.At.Add(-30 * time.Second), At: s.At.Add(-30 * time.Second), Queue: 400, Latency: 5}}}
			plan, _ := PlanCycle(s, mem, DefaultConfig())
			var off []string
			for _, m := range plan.Moves {
				if m.From == a.ID {
					off = append(off, fmt.Sprintf("%s[%d]", m.Index, m.Shard))
				}
				if m.Index == "hot" && m.Shard == 0 && tc.state != cluster.StateStarted {
					t.Errorf("move hot[0] %s→%s: hot[0] has a copy %s", m.FromName, m.ToName, tc.state)
				}
			}
			if len(off) == 0 || off[0] != tc.want {
				t.Errorf("moves off a %v: want %s first; notes %+v", off, tc.want, plan.Notes)
			}
		})
	}
}
