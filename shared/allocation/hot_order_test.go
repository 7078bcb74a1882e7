package allocation

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// sharedHot: a and b are hot and hold copies of hot[0] (4 threads) and hot[1] (1 thread); a's
// queue is the longer. a could also shed own[0] (3.5 threads, 8 GiB: slow), b only big[0] (4.5
// threads, 64 GiB: slower still) or hot[1], which leaves it saturated. Longest queue first, a
// takes hot[0] and b stays saturated; b first takes hot[0], and a comes off saturation with own[0].
func sharedHot(bigOnB float64) *cluster.Snapshot {
	f := newFixture("a", "b", "c", "d", "e").
		index("hot", 1<<30, []float64{4, 1}, []string{"a", "b"}, []string{"b", "a"}).
		index("own", 8<<30, []float64{3.5}, []string{"a", "c"}).
		index("big", 64<<30, []float64{bigOnB}, []string{"b", "d"}).
		index("fill", 1<<30, []float64{0.3, 0.3, 0.3}, []string{"c", "e"}, []string{"d", "e"}, []string{"e", "c"}).
		queueing("a", 20).queueing("b", 10)
	return f.snap()
}

// TestHotOrder: hot nodes that share shards are each tried first, and the plan whose hot nodes
// come off saturation soonest is kept, with a note saying why; the longest queue goes first when
// no order does better, and a lone hot node is planned once.
func TestHotOrder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	lone := newFixture("a", "b", "c").
		index("hot", 1<<30, []float64{4, 4, 1}, []string{"a"}, []string{"a"}, []string{"a"}).
		index("fill", 1<<30, []float64{0.3, 0.3}, []string{"b"}, []string{"c"}).
		queueing("a", 20).snap()
	cases := []struct {
		name string
		snap *cluster.Snapshot
		hot  []string
		// hot0 is the node hot[0] leaves; order the node the hot-order note names ("" for none).
		hot0, order string
	}{
		{"the node that needs the shared shard goes first", sharedHot(4.5), []string{"a", "b"}, "b", "b"},
		// b sheds big[0] alone below saturation: it no longer needs hot[0].
		{"longest queue first when no order does better", sharedHot(2.5), []string{"a", "b"}, "a", ""},
		{"a lone hot node", lone, []string{"a"}, "a", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, _ := PlanCycle(tc.snap, Memory{Streaks: streaks(tc.snap, tc.hot...)}, cfg)
			i := slices.IndexFunc(plan.Moves, func(m Move) bool { return m.Index == "hot" && m.Shard == 0 })
			if i < 0 || plan.Moves[i].FromName != tc.hot0 {
				t.Fatalf("hot[0] from %q wanted; moves %v\nnotes %+v", tc.hot0, moveNames(plan), plan.Notes)
			}
			var notes []Note
			for _, n := range plan.Notes {
				if n.Kind == NoteHotOrder {
					notes = append(notes, n)
				}
			}
			switch {
			case tc.order == "" && len(notes) > 0:
				t.Fatalf("hot-order note %+v, want none", notes)
			case tc.order != "" && (len(notes) != 1 || notes[0].Node != tc.order || !strings.Contains(notes[0].Reason, tc.order+" relieved first")):
				t.Fatalf("hot-order notes %+v, want one naming %s", notes, tc.order)
			}
		})
	}
}
