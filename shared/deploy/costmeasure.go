package deploy

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/runner"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// What one cluster's cycles ask of AWS, measured by running the functions against the simulator
// with a store and a metric sink that count: the request counts the cost table prices. The
// functions write what they write whatever the store, so a change to what they store (diff-only
// writes, say) shows in the next measurement.

// Measured is a simulate run's requests, per 30-second cycle of one cluster.
type Measured struct {
	Scenario string
	Nodes    int
	Copies   int
	Cycles   int
	// DynamoDB request units per cycle: a write unit per started KiB of each item written or
	// deleted, a read unit per started 4 KiB read strongly consistently (the state store's reads).
	WriteUnits, ReadUnits float64
	// WriteBytes is the bytes of the items written per cycle.
	WriteBytes float64
	// StoredBytes is the size of the live items at the end of the run: what DynamoDB bills storage
	// and point-in-time recovery on.
	StoredBytes float64
	// LogBytes is the functions' own log lines per cycle, the EMF metrics lines excluded.
	LogBytes float64
	// Series are the distinct custom metrics (name and dimensions) the functions published.
	Series []string
	// Datapoints is the metric values published per cycle, each a part of an EMF log line.
	Datapoints float64
	// MoveCycles is the share of cycles whose plan had moves (the move function runs on those).
	MoveCycles float64
}

// costScenario is the cluster the cost table is measured on: 10 nodes and 2,000 copies (100
// indices of 10 primaries and a replica each), a steady skewed write load at about a third of the
// WRITE threads, for 30 minutes.
const costScenario = `{
	"name": "cost-10-nodes-2000-copies",
	"description": "The cost table's cluster: 10 nodes, 100 indices of 10 primaries and 1 replica, a steady zipf-skewed write load.",
	"seed": 7, "tick_seconds": 30, "duration_seconds": 1800,
	"cluster": {"builtin_balancer": true},
	"node_defaults": {"write_threads": 8, "search_threads": 13, "heap_bytes": 8589934592, "disk_bytes": 10995116277760},
	"nodes": [{"name": "node-0"}, {"name": "node-1"}, {"name": "node-2"}, {"name": "node-3"}, {"name": "node-4"},
		{"name": "node-5"}, {"name": "node-6"}, {"name": "node-7"}, {"name": "node-8"}, {"name": "node-9"}],
	"index_groups": [{"name_prefix": "logs-", "count": 100, "primaries": 10, "replicas": 1, "shard_bytes": 1073741824,
		"write_load": {"kind": "constant", "value": 24}, "search_load": {"kind": "constant", "value": 20},
		"skew": {"kind": "zipf", "s": 1.1}}]
}`

// Measure runs the cost scenario through the functions, dry run (what shardwise stores and
// publishes does not depend on it), and counts their requests.
func Measure(ctx context.Context) (Measured, error) {
	sc, err := sim.ParseScenario([]byte(costScenario))
	if err != nil {
		return Measured{}, fmt.Errorf("cost scenario: %w", err)
	}
	var store *countingStore
	sink := &countingSink{series: map[string]bool{}}
	logs := &byteCounter{}
	moveCycles := 0
	cfg := config.Default()
	copies := 0
	res, err := runner.Run(ctx, sc, runner.Options{
		Config: cfg,
		Log:    logs,
		// What the functions publish (handler.Env), not all the engine measures.
		Metrics: telemetry.PublishedOnly(sink),
		Store: func(clock state.Clock) state.Store {
			store = &countingStore{Store: state.NewMemory(clock)}
			return store
		},
		OnTick: func(t runner.Tick) {
			copies = 0
			for _, n := range t.Report.Nodes {
				copies += n.Shards
			}
			if len(t.Moves) > 0 {
				moveCycles++
			}
		},
	})
	if err != nil {
		return Measured{}, fmt.Errorf("cost scenario: %w", err)
	}
	_ = res
	cycles := float64(sc.DurationSeconds / sc.TickSeconds)
	m := Measured{
		Scenario:   sc.Name,
		Nodes:      len(sc.Nodes),
		Copies:     copies,
		Cycles:     int(cycles),
		WriteUnits: store.writeUnits / cycles, ReadUnits: store.readUnits / cycles,
		WriteBytes: store.writeBytes / cycles,
		LogBytes:   float64(logs.n) / cycles,
		Series: slices.Sorted(func(yield func(string) bool) {
			for s := range sink.series {
				if !yield(s) {
					return
				}
			}
		}),
		Datapoints: float64(sink.points) / cycles,
		MoveCycles: float64(moveCycles) / cycles,
	}
	if m.StoredBytes, err = store.liveBytes(ctx); err != nil {
		return Measured{}, err
	}
	return m, nil
}

