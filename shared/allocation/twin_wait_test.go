package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestReliefWaitsForTwin: a hot node whose best step now leaves it saturated, while a copy whose
// shard relocates elsewhere would take it off saturation alone, waits for that relocation when it
// lands before the step would: the step would hold the node (no further group touches it) past it.
func TestReliefWaitsForTwin(t *testing.T) {
	cases := []struct {
		name string
		// slowSize is slow[0]'s size: its 0.5 threads leave a saturated (9.5 → 9 of 8 threads).
		slowSize int64
		// underway is how long ago the first sample showed hot[0] relocating b→c.
		underway time.Duration
		moves    []string
		note     string
	}{
		{
			// slow[0]: 16 GiB, est. 22m6s with its overhead; hot[0]: 1 GiB, planned at 26 s of
			// files and 7m25s of replay, under way for a minute.
			name: "the step lands after the twin: a waits for hot[0]", slowSize: 16 << 30, underway: time.Minute,
			note: "a: its best step now, slow[0] (0.50 WRITE threads), leaves it saturated and holds it until it lands (est. 22m6s); hot[0] (4.00 threads) alone takes it off saturation and may move once its shard's other copy lands (est. 6m51s): it waits for that",
		},
		{
			// hot[0] under way for 16 minutes, over twice its estimate (7m51s): a wait on it rests
			// on a guess.
			name: "the twin is past twice its estimate: the step goes", slowSize: 16 << 30, underway: 16 * time.Minute,
			moves: []string{"slow[0] a->d write-hotspot"},
		},
		{
			// hot[0] under way for 10 minutes, past its estimate but not twice: it lands any moment.
			name: "the twin is past its estimate: a waits", slowSize: 16 << 30, underway: 10 * time.Minute,
			note: "a: its best step now, slow[0] (0.50 WRITE threads), leaves it saturated and holds it until it lands (est. 22m6s); hot[0] (4.00 threads) alone takes it off saturation and may move once its shard's other copy lands (est. 0s): it waits for that",
		},

		{
			// slow[0]: 256 MiB, its relocation under two minutes.
			name: "the step lands first: it goes", slowSize: 256 << 20, underway: time.Minute,
			moves: []string{"slow[0] a->d write-hotspot"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c", "d", "e").
				index("hot", 1<<30, []float64{4}, []string{"a", "b"}).
				index("slow", tc.slowSize, []float64{0.5}, []string{"a"}).
				index("pinned", 1<<30, []float64{5}, []string{"a"}).
				index("base", 1<<30, []float64{1, 1, 1, 1}, []string{"b"}, []string{"c"}, []string{"d"}, []string{"e"}).
				queueing("a", 6)
			exclude(f, "b,c,d,e", "pinned")
			s := f.snap()
			b := s.NodeByRef("b")
			for i := range s.Copies {
				if c := &s.Copies[i]; c.Index == "hot" && c.Node == b.ID {
					c.State, c.RelocatingNode = cluster.StateRelocating, "id-c"
				}
			}
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = false
			mem := Memory{Streaks: streaks(s, "a"), Projections: []ReliefProjection{{Node: b.ID, NodeName: "b", Kind: PlanMove, At: s.At.Add(-tc.underway - 30*time.Second), Threads: 8,
				Target: "id-c", TargetName: "c", Moves: []Moved{{Index: "hot", Shard: 0, From: b.ID, To: "id-c", Underway: s.At.Add(-tc.underway), FileSeconds: 25.6, WriteLoad: 4}}}}}
			plan, _ := PlanCycle(s, mem, cfg)
			var off []string
			for _, m := range moveNames(plan) {
				if strings.Contains(m, " a->") {
					off = append(off, m)
				}
			}
			if !slices.Equal(off, tc.moves) {
				t.Errorf("moves off a: got %v want %v\nnotes %+v", off, tc.moves, plan.Notes)
			}
			waited := slices.ContainsFunc(plan.Notes, func(n Note) bool { return n.Kind == NoteDeferred && n.Reason == tc.note })
			if waited != (tc.note != "") {
				t.Errorf("deferred note %q: got %v\nnotes %+v", tc.note, waited, plan.Notes)
			}
		})
	}
}
