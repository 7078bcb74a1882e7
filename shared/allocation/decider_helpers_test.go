package allocation

import (
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// deciderCase is one row of a decider's table: a fixture edit, the copy (index[shard] on from) and
// the node it is judged against (to), and the decision wanted.
type deciderCase struct {
	name   string
	mutate func(f *fixture, cfg *Config, hot map[string]bool)
	index  string
	shard  int
	from   string
	to     string
	remain bool // judge CanRemain of the copy on from instead
	want   Decision
}

// deciderBase is three nodes; x[0] on a and b (2 threads), x[1] on a and c (1 thread).
func deciderBase() *fixture {
	return newFixture("a", "b", "c").
		index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
}

func runDeciderCases(t *testing.T, d Decider, cases []deciderCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := deciderBase()
			cfg := DefaultConfig()
			hot := map[string]bool{}
			if tc.mutate != nil {
				tc.mutate(f, &cfg, hot)
			}
			s := f.snap()
			v := NewView(s, cfg, hot)
			index := tc.index
			if index == "" {
				index = "x"
			}
			var c *cluster.Copy
			for i := range s.Copies {
				if cp := &s.Copies[i]; cp.Index == index && cp.Shard == tc.shard && cp.Node == "id-"+tc.from {
					c = cp
				}
			}
			if c == nil {
				t.Fatalf("no copy %s[%d] on %s", index, tc.shard, tc.from)
			}
			var vd Verdict
			if tc.remain {
				rd, ok := d.(RemainDecider)
				if !ok {
					t.Fatalf("%s has no can-remain", d.Name())
				}
				vd = rd.CanRemain(v, c, s.NodeByRef(tc.from))
			} else {
				vd = d.CanAllocate(v, c, s.NodeByRef(tc.to))
			}
			if vd.Decider != d.Name() {
				t.Errorf("decider: got %q want %q", vd.Decider, d.Name())
			}
			if vd.Decision != tc.want {
				t.Errorf("decision: got %s want %s (%s)", vd.Decision, tc.want, vd.Why())
			}
			if vd.Why() == "" {
				t.Error("reason: got none, want a sentence")
			}
		})
	}
}
