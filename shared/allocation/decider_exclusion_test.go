package allocation

import "testing"

func TestExclusionDecider(t *testing.T) {
	drain := func(_ *fixture, cfg *Config, _ map[string]bool) { cfg.ExcludedNodes = []string{"c"} }
	drainA := func(_ *fixture, cfg *Config, _ map[string]bool) { cfg.ExcludedNodes = []string{"a"} }
	runDeciderCases(t, exclusion{}, []deciderCase{
		{name: "yes: data node in service", shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: node drained", mutate: drain, shard: 0, from: "a", to: "c", want: No},
		{name: "no: node without the data role", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Roles = []string{"cluster_manager"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "can remain: node in service", shard: 0, from: "a", remain: true, want: Yes},
		{name: "cannot remain: node drained", mutate: drainA, shard: 0, from: "a", remain: true, want: No},
	})
}
