package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestYoungIndexLeavesHeldNode: a node one of shardwise's moves still relocates to or from is held
// until that lands (own_move_in_flight_per_node), so that its effect is measured first. A young
// index's quick copies may leave it all the same (young.go): rollover-new-node's new node sat at
// 112 % for 20 minutes, with the rolled-over index's three empty primaries on it, while a
// relocation of an hour onto it went on. An older index's copy, or a young one too big to relocate
// within YoungRelocationSeconds, still waits.
func TestYoungIndexLeavesHeldNode(t *testing.T) {
	cases := []struct {
		name string
		// age is how long before the snapshot logs-2 was created (0: the snapshot does not say).
		age       time.Duration
		size      int64
		wantMoves bool
	}{
		{name: "a rollover's empty copies minutes old: one leaves", age: 2 * time.Minute, wantMoves: true},
		{name: "the index older than YoungIndexAge: it waits", age: YoungIndexAge + time.Minute},
		{name: "no creation date: it waits"},
		{name: "young, but its relocation is estimated past YoungRelocationSeconds: it waits", age: 2 * time.Minute, size: 4 << 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c", "d").
				index("logs-1", 5<<30, []float64{0.5}, []string{"b", "a"}).
				index("logs-2", tc.size, []float64{3, 3, 3}, []string{"a", "b"}, []string{"a", "c"}, []string{"a", "d"}).
				index("cool", 1<<30, []float64{0.5, 0.5, 0.5}, []string{"b"}, []string{"c"}, []string{"d"})
			s := f.snap()
			if tc.age > 0 {
				s.IndexByName("logs-2").Created = s.At.Add(-tc.age)
			}
			a := s.NodeByRef("a")
			a.Write.Load, a.Write.Utilization, a.Write.Active = 8, 1, 8
			a.Write.QueueLatencySeconds, a.Write.Queue = 10, 500
			// logs-1[0]'s replica relocates b→a: shardwise's move, by its ledger.
			for i := range s.Copies {
				if c := &s.Copies[i]; c.Index == "logs-1" && c.Node == a.ID {
					c.Node, c.State, c.RelocatingNode = "id-b", cluster.StateRelocating, a.ID
				}
			}
			s.Copies = slices.DeleteFunc(s.Copies, func(c cluster.Copy) bool { return c.Index == "logs-1" && c.Primary })
			mem := Memory{Streaks: map[string]Streak{a.ID: {Count: 1, Since: s.At.Add(-30 * time.Second), At: s.At.Add(-30 * time.Second), Queue: 400, Latency: 5}}}
			cfg := DefaultConfig().WithOwnInFlight([]Move{{Index: "logs-1", Shard: 0, From: "id-b", FromName: "b", To: a.ID, ToName: "a", Phase: PhaseIndexBalance}})
			plan, next := PlanCycle(s, mem, cfg)
			if len(plan.Hotspots) == 0 || !plan.Hotspots[0].Hot {
				t.Fatalf("hotspots %+v: want a hot", plan.Hotspots)
			}
			var off []Move
			for _, m := range plan.Moves {
				if m.To == a.ID && m.Phase != PhaseSwapReturn {
					t.Errorf("move %s[%d] %s→%s: want nothing sent to a while logs-1[0] relocates to it", m.Index, m.Shard, m.FromName, m.ToName)
				}
				if m.From == a.ID {
					off = append(off, m)
				}
			}
			if got := len(off) > 0; got != tc.wantMoves {
				t.Fatalf("moves %v: got a move off a %v want %v; notes %+v", moveNames(plan), got, tc.wantMoves, plan.Notes)
			}
			for _, m := range off {
				if m.Index != "logs-2" || !m.YoungIndex || !strings.Contains(m.Reason, "rule young-index") {
					t.Errorf("move %s[%d] young %v reason %q: want a young logs-2 copy, marked and said so", m.Index, m.Shard, m.YoungIndex, m.Reason)
				}
			}
			for _, st := range next.Staged {
				if r := st.Return; r.To == a.ID && (st.For.From != a.ID || !slices.ContainsFunc(off, func(m Move) bool { return m.Index == st.For.Index && m.Shard == st.For.Shard })) {
					t.Errorf("staged %s[%d] for %+v: want it to complete a young move off a", r.Index, r.Shard, st.For)
				}
			}
			if !tc.wantMoves && !slices.ContainsFunc(plan.Notes, func(n Note) bool {
				return n.Kind == NoteReliefInFlight && n.Node == "a" && strings.Contains(n.Reason, "logs-1[0] b→a, one of shardwise's moves, still relocates")
			}) {
				t.Errorf("notes %+v: want a %s note on a naming logs-1[0]'s move", plan.Notes, NoteReliefInFlight)
			}
		})
	}
}
