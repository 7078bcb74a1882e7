package collect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// petabyteScenario is 750 nodes in three zones holding 10,000 indices × 5 primaries × (1 + 1
// replica) = 100,000 copies of 20 GiB, half their WRITE threads busy.
func petabyteScenario() *sim.Scenario {
	nodes := make([]sim.NodeSpec, 750)
	for i := range nodes {
		nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("node-%03d", i), Zone: fmt.Sprintf("z%d", i%3)}
	}
	write, search := sim.Constant(1500), sim.Constant(3000)
	return &sim.Scenario{
		Name: "petabyte", Seed: 750, TickSeconds: 30, DurationSeconds: 86400,
		NodeDefaults: sim.NodeSpec{WriteThreads: 8, SearchThreads: 13, HeapBytes: 31 << 30, DiskBytes: 8 << 40},
		Nodes:        nodes,
		IndexGroups: []sim.IndexGroupSpec{{
			NamePrefix: "logs-", Count: 10000, Primaries: 5, Replicas: 1, ShardBytes: 20 << 30,
			WriteLoad: &write, SearchLoad: &search, Skew: &sim.Skew{Kind: "zipf", S: 1.1},
		}},
	}
}

// replay answers each path with the body the simulator first gave for it, so the simulator's own
// cost stays out of the timer.
type replay struct {
	sim    http.Handler
	mu     sync.Mutex
	bodies map[string][]byte
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	body, ok := r.bodies[req.URL.Path]
	r.mu.Unlock()
	if !ok {
		rec := httptest.NewRecorder()
		r.sim.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			http.Error(w, rec.Body.String(), rec.Code)
			return
		}
		body = rec.Body.Bytes()
		r.mu.Lock()
		r.bodies[req.URL.Path] = body
		r.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// BenchmarkReadPetabyte reads a sample of a 750-node, 100,000-copy cluster. read is what a stats
// cycle does: the five filtered requests over HTTP on 127.0.0.1 through the production client,
// their decoding and Build; build is Build alone. The first read, which also reads _nodes and
// records the simulator's answers, is not measured.
func BenchmarkReadPetabyte(b *testing.B) {
	s, err := sim.New(petabyteScenario(), sim.Options{})
	if err != nil {
		b.Fatalf("simulator: %v", err)
	}
	s.Step()
	rp := &replay{sim: s.Handler(), bodies: map[string][]byte{}}
	srv := httptest.NewServer(rp)
	defer srv.Close()
	client, err := opensearch.New(b.Context(), opensearch.Config{URLs: []string{srv.URL}, Auth: opensearch.AuthNone, Timeout: time.Minute})
	if err != nil {
		b.Fatalf("client: %v", err)
	}
	defer func() { _ = client.Close() }()
	api := New(client, s.Now)
	first, err := api.Read(b.Context())
	if err != nil {
		b.Fatalf("read: %v", err)
	}
	if len(first.Snapshot.Nodes) != 750 || len(first.Snapshot.Copies) != 100000 {
		b.Fatalf("sample: got %d nodes and %d copies, want 750 and 100000", len(first.Snapshot.Nodes), len(first.Snapshot.Copies))
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := api.Read(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})

	ctx := b.Context()
	ns, err := client.NodesStats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ss, err := client.ShardStats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := client.ClusterState(ctx)
	if err != nil {
		b.Fatal(err)
	}
	h, err := client.Health(ctx)
	if err != nil {
		b.Fatal(err)
	}
	set, err := client.ClusterSettings(ctx)
	if err != nil {
		b.Fatal(err)
	}
	info, err := client.NodesInfo(ctx)
	if err != nil {
		b.Fatal(err)
	}
	pools := make(map[string]opensearch.NodeInfo, len(info.Nodes))
	for _, n := range info.Nodes {
		pools[n.ID] = n
	}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(s.Now(), ns, ss, cs, h, set, pools); err != nil {
				b.Fatal(err)
			}
		}
	})
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for path, body := range rp.bodies {
		b.Logf("%s: %d bytes", path, len(body))
	}
}
