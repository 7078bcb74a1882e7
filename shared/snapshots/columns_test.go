package snapshots

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

func TestColumnsRoundTrip(t *testing.T) {
	snap, ctrs := small(t0)
	cases := []struct {
		name   string
		copies []cluster.Copy
		ctrs   map[string]cluster.CopyCounters
		dt     map[string]float64
	}{
		{"no copies", nil, nil, nil},
		{"the small snapshot's copies, some with counters", snap.Copies, ctrs.Copies, nil},
		{"the small snapshot's copies, loads not derived over dt", snap.Copies, ctrs.Copies, map[string]float64{"id-node-a": 29.997, "id-node-c": 30}},
		{"loads derived over dt, and some not", derivedCopies(30.017), nil, map[string]float64{"n": 30.017, "m": 10}},
		{"odd values", []cluster.Copy{
			{Index: "ü-index", Shard: 1 << 20, State: "SOMETHING_NEW", Node: "n", RelocatingNode: "m", SizeBytes: -1,
				WriteLoad: math.Inf(1), SearchLoad: math.Copysign(0, -1), LoadKnown: true},
			{Index: "ü-index", Shard: 1 << 20, Node: "m", SizeBytes: math.MaxInt64, WriteLoad: math.SmallestNonzeroFloat64, SearchLoad: math.MaxFloat64},
			{Index: "", Shard: 0, SizeBytes: math.MinInt64},
		}, map[string]cluster.CopyCounters{
			cluster.CopyKey("ü-index", 1<<20, "n"): {IndexTimeMillis: math.MinInt64, SearchTimeMillis: -5},
			cluster.CopyKey("ü-index", 1<<20, "m"): {IndexTimeMillis: math.MaxInt64, SearchTimeMillis: 5},
		}, map[string]float64{"n": 30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := encodeColumns(nil, tc.copies, func(c *cluster.Copy) (cluster.CopyCounters, bool) {
				v, ok := tc.ctrs[cluster.CopyKey(c.Index, c.Shard, c.Node)]
				return v, ok
			}, tc.dt)
			prefix := []cluster.Copy{{Index: "kept"}}
			gotCtrs := map[string]cluster.CopyCounters{}
			got, err := decodeColumns(raw, prefix, gotCtrs)
			if err != nil {
				t.Fatal(err)
			}
			if want := append([]cluster.Copy{{Index: "kept"}}, tc.copies...); !reflect.DeepEqual(got, want) {
				t.Errorf("copies:\n got %+v\nwant %+v", got, want)
			}
			if want := tc.ctrs; len(want) > 0 && !reflect.DeepEqual(gotCtrs, want) || len(want) == 0 && len(gotCtrs) > 0 {
				t.Errorf("counters: got %v want %v", gotCtrs, want)
			}
		})
	}
}

// derivedCopies are copies whose loads cluster.Derive would give over dt seconds, but for one
// load clamped by hand and one copy whose loads are unknown.
func derivedCopies(dt float64) []cluster.Copy {
	var out []cluster.Copy
	for i := range 200 {
		w, r := int64(i*i*37), int64(i*1013)
		out = append(out, cluster.Copy{Index: fmt.Sprintf("ix-%03d", i/5), Shard: i % 5, State: cluster.StateStarted, Node: "n",
			WriteLoad: float64(w) / 1000 / dt, SearchLoad: float64(r) / 1000 / dt, LoadKnown: true})
	}
	out[7].WriteLoad = 0.1
	out[9].WriteLoad, out[9].SearchLoad, out[9].LoadKnown = 0, 0, false
	return out
}

// Loads stored as the counter growth they came from take far fewer bytes than as floats.
func TestDerivedLoadsShrink(t *testing.T) {
	none := func(*cluster.Copy) (cluster.CopyCounters, bool) { return cluster.CopyCounters{}, false }
	copies := derivedCopies(30.017)
	asDerived, err := state.Compress(encodeColumns(nil, copies, none, map[string]float64{"n": 30.017}))
	if err != nil {
		t.Fatal(err)
	}
	asFloats, err := state.Compress(encodeColumns(nil, copies, none, nil))
	if err != nil {
		t.Fatal(err)
	}
	if 2*len(asDerived) > len(asFloats) {
		t.Errorf("derived loads: %d bytes compressed, want at most half the %d of floats", len(asDerived), len(asFloats))
	}
}

// Every truncation and a wrong version or trailing bytes are errors, never a panic or a quietly
// short snapshot.
func TestDecodeColumnsRejectsCorrupt(t *testing.T) {
	snap, ctrs := small(t0)
	raw := encodeColumns(nil, snap.Copies, func(c *cluster.Copy) (cluster.CopyCounters, bool) {
		v, ok := ctrs.Copies[cluster.CopyKey(c.Index, c.Shard, c.Node)]
		return v, ok
	}, nil)
	derived := encodeColumns(nil, derivedCopies(30), func(*cluster.Copy) (cluster.CopyCounters, bool) { return cluster.CopyCounters{}, false }, map[string]float64{"n": 30})
	cases := map[string][]byte{
		"another version": append([]byte{columnsVersion + 1}, raw[1:]...),
		"trailing bytes":  append(append([]byte{}, raw...), 0),
		"empty":           {},
	}
	for n := 1; n < len(raw); n++ {
		cases[fmt.Sprintf("cut at %d of %d bytes", n, len(raw))] = raw[:n]
	}
	for n := 1; n < len(derived); n++ {
		cases[fmt.Sprintf("derived loads cut at %d of %d bytes", n, len(derived))] = derived[:n]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeColumns(b, nil, map[string]cluster.CopyCounters{})
			if !errors.Is(err, errColumns) {
				t.Errorf("got %d copies and error %v, want %v", len(got), err, errColumns)
			}
			if len(got) != 0 {
				t.Errorf("got %d copies with the error, want none", len(got))
			}
		})
	}
}

