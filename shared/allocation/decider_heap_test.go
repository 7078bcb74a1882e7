package allocation

import "testing"

func TestHeapDecider(t *testing.T) {
	runDeciderCases(t, heap{}, []deciderCase{
		{name: "yes: plenty of heap", shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: target near the limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").HeapUsedBytes = 7 << 30
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "can remain: under the limit", shard: 0, from: "a", remain: true, want: Yes},
		{name: "cannot remain: over the limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("a").HeapUsedBytes = 15 << 29
		}, shard: 0, from: "a", remain: true, want: No},
	})
}
