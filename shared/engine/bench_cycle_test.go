package engine_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
)

// BenchmarkCyclePetabyte measures one whole cycle of the 750-node, 100,000-copy cluster (see
// benchCycle).
func BenchmarkCyclePetabyte(b *testing.B) { benchCycle(b, ingestPetabyte) }

// BenchmarkCycle30k measures one whole cycle of the 37-node, 30,000-copy cluster (see benchCycle).
func BenchmarkCycle30k(b *testing.B) { benchCycle(b, ingest30k) }

// benchCycle measures one whole Lambda cycle of a cluster of the given shape, served over HTTP by
// the simulator in its own process: ingest (read, derive, store the snapshot), detect (load it,
// plan, store the plan) and move (load plan and snapshot, check, act), with dry-run off, as the
// functions run on one tick. Each function starts with no decoded snapshot kept, as a Lambda of
// its own would. The store is the embedded one behind a state.Meter, which counts what DynamoDB
// would bill.
//
// Reported per cycle: ns/op (wall time); cpu-ms, the CPU time this process spent (user and system,
// garbage collection included; the simulator's process is not counted), which a loaded machine
// inflates far less than wall time; ingest-ms, detect-ms, move-ms, each function's share;
// plan-ms, the planner's own time inside detect; peak-heap-MiB, the highest heap (live and not
// yet collected objects) sampled every millisecond; ddb-write-bytes, ddb-write-units and
// ddb-writes, the state written; ddb-read-bytes, the state read.
func benchCycle(b *testing.B, shape ingestShape) {
	ctx := b.Context()
	p := startBenchSimProcess(b, shape)
	client, err := opensearch.New(ctx, opensearch.Config{URLs: []string{p.url}, Auth: opensearch.AuthNone, Timeout: 5 * time.Minute})
	if err != nil {
		b.Fatalf("client: %v", err)
	}
	api := collect.New(client, p.Now)
	cfg := config.Default()
	cfg.Safety.DryRun = false
	cfg.Clusters = []config.Cluster{{Name: "big", URLs: []string{p.url}, Auth: string(opensearch.AuthNone)}}
	if err := cfg.Validate(); err != nil {
		b.Fatalf("config: %v", err)
	}
	kinds := &benchKinds{Store: state.NewMemory(p.Now), bytes: map[string]int64{}}
	meter := state.NewMeter(kinds)
	e := &engine.Engine{
		Store:   meter,
		Bus:     &bus.Memory{},
		Cluster: func(string) (engine.ClusterAPI, error) { return api, nil },
		Clock:   p.Now,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config:  cfg,
	}
	copies := shape.copies()
	var ingestD, detectD, moveD, planD time.Duration
	var moves int
	// Each function starts with nothing decoded kept: no snapshot, no cluster state answer, no
	// ledger entry.
	forget := func() {
		snapshots.Forget()
		client.Forget()
		engine.ForgetDecoded()
	}
	cycle := func() {
		t0 := time.Now()
		forget()
		res, err := e.Ingest(ctx, []string{"big"})
		if err != nil {
			b.Fatalf("ingest: %v", err)
		}
		if n := len(res[0].Snapshot.Copies); n != copies {
			b.Fatalf("snapshot holds %d copies, want %d", n, copies)
		}
		t1 := time.Now()
		forget()
		dr, err := e.Detect(ctx, "big", res[0].SnapshotKey)
		if err != nil {
			b.Fatalf("detect: %v", err)
		}
		t2 := time.Now()
		if len(dr.Plan.Moves) > 0 {
			forget()
			mr, err := e.Move(ctx, "big", dr.PlanKey)
			if err != nil {
				b.Fatalf("move: %v", err)
			}
			for _, o := range mr.Outcomes {
				if o.Outcome == engine.OutcomeExecuted {
					moves++
				}
			}
		}
		t3 := time.Now()
		ingestD += t1.Sub(t0)
		detectD += t2.Sub(t1)
		moveD += t3.Sub(t2)
		planD += dr.PlanTime
	}
	// The first cycle has no previous counters and reads _nodes once: a cold start, not measured.
	cycle()
	p.Step(b)
	cycle()
	ingestD, detectD, moveD, planD, moves = 0, 0, 0, 0, 0

	var peak uint64
	var used state.Usage
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p.Step(b)
		runtime.GC()
		before := meter.Usage()
		h := startBenchHeapPeak()
		cpu0 := benchCPU(b)
		b.StartTimer()

		cycle()

		b.StopTimer()
		cpu += benchCPU(b) - cpu0
		peak = max(peak, h.Stop())
		u := meter.Usage().Sub(before)
		used.Writes += u.Writes
		used.WriteBytes += u.WriteBytes
		used.WriteUnits += u.WriteUnits
		used.ReadBytes += u.ReadBytes
		b.StartTimer()
	}
	n := float64(b.N)
	b.Logf("bytes written per cycle by kind of item, warm-up cycles included: %v", kinds.perCycle(b.N+2))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(cpu), "cpu-ms")
	b.ReportMetric(ms(ingestD), "ingest-ms")
	b.ReportMetric(ms(detectD), "detect-ms")
	b.ReportMetric(ms(moveD), "move-ms")
	b.ReportMetric(ms(planD), "plan-ms")
	b.ReportMetric(float64(moves)/n, "moves")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(used.WriteBytes)/n, "ddb-write-bytes")
	b.ReportMetric(float64(used.WriteUnits)/n, "ddb-write-units")
	b.ReportMetric(float64(used.Writes)/n, "ddb-writes")
	b.ReportMetric(float64(used.ReadBytes)/n, "ddb-read-bytes")
}

// benchKinds tallies the bytes of the values written, by the kind of item (its sort key up to the
// first '#', and the snapshot's chunk kinds).
type benchKinds struct {
	state.Store
	mu    sync.Mutex
	bytes map[string]int64
}

func (k *benchKinds) note(items ...state.Item) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, it := range items {
		kind, _, _ := strings.Cut(it.Key.SK, "#")
		for _, part := range []string{"#meta", "#copies#", "#nodes#", "#indices#", "#part#", "#memory", "#latest"} {
			if strings.Contains(it.Key.SK, part) {
				kind += part
			}
		}
		k.bytes[kind] += int64(len(it.Value))
	}
}

func (k *benchKinds) perCycle(cycles int) map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int64{}
	for kind, n := range k.bytes {
		out[kind] = n / int64(cycles)
	}
	return out
}

func (k *benchKinds) Put(ctx context.Context, it state.Item, c state.Condition) (state.Item, error) {
	k.note(it)
	return k.Store.Put(ctx, it, c)
}

func (k *benchKinds) BatchPut(ctx context.Context, items []state.Item) error {
	k.note(items...)
	return k.Store.BatchPut(ctx, items)
}

// benchCPU is the CPU time this process has used, user and system.
func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
