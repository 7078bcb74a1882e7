//go:build integration

package it

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// A shape is a JSON document reduced to what a decoder depends on: every key path with the type of
// its value ("nodes.*.thread_pool.write.queue" → "integer"). Keys that are names (node ids, index
// names, shard numbers, task ids) become "*", so two clusters with different nodes and indices
// compare equal when their responses have the same structure; a path whose values differ in type
// lists every type, sorted and joined by "|". Array elements merge under "[]". A null counts as
// absent: the client decodes both to the zero value.
type shape map[string]string

// shapeRules says which objects of one response are keyed by names.
type shapeRules struct {
	// dynamic lists the paths (in shape notation, "" for the root) whose keys are names.
	dynamic []string
	// settings lists the paths of settings objects (flat setting name → value). Which settings a
	// cluster reports depends on its configuration, so only those in read are compared, by name.
	settings []string
	read     []string
}

// shapeOf parses body and returns its shape.
func shapeOf(body []byte, rules shapeRules) (shape, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	// Numbers stay literals so integers and floats stay apart: a float where OpenSearch sends an
	// integer fails the client's int64 fields.
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	out := shape{}
	walk(doc, "", rules, out)
	return out, nil
}

func walk(v any, path string, rules shapeRules, out shape) {
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch v := v.(type) {
	case nil:
		return
	case map[string]any:
		out.add(path, "object")
		dynamic, settings := slices.Contains(rules.dynamic, path), slices.Contains(rules.settings, path)
		for k, child := range v {
			switch {
			case settings && !slices.Contains(rules.read, k):
				continue
			case dynamic:
				k = "*"
			}
			walk(child, join(k), rules, out)
		}
	case []any:
		out.add(path, "array")
		for _, child := range v {
			walk(child, join("[]"), rules, out)
		}
	case string:
		out.add(path, "string")
	case bool:
		out.add(path, "boolean")
	case json.Number:
		if strings.ContainsAny(v.String(), ".eE") {
			out.add(path, "float")
		} else {
			out.add(path, "integer")
		}
	default:
		out.add(path, fmt.Sprintf("%T", v))
	}
}

// add records that path holds a value of type typ, besides any other type seen there.
func (s shape) add(path, typ string) {
	have, ok := s[path]
	if !ok {
		s[path] = typ
		return
	}
	types := strings.Split(have, "|")
	if slices.Contains(types, typ) {
		return
	}
	types = append(types, typ)
	slices.Sort(types)
	s[path] = strings.Join(types, "|")
}

// merge adds other's paths and types to s.
func (s shape) merge(other shape) {
	for p, types := range other {
		for _, t := range strings.Split(types, "|") {
			s.add(p, t)
		}
	}
}

// drift lists every difference between the live cluster's shape and the simulator's, sorted.
func drift(live, sim shape) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(live)) {
		st, ok := sim[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("missing in the simulator: %s (%s)", display(p), live[p]))
		case st != live[p]:
			out = append(out, fmt.Sprintf("type differs: %s is %s in OpenSearch, %s in the simulator", display(p), live[p], st))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sim)) {
		if _, ok := live[p]; !ok {
			out = append(out, fmt.Sprintf("only in the simulator: %s (%s)", display(p), sim[p]))
		}
	}
	return out
}

func display(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// TestShape holds the shape function itself to account: a comparison that could not see a
// difference would pass every contract.
func TestShape(t *testing.T) {
	rules := shapeRules{dynamic: []string{"nodes"}, settings: []string{"defaults"}, read: []string{"watermark.high"}}
	tests := []struct {
		name      string
		live, sim string
		want      []string
	}{
		{name: "node ids differ, structure equal", live: `{"nodes":{"abc":{"queue":1,"roles":["data"]}}}`,
			sim: `{"nodes":{"xyz":{"queue":7,"roles":["data","ingest"]}}}`},
		{name: "a field the simulator lacks", live: `{"nodes":{"a":{"queue":1,"active":0}}}`, sim: `{"nodes":{"b":{"queue":1}}}`,
			want: []string{"missing in the simulator: nodes.*.active (integer)"}},
		{name: "a field only the simulator sends", live: `{"nodes":{"a":{}}}`, sim: `{"nodes":{"b":{"extra":"x"}}}`,
			want: []string{"only in the simulator: nodes.*.extra (string)"}},
		{name: "float where OpenSearch sends an integer", live: `{"nodes":{"a":{"queue":1}}}`, sim: `{"nodes":{"b":{"queue":1.0}}}`,
			want: []string{"type differs: nodes.*.queue is integer in OpenSearch, float in the simulator"}},
		{name: "number as a string", live: `{"n":"1"}`, sim: `{"n":1}`,
			want: []string{"type differs: n is string in OpenSearch, integer in the simulator"}},
		{name: "one node differs from the others", live: `{"nodes":{"a":{"q":1},"b":{"q":"x"}}}`, sim: `{"nodes":{"c":{"q":1}}}`,
			want: []string{"type differs: nodes.*.q is integer|string in OpenSearch, integer in the simulator"}},
		{name: "null is absent", live: `{"r":null,"s":"x"}`, sim: `{"s":"y"}`},
		{name: "a setting that is read must be there", live: `{"defaults":{"watermark.high":"90%","other":"1"}}`,
			sim: `{"defaults":{"another":["x"]}}`, want: []string{"missing in the simulator: defaults.watermark.high (string)"}},
		{name: "a setting that is read as a list", live: `{"defaults":{"watermark.high":[]}}`, sim: `{"defaults":{"watermark.high":""}}`,
			want: []string{"type differs: defaults.watermark.high is array in OpenSearch, string in the simulator"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live, err := shapeOf([]byte(tc.live), rules)
			if err != nil {
				t.Fatal(err)
			}
			sim, err := shapeOf([]byte(tc.sim), rules)
			if err != nil {
				t.Fatal(err)
			}
			if got := drift(live, sim); !slices.Equal(got, tc.want) {
				t.Errorf("drift:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
