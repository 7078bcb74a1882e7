package allocation

import "testing"

func TestWriteLoadDecider(t *testing.T) {
	runDeciderCases(t, writeLoad{}, []deciderCase{
		{name: "yes: room under the allocation utilization", shard: 0, from: "a", to: "c", want: Yes},
		{name: "not preferred: target is hot", mutate: func(_ *fixture, _ *Config, hot map[string]bool) { hot["id-c"] = true }, shard: 0, from: "a", to: "c", want: NotPreferred},
		{name: "not preferred: would pass the allocation utilization", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Write.Load = 6
		}, shard: 0, from: "a", to: "c", want: NotPreferred},
		{name: "yes: exactly at the allocation utilization", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Write.Load = 5.2 // 5.2 + 2 = 7.2 of 8 threads = 90 %
		}, shard: 0, from: "a", to: "c", want: Yes},
		{name: "not preferred: target reports no WRITE pool", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Write.Threads = 0
		}, shard: 0, from: "a", to: "c", want: NotPreferred},
	})
}
