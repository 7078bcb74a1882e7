package allocation

import "testing"

func TestAwarenessDecider(t *testing.T) {
	zones := func(a, b, c string) func(f *fixture, _ *Config, _ map[string]bool) {
		return func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.AwarenessAttributes = []string{"zone"}
			f.node("a").Attributes = map[string]string{"zone": a}
			f.node("b").Attributes = map[string]string{"zone": b}
			if c != "" {
				f.node("c").Attributes = map[string]string{"zone": c}
			}
		}
	}
	runDeciderCases(t, awareness{}, []deciderCase{
		{name: "yes: no awareness attributes", shard: 0, from: "a", to: "c", want: Yes},
		{name: "yes: target's zone holds none of the copies staying", mutate: zones("z1", "z2", "z1"), shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: target's zone already holds its share", mutate: zones("z1", "z2", "z2"), shard: 0, from: "a", to: "c", want: No},
		{name: "no: target has no zone", mutate: zones("z1", "z2", ""), shard: 0, from: "a", to: "c", want: No},
	})
}
