package opensearch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestStateMemoDecodesAlike decodes a run of cluster state answers, each the one before with one
// thing changed, through one memo and without it: every result must be the same, and no caller's
// change to a result may reach a later one.
func TestStateMemoDecodesAlike(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "cluster_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(change func(doc map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		change(doc)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	obj := func(v any, path ...string) map[string]any {
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v.(map[string]any)
	}
	first := edit(func(map[string]any) {})
	steps := []struct {
		name string
		body []byte
		err  bool
	}{
		{"first answer", first, false},
		{"the same bytes again", first, false},
		{"one index's replicas changed", edit(func(doc map[string]any) {
			obj(doc, "metadata", "indices", "logs-a", "settings", "index")["number_of_replicas"] = "2"
		}), false},
		{"one index gains an exclusion", edit(func(doc map[string]any) {
			obj(doc, "metadata", "indices", "logs-a", "settings", "index")["routing"] = map[string]any{
				"allocation": map[string]any{"exclude": map[string]any{"_name": "node-1"}}}
		}), false},
		{"a copy moved, metadata as before", edit(func(doc map[string]any) {
			obj(doc, "metadata", "indices", "logs-a", "settings", "index")["routing"] = map[string]any{
				"allocation": map[string]any{"exclude": map[string]any{"_name": "node-1"}}}
			shards := obj(doc, "routing_table", "indices", "logs-a", "shards")
			for _, copies := range shards {
				c := copies.([]any)[0].(map[string]any)
				c["node"] = "c4tTNPzcRsi2iqSLw9Xh3g"
				break
			}
		}), false},
		{"an index closed", edit(func(doc map[string]any) {
			obj(doc, "metadata", "indices", "archive-2024")["state"] = "close"
		}), false},
		{"an index deleted", edit(func(doc map[string]any) {
			delete(obj(doc, "metadata", "indices"), "archive-2024")
			delete(obj(doc, "routing_table", "indices"), "archive-2024")
		}), false},
		{"a node's attribute changed", edit(func(doc map[string]any) {
			for _, n := range obj(doc, "nodes") {
				n.(map[string]any)["attributes"].(map[string]any)["zone"] = "c"
				break
			}
		}), false},
		{"a settings error", edit(func(doc map[string]any) {
			obj(doc, "metadata", "indices", "logs-a", "settings", "index")["number_of_replicas"] = "two"
		}), true},
		{"the first answer once more", first, false},
	}
	var memo stateMemo
	for _, s := range steps {
		got, gotErr := decodeClusterStateMemo(s.body, unmarshalLarge, &memo)
		want, wantErr := decodeClusterStateWith(s.body, unmarshalLarge)
		if (gotErr != nil) != s.err || (wantErr != nil) != s.err {
			t.Fatalf("%s: errors %v with the memo and %v without, want an error: %v", s.name, gotErr, wantErr, s.err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: with the memo\n%+v\nwithout\n%+v", s.name, got, want)
		}
		// What a caller does to its result stays with it.
		for i := range got.Indices {
			ix := &got.Indices[i]
			ix.Settings["index.mutated"] = "yes"
			for _, m := range []map[string]string{ix.Filters.Include, ix.Filters.Exclude, ix.Filters.Require} {
				if m != nil {
					m["_mutated"] = "yes"
				}
			}
		}
		for i := range got.Nodes {
			if got.Nodes[i].Attributes != nil {
				got.Nodes[i].Attributes["mutated"] = "yes"
			}
		}
		for i := range got.Routing {
			got.Routing[i].Node = "mutated"
		}
	}
}

// TestCloneClusterStateCoversEveryReference lists the fields of a ClusterState that hold references
// (slices, maps, pointers): cloneClusterState must copy each, and a field added later fails this
// test until it is copied there too and listed here.
func TestCloneClusterStateCoversEveryReference(t *testing.T) {
	want := []string{
		"AllocationFilters.Exclude", "AllocationFilters.Include", "AllocationFilters.Require",
		"ClusterState.Indices", "ClusterState.Nodes", "ClusterState.Routing",
		"IndexMetadata.Settings",
		"StateNode.Attributes",
	}
	var got []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		if seen[ty] || ty.Kind() != reflect.Struct {
			return
		}
		seen[ty] = true
		for f := range ty.Fields() {
			if !f.IsExported() {
				continue
			}
			ft := f.Type
			switch ft.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				got = append(got, ty.Name()+"."+f.Name)
				for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map || ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
			}
			walk(ft)
		}
	}
	walk(reflect.TypeFor[ClusterState]())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("fields holding references:\n got %v\nwant %v", got, want)
	}
}