// Snapshots stored before format 2 (the indices in the meta item, JSON chunks) stay readable for
// their TTL after an upgrade.
func TestLoadFormat1(t *testing.T) {
	cases := []struct {
		name string
		snap func() (*cluster.Snapshot, cluster.Counters)
	}{
		{"small", func() (*cluster.Snapshot, cluster.Counters) { return small(t0) }},
		{"30,000 copies, a fifth unassigned", func() (*cluster.Snapshot, cluster.Counters) { return large(37, 6000) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "small" {
				t.Skip("builds a 30,000-copy snapshot")
			}
			st := store()
			snap, ctrs := tc.snap()
			key, err := saveFormat1(t.Context(), st, snap, ctrs, time.Hour, t0)
			if err != nil {
				t.Fatal(err)
			}
			got, gotCtrs, err := Load(t.Context(), st, snap.Cluster, key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, snap) || !reflect.DeepEqual(gotCtrs, &ctrs) {
				t.Errorf("loaded %d copies and %d counters, want the %d and %d saved, equal", len(got.Copies), len(gotCtrs.Copies), len(snap.Copies), len(ctrs.Copies))
			}
		})
	}
}

// manyIndices is a snapshot of n single-shard indices with one replica each on 37 nodes, named
// as tenants' indices often are, after an id that compression gets no help from.
func manyIndices(n int) (*cluster.Snapshot, cluster.Counters) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := &cluster.Snapshot{Cluster: "many", At: t0, IntervalSeconds: 30, Health: "green"}
	ctrs := cluster.Counters{At: t0, Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}}
	for i := range 37 {
		s.Nodes = append(s.Nodes, cluster.Node{ID: fmt.Sprintf("node-id-%02d", i), Name: fmt.Sprintf("node-%02d", i)})
	}
	for ix := range n {
		name := fmt.Sprintf("tenant-%016x-events", rng.Uint64())
		s.Indices = append(s.Indices, cluster.Index{Name: name, Primaries: 1, Replicas: 1})
		for r := range 2 {
			node := s.Nodes[(ix*2+r)%len(s.Nodes)].ID
			s.Copies = append(s.Copies, cluster.Copy{Index: name, Primary: r == 0, State: cluster.StateStarted, Node: node,
				SizeBytes: int64(ix) << 20, WriteLoad: float64(ix%7) / 10, LoadKnown: true})
			ctrs.Copies[cluster.CopyKey(name, 0, node)] = cluster.CopyCounters{IndexTimeMillis: int64(ix) * 1000}
		}
	}
	s.Sort()
	return s, ctrs
}

// At 40,000 single-shard indices the meta item listing every index came to 383,332 bytes, over
// the item limit. Format 2 keeps the indices in items of their own.
func TestFortyThousandIndicesFitItems(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an 80,000-copy snapshot")
	}
	snap, ctrs := manyIndices(40000)
	st := &sizeStore{Store: store()}
	key, err := Save(t.Context(), st, snap, ctrs, nil, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d items, largest %s at %d bytes", st.items, st.which, st.largest)
	if st.largest > partBytes {
		t.Errorf("largest item %s: %d bytes, want at most %d", st.which, st.largest, partBytes)
	}
	got, gotCtrs, err := Load(t.Context(), st, snap.Cluster, key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, snap) || !reflect.DeepEqual(gotCtrs, &ctrs) {
		t.Errorf("loaded %d indices and %d copies, want the %d and %d saved, equal", len(got.Indices), len(got.Copies), len(snap.Indices), len(snap.Copies))
	}
}

// The format Save replaced fails the same snapshot: the test above can fail.
func TestFortyThousandIndicesFailedFormat1(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an 80,000-copy snapshot")
	}
	snap, ctrs := manyIndices(40000)
	if _, err := saveFormat1(t.Context(), store(), snap, ctrs, time.Hour, t0); !errors.Is(err, state.ErrTooLarge) {
		t.Errorf("format 1: got %v, want %v", err, state.ErrTooLarge)
	}
}

// A snapshot derived from two samples, saved with the earlier counters, loads exactly as derived.
func TestSaveDerivedRoundTrip(t *testing.T) {
	cur, ctrs := small(t0)
	prev := cluster.Counters{At: t0.Add(-30 * time.Second), Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}}
	for id, n := range ctrs.Nodes {
		n.At = n.At.Add(-30017 * time.Millisecond)
		n.WriteCompleted -= 100
		prev.Nodes[id] = n
	}
	for k, c := range ctrs.Copies {
		prev.Copies[k] = cluster.CopyCounters{IndexTimeMillis: c.IndexTimeMillis * 2 / 3, SearchTimeMillis: c.SearchTimeMillis / 3}
	}
	snap := cluster.Derive(&prev, cluster.Sample{Snapshot: *cur, Counters: ctrs})
	snap.Sort()
	known := 0
	for _, c := range snap.Copies {
		if c.LoadKnown && c.WriteLoad > 0 {
			known++
		}
	}
	if known == 0 {
		t.Fatal("fixture: no copy has a derived load")
	}
	st := store()
	key, err := Save(t.Context(), st, &snap, ctrs, &prev, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	got, gotCtrs, err := Load(t.Context(), st, snap.Cluster, key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &snap) || !reflect.DeepEqual(gotCtrs, &ctrs) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.Copies, snap.Copies)
	}
}
