package allocation

import "testing"

func TestIndexBalanceDecider(t *testing.T) {
	crowd := func(f *fixture, _ *Config, _ map[string]bool) {
		f.index("y", 1<<30, []float64{0, 0, 0, 0, 0}, []string{"c"}, []string{"c"}, []string{"c"}, []string{"a"}, []string{"b"})
	}
	// y: 8 copies, three on c, the only node of zone z2 (a and b are z1). With a balance factor of 1
	// the cluster-wide limit is ceil(8/3) = 3, c's count.
	zones := func(forced ...string) func(*fixture, *Config, map[string]bool) {
		return func(f *fixture, cfg *Config, _ map[string]bool) {
			cfg.IndexBalanceFactor = 1
			f.index("y", 1<<30, []float64{0, 0, 0, 0}, []string{"a", "c"}, []string{"b", "c"}, []string{"a", "c"}, []string{"a", "b"})
			zoned(f, map[string]string{"a": "z1", "b": "z1", "c": "z2"}, forced...)
		}
	}
	runDeciderCases(t, indexBalance{}, []deciderCase{
		{name: "yes: target under the limit", shard: 0, from: "a", to: "c", want: Yes},
		// y: 5 copies over 3 nodes, ceil(ceil(5/3) × 1.5) = 3; c holds 3.
		{name: "not preferred: target at the limit", mutate: crowd, index: "y", shard: 3, from: "a", to: "c", want: NotPreferred},
		{name: "yes: the other node is under the limit", mutate: crowd, index: "y", shard: 3, from: "a", to: "b", want: Yes},
		// Awareness spreads y's copies over the zones first: z2 holds half of them (4) on its one
		// node, so its limit is 4, not the cluster-wide 3.
		{name: "yes: awareness, a one-node zone's limit is its zone's share", mutate: zones(), index: "y", shard: 3, from: "a", to: "c", want: Yes},
		// Forced over z1, z2 and z3 (no node in z3), each zone's share is ceil(8/3) = 3, c's count.
		{name: "not preferred: forced awareness counts a zone with no node", mutate: zones("z1", "z2", "z3"), index: "y", shard: 3, from: "a", to: "c", want: NotPreferred},
	})
}
