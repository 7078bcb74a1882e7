package allocation

import "testing"

func TestSameShardDecider(t *testing.T) {
	runDeciderCases(t, sameShard{}, []deciderCase{
		{name: "yes: target holds no copy", shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: target holds a copy", shard: 0, from: "a", to: "b", want: No},
		{name: "no: another node on the target's host holds a copy", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.SameShardHost = true
			f.node("b").Host, f.node("c").Host = "h1", "h1"
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "yes: same host rule off", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("b").Host, f.node("c").Host = "h1", "h1"
		}, shard: 0, from: "a", to: "c", want: Yes},
	})
}
