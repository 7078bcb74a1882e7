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
		{name: "yes: index include by a custom attribute the target has", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("b").Attributes = map[string]string{"box": "ingest"}
			f.s.Indices[0].Filters.Include = map[string]string{"box": "ingest"}
		}, shard: 1, from: "a", to: "b", want: Yes},
		{name: "no: index include by a custom attribute of another value", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Attributes = map[string]string{"box": "archive"}
			f.s.Indices[0].Filters.Include = map[string]string{"box": "ingest"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "yes: index require by _id matches the target", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Require = map[string]string{"_id": "id-c,id-a"}
		}, shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: index require by _id names other nodes", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Require = map[string]string{"_id": "id-a,id-b"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "no: index exclude by _ip", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").IP = "10.0.0.3"
			f.s.Indices[0].Filters.Exclude = map[string]string{"_ip": "10.0.0.3"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "no: index include by _host names another host", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Host = "host-c"
			f.s.Indices[0].Filters.Include = map[string]string{"_host": "host-a"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "no: the index allows the target but the cluster requires another zone", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").Attributes = map[string]string{"zone": "z2"}
			f.s.Indices[0].Filters.Include = map[string]string{"zone": "z*"}
			f.s.Settings.Filters.Require = map[string]string{"zone": "z1"}
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "can remain: filters allow the node", shard: 0, from: "a", remain: true, want: Yes},
		{name: "cannot remain: index now excludes the node", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Exclude = map[string]string{"_name": "a"}
		}, shard: 0, from: "a", remain: true, want: No},
	})
}
