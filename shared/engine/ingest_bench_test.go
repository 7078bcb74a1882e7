package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
)

// ingestShape is the size of a benchmark cluster: nodes in three zones and one index group, with
// zipf-skewed loads so counters differ from copy to copy as they do in a real cluster.
type ingestShape struct {
	name                      string
	nodes, indices, primaries int
	replicas                  int
	shardBytes, diskBytes     int64
	writeLoad, searchLoad     float64
}

func (sh ingestShape) copies() int { return sh.indices * sh.primaries * (1 + sh.replicas) }

// The performance target: one ingest of a 30,000-shard, 37-node
// cluster in under 2 s and 128 MiB, the smallest Lambda's memory.
var ingest30k = ingestShape{
	name:  "30k",
	nodes: 37, indices: 5000, primaries: 3, replicas: 1, // 30,000 shard copies in all
	// 4 TiB disks keep the 811 GiB of copies a node holds far under the disk watermark.
	shardBytes: 1 << 30, diskBytes: 4 << 40,
	writeLoad: 150, searchLoad: 200,
}

// ingestBenchShapes are the shapes a benchmark may ask the simulator process for, by name.
var ingestBenchShapes = map[string]ingestShape{ingest30k.name: ingest30k, ingestPetabyte.name: ingestPetabyte}

// ingestBenchScenario is a benchmark cluster, built in code: the shape's nodes in three zones and
// one index group of its indices × primaries × (1 + replicas) shard copies.
func ingestBenchScenario(sh ingestShape) *sim.Scenario {
	nodes := make([]sim.NodeSpec, sh.nodes)
	for i := range nodes {
		nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("node-%02d", i), Zone: fmt.Sprintf("z%d", i%3)}
	}
	write, search := sim.Constant(sh.writeLoad), sim.Constant(sh.searchLoad)
	return &sim.Scenario{
		Name: "ingest-" + sh.name, Seed: 42, TickSeconds: 30, DurationSeconds: 86400,
		// Threads and heap as the scenario format's node_defaults (docs/scenarios.md).
		NodeDefaults: sim.NodeSpec{WriteThreads: 8, SearchThreads: 13, HeapBytes: 8 << 30, DiskBytes: sh.diskBytes},
		Nodes:        nodes,
		IndexGroups: []sim.IndexGroupSpec{{
			NamePrefix: "logs-", Count: sh.indices, Primaries: sh.primaries, Replicas: sh.replicas,
			ShardBytes: sh.shardBytes, WriteLoad: &write, SearchLoad: &search,
			Skew: &sim.Skew{Kind: "zipf", S: 1.1},
		}},
	}
}

// benchHeapPeak samples the live heap while an operation runs. runtime/metrics reads without stopping
// the world, so sampling every millisecond barely disturbs what it measures.
type benchHeapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

const benchHeapMetric = "/memory/classes/heap/objects:bytes"

func readBenchHeap(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startBenchHeapPeak() *benchHeapPeak {
	h := &benchHeapPeak{stop: make(chan struct{})}
	s := []metrics.Sample{{Name: benchHeapMetric}}
	h.peak = readBenchHeap(s)
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				h.peak = max(h.peak, readBenchHeap(s))
				return
			case <-t.C:
				h.peak = max(h.peak, readBenchHeap(s))
			}
		}
	}()
	return h
}

func (h *benchHeapPeak) Stop() uint64 {
	close(h.stop)
	h.done.Wait()
	return h.peak
}

// benchSimEnv makes this test binary the simulator's process (see TestSimServerProcess); its value
// names the shape of ingestBenchShapes to simulate.
const benchSimEnv = "SHARDWISE_BENCH_SIMULATOR"

// TestSimServerProcess is the ingest benchmarks' simulator process, not a test: a benchmark runs
// this test binary again with benchSimEnv set, so the simulator's model and the memory it spends
// answering are not counted as the ingest's, as they would not be in Lambda. It prints the URL and
// the virtual time, then advances one tick and prints the new virtual time for each line read
// from stdin, until stdin closes.
func TestSimServerProcess(t *testing.T) {
	shape, ok := ingestBenchShapes[os.Getenv(benchSimEnv)]
	if !ok {
		t.Skip("the simulator process of the ingest benchmarks; runs only when a benchmark starts it")
	}
	s, err := sim.New(ingestBenchScenario(shape), sim.Options{})
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	s.Step()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	fmt.Printf("http://%s %s\n", ln.Addr(), s.Now().Format(time.RFC3339Nano))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		s.Step()
		fmt.Println(s.Now().Format(time.RFC3339Nano))
	}
}

