package opensearch

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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

// recorder keeps the body of every response its handler writes, by request path.
type recorder struct {
	next   http.Handler
	mu     sync.Mutex
	bodies map[string][]byte
}

type recordingWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rw := &recordingWriter{ResponseWriter: w}
	r.next.ServeHTTP(rw, req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies[req.URL.Path] = rw.buf.Bytes()
}

// BenchmarkDecodePetabyte decodes the responses a stats cycle reads from a 750-node,
// 100,000-copy cluster: GET _nodes/stats, _stats?level=shards, _cluster/state, _cluster/health and
// _cluster/settings, as the simulator answers the production client's filtered requests. The
// bodies are read once over HTTP before the timer; each op decodes them all.
func BenchmarkDecodePetabyte(b *testing.B) {
	s, err := sim.New(petabyteScenario(), sim.Options{})
	if err != nil {
		b.Fatalf("simulator: %v", err)
	}
	s.Step()
	rec := &recorder{next: s.Handler(), bodies: map[string][]byte{}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(b.Context(), testConfig(srv.URL))
	if err != nil {
		b.Fatalf("client: %v", err)
	}
	defer func() { _ = c.Close() }()
	ns, err := c.NodesStats(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	ss, err := c.ShardStats(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	cs, err := c.ClusterState(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Health(b.Context()); err != nil {
		b.Fatal(err)
	}
	if _, err := c.ClusterSettings(b.Context()); err != nil {
		b.Fatal(err)
	}
	if len(ns.Nodes) != 750 || len(ss.Copies) != 100000 || len(cs.Routing) != 100000 {
		b.Fatalf("got %d nodes, %d shard stats and %d routing entries, want 750, 100000 and 100000",
			len(ns.Nodes), len(ss.Copies), len(cs.Routing))
	}
	body := func(prefix string) []byte {
		for path, body := range rec.bodies {
			if strings.HasPrefix(path, prefix) {
				return body
			}
		}
		b.Fatalf("no response recorded for %s", prefix)
		return nil
	}
	decoders := []struct {
		name   string
		body   []byte
		decode func([]byte) error
	}{
		{"nodes_stats", body("/_nodes/stats"), func(p []byte) error { _, err := decodeNodesStats(p); return err }},
		{"shard_stats", body("/_stats"), func(p []byte) error { _, err := decodeShardStats(p); return err }},
		{"cluster_state", body("/_cluster/state"), func(p []byte) error { _, err := decodeClusterState(p); return err }},
		{"health", body("/_cluster/health"), func(p []byte) error { _, err := decodeHealth(p); return err }},
		{"settings", body("/_cluster/settings"), func(p []byte) error { _, err := decodeClusterSettings(p); return err }},
	}
	total := 0
	for _, d := range decoders {
		total += len(d.body)
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.decode(d.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("all", func(b *testing.B) {
		b.SetBytes(int64(total))
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range decoders {
				if err := d.decode(d.body); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
