package snapshots

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

func TestLoadAgain(t *testing.T) {
	cases := []struct {
		name string
		// between changes what the first Load returned, or what is stored, before the second Load.
		between func(t *testing.T, st *state.Memory, key string, snap *cluster.Snapshot, ctrs *cluster.Counters)
		// want changes the saved snapshot into what the second Load must return.
		want func(snap *cluster.Snapshot, ctrs *cluster.Counters)
	}{
		{
			name: "the first result changed in every slice and map",
			between: func(_ *testing.T, _ *state.Memory, _ string, snap *cluster.Snapshot, ctrs *cluster.Counters) {
				snap.Cluster = "changed"
				snap.Settings.AwarenessAttributes[0] = "rack"
				snap.Settings.Filters.Exclude["_name"] = "changed"
				snap.Nodes[0].Roles[0] = "changed"
				snap.Nodes[0].Attributes["zone"] = "changed"
				snap.Nodes[1].Write.Load = 99
				snap.Indices[1].Filters.Require["zone"] = "changed"
				snap.Copies[0].Node = "changed"
				ctrs.Nodes["id-node-a"] = cluster.NodeCounters{}
				ctrs.Copies[cluster.CopyKey("logs", 0, "id-node-a")] = cluster.CopyCounters{}
			},
			want: func(*cluster.Snapshot, *cluster.Counters) {},
		},
		{
			name: "a chunk rewritten with other bytes",
			between: func(t *testing.T, st *state.Memory, key string, _ *cluster.Snapshot, _ *cluster.Counters) {
				s, c := small(t0)
				s.Nodes[1].Write.Load = 42
				if _, err := Save(t.Context(), st, s, c, nil, time.Hour, t0); err != nil {
					t.Fatal(err)
				}
			},
			want: func(snap *cluster.Snapshot, _ *cluster.Counters) { snap.Nodes[1].Write.Load = 42 },
		},
		{
			name: "the meta item rewritten with other bytes",
			between: func(t *testing.T, st *state.Memory, key string, _ *cluster.Snapshot, _ *cluster.Counters) {
				s, c := small(t0)
				s.Health = "red"
				if _, err := Save(t.Context(), st, s, c, nil, time.Hour, t0); err != nil {
					t.Fatal(err)
				}
			},
			want: func(snap *cluster.Snapshot, _ *cluster.Counters) { snap.Health = "red" },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := store()
			snap, ctrs := small(t0)
			key, err := Save(t.Context(), st, snap, ctrs, nil, time.Hour, t0)
			if err != nil {
				t.Fatal(err)
			}
			first, firstCtrs, err := Load(t.Context(), st, "prod", key)
			if err != nil {
				t.Fatal(err)
			}
			tc.between(t, st, key, first, firstCtrs)
			got, gotCtrs, err := Load(t.Context(), st, "prod", key)
			if err != nil {
				t.Fatal(err)
			}
			want, wantCtrs := small(t0)
			tc.want(want, &wantCtrs)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("second Load:\n got %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(gotCtrs, &wantCtrs) {
				t.Errorf("second Load's counters:\n got %+v\nwant %+v", gotCtrs, &wantCtrs)
			}
		})
	}
}

// TestCloneCoversEveryReference fails when a type a snapshot or its counters hold gains a slice,
// map or pointer: cloneSnapshot and cloneCounters must then copy it too, and this list say so.
func TestCloneCoversEveryReference(t *testing.T) {
	want := []string{
		"Counters.Copies", "Counters.Nodes",
		"Filters.Exclude", "Filters.Include", "Filters.Require",
		"Node.Attributes", "Node.Roles",
		"Settings.AwarenessAttributes", "Settings.ForcedAwareness",
		"Snapshot.Copies", "Snapshot.Indices", "Snapshot.Nodes",
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
	walk(reflect.TypeFor[cluster.Snapshot]())
	walk(reflect.TypeFor[cluster.Counters]())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("fields holding references:\n got %v\nwant %v", got, want)
	}
}

// TestIndicesItemsDecodedAlike loads snapshots one after the other whose indices items are the
// ones before byte for byte or not, through the indices items kept: each Load must give the
// snapshot saved, and no change a caller makes to its indices may reach a later Load.
func TestIndicesItemsDecodedAlike(t *testing.T) {
	st := store()
	Forget()
	steps := []struct {
		name string
		edit func(*cluster.Snapshot)
	}{
		{"first", func(*cluster.Snapshot) {}},
		{"the nodes' loads changed, the indices not", func(s *cluster.Snapshot) { s.Nodes[1].Write.Load = 42 }},
		{"an index's replicas changed", func(s *cluster.Snapshot) { s.Indices[0].Replicas = 2 }},
		{"an index's filter changed", func(s *cluster.Snapshot) { s.Indices[1].Filters.Require["zone"] = "b" }},
		{"as first again", func(*cluster.Snapshot) {}},
	}
	for i, s := range steps {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		snap, ctrs := small(at)
		s.edit(snap)
		key, err := Save(t.Context(), st, snap, ctrs, nil, time.Hour, at)
		if err != nil {
			t.Fatal(err)
		}
		// The whole snapshot is not kept: only indices items may be.
		cache.mu.Lock()
		cache.entries = nil
		cache.mu.Unlock()
		got, _, err := Load(t.Context(), st, "prod", key)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, snap) {
			t.Fatalf("%s: Load\n got %+v\nwant %+v", s.name, got, snap)
		}
		for j := range got.Indices {
			for _, m := range []map[string]string{got.Indices[j].Filters.Include, got.Indices[j].Filters.Exclude, got.Indices[j].Filters.Require} {
				if m != nil {
					m["mutated"] = "yes"
				}
			}
			got.Indices[j].Replicas = 99
		}
	}
	if len(indexChunks.last) == 0 {
		t.Error("no indices item kept")
	}
}
