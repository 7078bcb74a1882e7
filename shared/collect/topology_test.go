package collect

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// TestReadTopology: the topology read asks for everything a sample does but the shard stats, and
// gives the sample's nodes, indices, settings and copies, the copies without their sizes.
func TestReadTopology(t *testing.T) {
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", "steady.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Step()
	var (
		mu    sync.Mutex
		paths []string
	)
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{srv.URL}, Auth: opensearch.AuthNone})
	if err != nil {
		t.Fatal(err)
	}
	api := New(client, s.Now)
	read := func(name string, f func() error) []string {
		t.Helper()
		mu.Lock()
		paths = nil
		mu.Unlock()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
	var sample cluster.Sample
	var snap cluster.Snapshot
	// The first read also asks _nodes for the pools' sizes.
	read("Read", func() (err error) { _, err = api.Read(t.Context()); return })
	fullPaths := read("Read", func() (err error) { sample, err = api.Read(t.Context()); return })
	topoPaths := read("ReadTopology", func() (err error) { snap, err = api.ReadTopology(t.Context()); return })
	if !slices.Contains(fullPaths, "/_stats") {
		t.Fatalf("Read asked for %v, no /_stats: the test no longer sees the shard stats", fullPaths)
	}
	if slices.Contains(topoPaths, "/_stats") {
		t.Errorf("ReadTopology asked for the shard stats: %v", topoPaths)
	}
	if len(topoPaths) != len(fullPaths)-1 {
		t.Errorf("ReadTopology asked for %v, want %v but /_stats", topoPaths, fullPaths)
	}
	want := sample.Snapshot
	want.Copies = slices.Clone(want.Copies)
	sized := 0
	for i := range want.Copies {
		if want.Copies[i].SizeBytes > 0 {
			sized++
		}
		want.Copies[i].SizeBytes = 0
	}
	if sized == 0 {
		t.Fatal("no copy of the full read has a size: the test cannot tell")
	}
	if !reflect.DeepEqual(snap, want) {
		t.Errorf("topology:\n%+v\nwant the sample without sizes:\n%+v", snap, want)
	}
}
