package wire

import (
	"encoding/json"
	"math"
	"testing"
)

func TestFilterPath(t *testing.T) {
	doc := Object{
		{"_shards", Object{{"total", 4}, {"successful", 4}}},
		{"nodes", Object{
			{"n1", Object{{"name", "node-0"}, {"thread_pool", Object{{"write", Object{{"queue", 3}, {"completed", 10}}}, {"search", Object{{"queue", 0}}}}}}},
			{"n2", Object{{"name", "node-1"}, {"thread_pool", Object{{"write", Object{{"queue", 0}, {"completed", 7}}}}}}},
		}},
		{"shards", []any{Object{{"index", "a"}, {"node", "n1"}}, Object{{"index", "b"}, {"node", "n2"}}}},
		{"persistent", Object{{"cluster.routing.allocation.exclude._name", "node-3"}}},
	}
	tests := []struct {
		name   string
		filter string
		want   string
	}{
		{"no filter", "", `{"_shards":{"total":4,"successful":4},"nodes":{"n1":{"name":"node-0","thread_pool":{"write":{"queue":3,"completed":10},"search":{"queue":0}}},"n2":{"name":"node-1","thread_pool":{"write":{"queue":0,"completed":7}}}},"shards":[{"index":"a","node":"n1"},{"index":"b","node":"n2"}],"persistent":{"cluster.routing.allocation.exclude._name":"node-3"}}`},
		{"one leaf", "_shards.total", `{"_shards":{"total":4}}`},
		{"wildcard segment", "nodes.*.name", `{"nodes":{"n1":{"name":"node-0"},"n2":{"name":"node-1"}}}`},
		{"several patterns", "nodes.*.thread_pool.write.queue,_shards.successful", `{"_shards":{"successful":4},"nodes":{"n1":{"thread_pool":{"write":{"queue":3}}},"n2":{"thread_pool":{"write":{"queue":0}}}}}`},
		{"double star at any depth", "**.queue", `{"nodes":{"n1":{"thread_pool":{"write":{"queue":3},"search":{"queue":0}}},"n2":{"thread_pool":{"write":{"queue":0}}}}}`},
		{"partial wildcard", "nodes.n*.thread_pool.w*.completed", `{"nodes":{"n1":{"thread_pool":{"write":{"completed":10}}},"n2":{"thread_pool":{"write":{"completed":7}}}}}`},
		{"arrays pass through", "shards.index", `{"shards":[{"index":"a"},{"index":"b"}]}`},
		{"exclusion", "-nodes,-shards", `{"_shards":{"total":4,"successful":4},"persistent":{"cluster.routing.allocation.exclude._name":"node-3"}}`},
		{"nested exclusion", "-nodes.*.thread_pool", `{"_shards":{"total":4,"successful":4},"nodes":{"n1":{"name":"node-0"},"n2":{"name":"node-1"}},"shards":[{"index":"a","node":"n1"},{"index":"b","node":"n2"}],"persistent":{"cluster.routing.allocation.exclude._name":"node-3"}}`},
		{"exclusion then inclusion", "nodes.*.thread_pool.write,-nodes.*.thread_pool.write.completed", `{"nodes":{"n1":{"thread_pool":{"write":{"queue":3}}},"n2":{"thread_pool":{"write":{"queue":0}}}}}`},
		{"dotted key matched by its segments", "persistent.cluster.routing.allocation.exclude._name", `{"persistent":{"cluster.routing.allocation.exclude._name":"node-3"}}`},
		{"pattern ending inside a dotted key", "persistent.cluster", `{"persistent":{"cluster.routing.allocation.exclude._name":"node-3"}}`},
		{"nothing matches gives an empty object", "nope.none", `{}`},
		{"a pattern past a leaf selects nothing", "_shards.total.more", `{}`},
		{"blank entries are ignored", ",_shards.total,", `{"_shards":{"total":4}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendJSON(nil, ParseFilterPath(tc.filter).apply(doc))
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("filter_path=%q:\n got %s\nwant %s", tc.filter, got, tc.want)
			}
		})
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"escapes", Object{{"k\"ey", "a\\b\n\t\r\x01<>&é€"}}},
		{"invalid utf8", Object{{"k", "a\xffb"}}},
		{"numbers", []any{0, -3, int64(1) << 60, uint64(1) << 63, 0.5, 1e-7, 1e21, 123456789.125, -2.5e-9}},
		{"nested", Object{{"a", []Object{{{"b", nil}}, {{"c", true}}}}, {"d", []string{"x", "y"}}, {"e", json.RawMessage(`{"r":1}`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendJSON(nil, tc.v)
			if err != nil {
				t.Fatalf("appendJSON: %v", err)
			}
			var viaOurs, viaStd any
			if err := json.Unmarshal(got, &viaOurs); err != nil {
				t.Fatalf("our output is not JSON: %v\n%s", err, got)
			}
			std, err := json.Marshal(toStd(tc.v))
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if err := json.Unmarshal(std, &viaStd); err != nil {
				t.Fatalf("decode std: %v", err)
			}
			a, _ := json.Marshal(viaOurs)
			b, _ := json.Marshal(viaStd)
			if string(a) != string(b) {
				t.Errorf("decoded values differ:\n ours %s\n std  %s", a, b)
			}
		})
	}
}

// toStd converts a tree into values encoding/json encodes the same way (maps lose key order, which
// the comparison above does not look at).
func toStd(v any) any {
	switch t := v.(type) {
	case Object:
		m := map[string]any{}
		for _, f := range t {
			m[f.Key] = toStd(f.Val)
		}
		return m
	case []Object:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = toStd(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = toStd(e)
		}
		return out
	case float64:
		if math.IsNaN(t) {
			return 0
		}
	}
	return v
}
