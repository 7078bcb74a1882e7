package allocation

import (
	"fmt"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// A node over the heap limit that holds more copies than OpenSearch's balancer lets a node hold
// over the mean is drained by that balancer, by count: shardwise leaves it, with a note, and drains
// only what the balancer would not (balancer off, counts level, or a cause beside the heap).
func TestHeapDrainLeftToBuiltin(t *testing.T) {
	// heapFull builds nodes a, b, c with a's heap at 94 % (over the 85 % limit, about 4 % a copy
	// with 24 copies) and onA, onB and onC copies on them, each the one copy of an index of its own
	// (so no index is unbalanced) carrying 0.1 WRITE threads.
	heapFull := func(onA, onB, onC int) func() *cluster.Snapshot {
		return func() *cluster.Snapshot {
			f := newFixture("a", "b", "c")
			k := 0
			for _, nc := range []struct {
				n     string
				count int
			}{{"a", onA}, {"b", onB}, {"c", onC}} {
				for range nc.count {
					f.index(fmt.Sprintf("i%d", k), 1<<30, []float64{0.1}, []string{nc.n})
					k++
				}
			}
			a := f.node("a")
			a.HeapUsedBytes = a.HeapMaxBytes * 94 / 100
			return f.snap()
		}
	}
	builtinOn := func(c *Config) { c.BuiltinBalancer.Enabled = true }
	cases := []planCase{
		{
			// Spreading ahead off: a carries all the cluster's WRITE load, and the spread would move
			// its copies in the cycle the drain is left to the balancer.
			name:  "balancer on, a holds 16 copies over a mean of 8: left to the balancer, one note",
			build: heapFull(24, 0, 0),
			cfg:   func(c *Config) { builtinOn(c); c.SpreadAheadMean = 0 },
			notes: []string{"cannot-remain"},
			why:   []string{"24 copies may not remain on a (a heap is 94%", "left to OpenSearch's balancer: the node holds 16.0 copies over the mean"},
		},
		{
			name:  "balancer off: shardwise drains a itself, paced by the recovery limits",
			build: heapFull(24, 0, 0),
			moves: []string{"i0[0] a->b cannot-remain", "i1[0] a->c cannot-remain"},
			notes: []string{"cannot-remain"},
			why:   []string{"may not remain on a: a heap is 94%", "[heap]"},
		},
		{
			name:  "balancer on, counts level: the balancer moves nothing off a, so shardwise drains it",
			build: heapFull(24, 24, 24),
			cfg:   builtinOn,
			moves: []string{"i0[0] a->b cannot-remain", "i1[0] a->c cannot-remain"},
			notes: []string{"cannot-remain"},
			why:   []string{"[heap]"},
		},
		{
			name:  "balancer on, a within the threshold (0.45 × 1.3 over the mean is under 1): shardwise drains",
			build: heapFull(24, 22, 22),
			cfg:   builtinOn,
			moves: []string{"i0[0] a->b cannot-remain", "i1[0] a->c cannot-remain"},
			notes: []string{"cannot-remain"},
		},
		{
			name:  "balancer on but allocation disabled: shardwise drains",
			build: func() *cluster.Snapshot { s := heapFull(24, 0, 0)(); s.Settings.AllocationEnable = "none"; return s },
			cfg:   builtinOn,
			moves: []string{"i0[0] a->b cannot-remain", "i1[0] a->c cannot-remain"},
			notes: []string{"cannot-remain"},
		},
		{
			name:  "balancer on, a also excluded: the exclusion drains it, as before",
			build: heapFull(24, 0, 0),
			cfg:   func(c *Config) { builtinOn(c); c.ExcludedNodes = []string{"a"} },
			moves: []string{"i0[0] a->b cannot-remain", "i1[0] a->c cannot-remain"},
			notes: []string{"cannot-remain"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}
