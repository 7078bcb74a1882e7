package allocation

import "testing"

func TestFilterDecider(t *testing.T) {
	runDeciderCases(t, filter{}, []deciderCase{
		{name: "yes: no filters", shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: index excludes target", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Exclude = map[string]string{"_name": "c"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "no: index require attribute missing", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Require = map[string]string{"box": "hot"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "yes: cluster include wildcard matches", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.Filters.Include = map[string]string{"_name": "c*"}
		}, shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: cluster include matches another node", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.Filters.Include = map[string]string{"_name": "b"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "yes: brackets are literal in OpenSearch's patterns, not a character class", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Exclude = map[string]string{"_name": "[c]"}
		}, shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: _host matches the node's IP too", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").IP = "10.0.0.3"
			f.s.Indices[0].Filters.Exclude = map[string]string{"_host": "10.0.0.*"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "yes: an empty exclude value clears the filter", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Exclude = map[string]string{"_name": " , "}
		}, shard: 0, from: "a", to: "c", want: Yes},
		{name: "can remain: filters allow the node", shard: 0, from: "a", remain: true, want: Yes},
		{name: "cannot remain: index now excludes the node", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Exclude = map[string]string{"_name": "a"}
		}, shard: 0, from: "a", remain: true, want: No},
	})
}