// itemOverheadBytes is what DynamoDB counts for an item beyond its value: the attribute names
// and the key, version, expiry and write-token attributes of shared/state's items (about 100
// bytes; DynamoDB's item size is the sum of its attribute names and values).
const itemOverheadBytes = 100

func itemBytes(it state.Item) int {
	return len(it.Key.PK) + len(it.Key.SK) + len(it.Value) + itemOverheadBytes
}

func units(bytes, per int) float64 { return float64((bytes + per - 1) / per) }

// countingStore counts the request units of every call, as DynamoDB on-demand bills them.
type countingStore struct {
	state.Store
	mu                                sync.Mutex
	writeUnits, readUnits, writeBytes float64
}

func (s *countingStore) count(write, read, bytes float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeUnits += write
	s.readUnits += read
	s.writeBytes += bytes
}

func (s *countingStore) Get(ctx context.Context, key state.Key) (state.Item, error) {
	it, err := s.Store.Get(ctx, key)
	s.count(0, max(units(itemBytes(it), 4096), 1), 0)
	return it, err
}

func (s *countingStore) Put(ctx context.Context, item state.Item, cond state.Condition) (state.Item, error) {
	out, err := s.Store.Put(ctx, item, cond)
	n := itemBytes(item)
	s.count(units(n, 1024), 0, float64(n))
	return out, err
}

func (s *countingStore) Delete(ctx context.Context, key state.Key, cond state.Condition) error {
	err := s.Store.Delete(ctx, key, cond)
	s.count(1, 0, 0)
	return err
}

func (s *countingStore) Query(ctx context.Context, pk, prefix string) ([]state.Item, error) {
	items, err := s.Store.Query(ctx, pk, prefix)
	total := 0
	for _, it := range items {
		total += itemBytes(it)
	}
	s.count(0, max(units(total, 4096), 1), 0)
	return items, err
}

// BatchPut reads each item's live version first (BatchGetItem), then writes it.
func (s *countingStore) BatchPut(ctx context.Context, items []state.Item) error {
	err := s.Store.BatchPut(ctx, items)
	var w, r, b float64
	for _, it := range items {
		n := itemBytes(it)
		w += units(n, 1024)
		r += units(n, 4096)
		b += float64(n)
	}
	s.count(w, r, b)
	return err
}

// liveBytes is the size of every live item at the end of the run.
func (s *countingStore) liveBytes(ctx context.Context) (float64, error) {
	items, err := s.Store.Query(ctx, snapshots.PK(runner.ClusterName), "")
	if err != nil {
		return 0, fmt.Errorf("cost scenario: read the stored items: %w", err)
	}
	total := 0
	for _, it := range items {
		total += itemBytes(it)
	}
	return float64(total), nil
}

// countingSink counts the metric values published and the distinct series.
type countingSink struct {
	mu     sync.Mutex
	series map[string]bool
	points int
}

func (c *countingSink) Add(name string, _ telemetry.Unit, _ float64, dims ...telemetry.Dimension) {
	var names []string
	for _, d := range dims {
		names = append(names, d.Name+"="+d.Value)
	}
	slices.Sort(names)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.series[name+"{"+strings.Join(names, ",")+"}"] = true
	c.points++
}

// byteCounter counts the bytes of the functions' log lines.
type byteCounter struct {
	mu sync.Mutex
	n  int
}

func (b *byteCounter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += len(p)
	return len(p), nil
}

var _ io.Writer = (*byteCounter)(nil)
