package allocation

import "testing"

func TestIndexBalanceDecider(t *testing.T) {
	crowd := func(f *fixture, _ *Config, _ map[string]bool) {
		f.index("y", 1<<30, []float64{0, 0, 0, 0, 0}, []string{"c"}, []string{"c"}, []string{"c"}, []string{"a"}, []string{"b"})
	}
	runDeciderCases(t, indexBalance{}, []deciderCase{
		{name: "yes: target under the limit", shard: 0, from: "a", to: "c", want: Yes},
		// y: 5 copies over 3 nodes, ceil(ceil(5/3) × 1.5) = 3; c holds 3.
		{name: "not preferred: target at the limit", mutate: crowd, index: "y", shard: 3, from: "a", to: "c", want: NotPreferred},
		{name: "yes: the other node is under the limit", mutate: crowd, index: "y", shard: 3, from: "a", to: "b", want: Yes},
	})
}