// benchSimProcess is the benchmark's handle on the simulator process.
type benchSimProcess struct {
	url   string
	now   atomic.Pointer[time.Time]
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startBenchSimProcess(b *testing.B, shape ingestShape) *benchSimProcess {
	b.Helper()
	// b.Context is cancelled before cleanups run, which would kill the process before the cleanup
	// lets it end by closing its stdin.
	cmd := exec.CommandContext(context.WithoutCancel(b.Context()), os.Args[0], "-test.run=^TestSimServerProcess$")
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), benchSimEnv+"="+shape.name)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatalf("simulator stdin: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatalf("simulator stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start simulator: %v", err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("simulator process: %v", err)
		}
	})
	p := &benchSimProcess{stdin: stdin, out: bufio.NewScanner(stdout)}
	if !p.out.Scan() {
		b.Fatalf("simulator printed no address: %v", p.out.Err())
	}
	url, at, ok := strings.Cut(p.out.Text(), " ")
	if !ok {
		b.Fatalf("simulator said %q, want URL and time", p.out.Text())
	}
	p.url = url
	p.setNow(b, at)
	return p
}

func (p *benchSimProcess) setNow(b *testing.B, s string) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		b.Fatalf("simulator time %q: %v", s, err)
	}
	p.now.Store(&t)
}

// Now is the simulator's virtual time as of its last tick.
func (p *benchSimProcess) Now() time.Time { return *p.now.Load() }

// Step advances the simulator one tick.
func (p *benchSimProcess) Step(b *testing.B) {
	if _, err := io.WriteString(p.stdin, "step\n"); err != nil {
		b.Fatalf("simulator step: %v", err)
	}
	if !p.out.Scan() {
		b.Fatalf("simulator step: no answer: %v", p.out.Err())
	}
	p.setNow(b, p.out.Text())
}

// benchCountingDialer counts the bytes read from every connection it dials: what the client receives
// over HTTP, headers included.
type benchCountingDialer struct {
	net.Dialer
	read atomic.Int64
}

func (d *benchCountingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return benchCountingConn{Conn: c, read: &d.read}, nil
}

type benchCountingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c benchCountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// BenchmarkIngest30k measures one ingest of the 30,000-copy cluster (see benchIngest).
func BenchmarkIngest30k(b *testing.B) { benchIngest(b, ingest30k) }

// benchIngest measures one ingest of a cluster of the given shape, served over HTTP on 127.0.0.1
// by the simulator in its own process, through the production client, collector, rate derivation
// and snapshot storage (the embedded store; in Lambda it is DynamoDB). Each op follows a simulator
// tick, so every counter moved and rates are derived from the previous op's counters, as in a warm
// Lambda.
//
// Reported per op: wall time (ns/op); rx-bytes/op, the bytes read from the client's connections;
// peak-heap-MiB, the highest heap (live and not yet collected objects, runtime/metrics
// /memory/classes/heap/objects:bytes) sampled every millisecond during any op; above-baseline-MiB,
// the largest rise of that figure over its value after a GC just before the op, which leaves out
// the snapshots the embedded store holds (in Lambda they are in DynamoDB). B/op and allocs/op are
// everything allocated, garbage included.
func benchIngest(b *testing.B, shape ingestShape) {
	ctx := b.Context()
	p := startBenchSimProcess(b, shape)

	dialer := &benchCountingDialer{}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = dialer.DialContext
	client, err := opensearch.New(ctx, opensearch.Config{URLs: []string{p.url}, Auth: opensearch.AuthNone, Transport: transport})
	if err != nil {
		b.Fatalf("client: %v", err)
	}
	api := collect.New(client, p.Now)
	cfg := config.Default()
	cfg.Clusters = []config.Cluster{{Name: "big", URLs: []string{p.url}, Auth: string(opensearch.AuthNone)}}
	if err := cfg.Validate(); err != nil {
		b.Fatalf("config: %v", err)
	}
	e := &engine.Engine{
		Store:   state.NewMemory(p.Now),
		Bus:     &bus.Memory{},
		Cluster: func(string) (engine.ClusterAPI, error) { return api, nil },
		Clock:   p.Now,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config:  cfg,
	}
	copies := shape.copies()
	ingest := func() engine.IngestResult {
		res, err := e.Ingest(ctx, []string{"big"})
		if err != nil {
			b.Fatalf("ingest: %v", err)
		}
		if n := len(res[0].Snapshot.Copies); n != copies {
			b.Fatalf("snapshot holds %d copies, want %d", n, copies)
		}
		return res[0]
	}
	// The first ingest has no previous counters and reads _nodes once: a cold start, not measured.
	ingest()

	var rx int64
	var peak, above uint64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p.Step(b)
		runtime.GC()
		base := readBenchHeap([]metrics.Sample{{Name: benchHeapMetric}})
		before := dialer.read.Load()
		h := startBenchHeapPeak()
		b.StartTimer()

		r := ingest()

		b.StopTimer()
		hp := h.Stop()
		rx += dialer.read.Load() - before
		peak = max(peak, hp)
		above = max(above, hp-min(hp, base))
		if r.Snapshot.IntervalSeconds <= 0 {
			b.Fatalf("no interval between samples: rates were not derived")
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(rx)/float64(b.N), "rx-bytes/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(above)/(1<<20), "above-baseline-MiB")
}
