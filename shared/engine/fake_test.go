package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/state"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// world is a cluster whose counters advance with the loads it is given, so that two reads some
// seconds apart derive exactly those loads. It is the clock of the engine and the store too.
type world struct {
	mu      sync.Mutex
	at      time.Time
	nodes   []cluster.Node
	indices []cluster.Index
	copies  []cluster.Copy
	// write and search are each copy's busy threads, by cluster.CopyKey.
	write, search map[string]float64
	// completions is each node's WRITE completions per second, by node id.
	completions map[string]float64
	ctrs        cluster.Counters
	// limits are the cluster's recovery limits a read reports (OpenSearch's defaults when zero).
	limits cluster.RecoveryLimits
	// clusterExclude is cluster.routing.allocation.exclude._name ("" unset).
	clusterExclude string
}

func newWorld(nodes ...string) *world {
	w := &world{at: t0, write: map[string]float64{}, search: map[string]float64{}, completions: map[string]float64{},
		ctrs: cluster.Counters{Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}}}
	for _, n := range nodes {
		w.nodes = append(w.nodes, cluster.Node{ID: "id-" + n, Name: n, Roles: []string{"data", "ingest"},
			HeapUsedBytes: 2 << 30, HeapMaxBytes: 8 << 30, DiskTotalBytes: 100 << 30, DiskAvailableBytes: 100 << 30,
			Write: cluster.Pool{Threads: 8}, Search: cluster.Pool{Threads: 13}})
		w.completions["id-"+n] = 100
	}
	w.stamp()
	return w
}

// Now is the world's time.
func (w *world) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

func (w *world) node(name string) *cluster.Node {
	for i := range w.nodes {
		if w.nodes[i].Name == name {
			return &w.nodes[i]
		}
	}
	panic("no node " + name)
}

// index adds an index whose shard i has copies on placement[i] (primary first), each bearing
// writes[i] WRITE threads; searches[i], when given, spreads over the shard's copies.
// sized makes every copy of the index size bytes (index gives each 1 GiB).
func (w *world) sized(index string, size int64) *world {
	for i := range w.copies {
		c := &w.copies[i]
		if c.Index != index {
			continue
		}
		if c.Node != "" {
			for j := range w.nodes {
				if w.nodes[j].ID == c.Node {
					w.nodes[j].DiskAvailableBytes -= size - c.SizeBytes
				}
			}
		}
		c.SizeBytes = size
	}
	return w
}

func (w *world) index(name string, replicas int, writes, searches []float64, placement ...[]string) *world {
	w.indices = append(w.indices, cluster.Index{Name: name, Primaries: len(placement), Replicas: replicas})
	for sh, nodes := range placement {
		for i, n := range nodes {
			c := cluster.Copy{Index: name, Shard: sh, Primary: i == 0, State: cluster.StateStarted, SizeBytes: 1 << 30}
			if n == "" {
				c.State = cluster.StateUnassigned
				w.copies = append(w.copies, c)
				continue
			}
			node := w.node(n)
			c.Node = node.ID
			node.DiskAvailableBytes -= c.SizeBytes
			w.copies = append(w.copies, c)
			k := cluster.CopyKey(name, sh, node.ID)
			w.write[k] = writes[sh]
			if searches != nil {
				w.search[k] = searches[sh] / float64(len(nodes))
			}
			w.ctrs.Copies[k] = cluster.CopyCounters{IndexTimeMillis: 1000, SearchTimeMillis: 1000}
		}
	}
	return w
}

// queueing gives a node a WRITE queue; with 100 completions a second its Little's-law latency is
// queue/100 seconds.
func (w *world) queueing(name string, queue int) *world {
	w.node(name).Write.Queue = queue
	return w
}

// relocate moves every copy of index on node from to node to, as a finished relocation does: the
// copy is new on its target and its counters start again.
func (w *world) relocate(index, from, to string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, tn := w.node(from), w.node(to)
	for i := range w.copies {
		c := &w.copies[i]
		if c.Index != index || c.Node != f.ID {
			continue
		}
		old, k := cluster.CopyKey(c.Index, c.Shard, f.ID), cluster.CopyKey(c.Index, c.Shard, tn.ID)
		w.write[k], w.search[k] = w.write[old], w.search[old]
		delete(w.write, old)
		delete(w.search, old)
		delete(w.ctrs.Copies, old)
		w.ctrs.Copies[k] = cluster.CopyCounters{}
		c.Node = tn.ID
	}
}

// relocating starts relocating index[shard]'s copy to node to, as OpenSearch's balancer would.
func (w *world) relocating(index string, shard int, to string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.copies {
		if c := &w.copies[i]; c.Index == index && c.Shard == shard {
			c.State, c.RelocatingNode = cluster.StateRelocating, w.node(to).ID
			return
		}
	}
	panic(fmt.Sprintf("no copy of %s[%d]", index, shard))
}

// tick advances time by d and every counter by the work done in it.
func (w *world) tick(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at = w.at.Add(d)
	sec := d.Seconds()
	for k, c := range w.ctrs.Copies {
		c.IndexTimeMillis += int64(w.write[k] * 1000 * sec)
		c.SearchTimeMillis += int64(w.search[k] * 1000 * sec)
		w.ctrs.Copies[k] = c
	}
	for id, n := range w.ctrs.Nodes {
		n.WriteCompleted += int64(w.completions[id] * sec)
		// 100 queries a second at 10 ms each: a mean search latency of 10 ms.
		n.QueryTotal += int64(100 * sec)
		n.QueryTimeMillis += int64(1000 * sec)
		w.ctrs.Nodes[id] = n
	}
	w.stamp()
}

// wait advances time without any work: the stats grow old.
func (w *world) wait(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at = w.at.Add(d)
}

func (w *world) stamp() {
	w.ctrs.At = w.at
	for i := range w.nodes {
		w.nodes[i].StatsAt = w.at
		n := w.ctrs.Nodes[w.nodes[i].ID]
		n.At = w.at
		w.ctrs.Nodes[w.nodes[i].ID] = n
	}
}

// sample is what a read returns: deep copies, because Derive writes into the snapshot it gets.
func (w *world) sample() cluster.Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := cluster.Sample{
		Snapshot: cluster.Snapshot{At: w.at, Health: "green", Settings: cluster.Settings{DiskHighWatermark: 0.9, Recoveries: w.limits},
			Nodes: slices.Clone(w.nodes), Indices: slices.Clone(w.indices), Copies: slices.Clone(w.copies)},
		Counters: cluster.Counters{At: w.ctrs.At, Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}},
	}
	if w.clusterExclude != "" {
		s.Snapshot.Settings.Filters.Exclude = map[string]string{"_name": w.clusterExclude}
	}
	for k, v := range w.ctrs.Nodes {
		s.Counters.Nodes[k] = v
	}
	for k, v := range w.ctrs.Copies {
		s.Counters.Copies[k] = v
	}
	return s
}

type rerouteCall struct {
	Moves  []string
	DryRun bool
}

type putCall struct {
	Index    string
	Settings map[string]any
}

// fakeAPI is a hand-written ClusterAPI over a world. It records reroutes and settings changes and
// can be told to fail.
type fakeAPI struct {
	w *world

	mu        sync.Mutex
	readErr   error
	health    Health
	healthErr error
	// onHealth, when set, runs (once, then it is cleared) as a Health call starts: another
	// invocation interleaving with this one.
	onHealth func()
	// rerouteErr answers a reroute call with an error; nil accepts it.
	rerouteErr func(moves []allocation.Move, dryRun bool) error
	settings   map[string]map[string]string
	// deleted lists indices that answer 404 as a deleted index does.
	deleted  map[string]bool
	reads    int
	reroutes []rerouteCall
	puts     []putCall
	// clusterPuts are the PUT _cluster/settings calls (drain_test.go).
	clusterPuts []map[string]any
}

var _ ClusterAPI = (*fakeAPI)(nil)

func newFakeAPI(w *world) *fakeAPI {
	return &fakeAPI{w: w, health: Health{Status: "green"}, settings: map[string]map[string]string{}}
}

func (f *fakeAPI) Read(context.Context) (cluster.Sample, error) {
	f.mu.Lock()
	f.reads++
	err := f.readErr
	f.mu.Unlock()
	if err != nil {
		return cluster.Sample{}, err
	}
	return f.w.sample(), nil
}

// ReadTopology is Read without the shard stats: the copies carry no size, as collect's.
func (f *fakeAPI) ReadTopology(ctx context.Context) (cluster.Snapshot, error) {
	s, err := f.Read(ctx)
	if err != nil {
		return cluster.Snapshot{}, err
	}
	for i := range s.Snapshot.Copies {
		s.Snapshot.Copies[i].SizeBytes = 0
	}
	return s.Snapshot, nil
}

func (f *fakeAPI) Health(context.Context) (Health, error) {
	f.mu.Lock()
	hook := f.onHealth
	f.onHealth = nil
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health, f.healthErr
}

func (f *fakeAPI) Reroute(_ context.Context, moves []allocation.Move, dryRun bool) (RerouteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := rerouteCall{DryRun: dryRun}
	for _, m := range moves {
		call.Moves = append(call.Moves, moveLabel(m))
	}
	f.reroutes = append(f.reroutes, call)
	if f.rerouteErr != nil {
		if err := f.rerouteErr(moves, dryRun); err != nil {
			return RerouteResult{}, err
		}
	}
	// OpenSearch explains each command, in the order sent.
	var res RerouteResult
	for _, m := range moves {
		res.Explanations = append(res.Explanations, "move "+moveLabel(m)+": YES")
	}
	return res, nil
}

func (f *fakeAPI) IndexSettings(_ context.Context, index string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleted[index] {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, &opensearch.APIError{Status: 404, Type: "index_not_found_exception", Reason: "no such index [" + index + "]"})
	}
	out := map[string]string{"index.number_of_shards": "1"}
	for k, v := range f.settings[index] {
		out[k] = v
	}
	return out, nil
}

func (f *fakeAPI) PutIndexSettings(_ context.Context, index string, settings map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts = append(f.puts, putCall{Index: index, Settings: settings})
	if f.settings[index] == nil {
		f.settings[index] = map[string]string{}
	}
	for k, v := range settings {
		if v == nil {
			delete(f.settings[index], k)
			continue
		}
		f.settings[index][k] = fmt.Sprint(v)
	}
	// A replica change takes effect on the world's metadata, as OpenSearch applies it.
	if v, ok := settings["index.number_of_replicas"]; ok {
		n, err := strconv.Atoi(fmt.Sprint(v))
		if err != nil {
			return err
		}
		f.w.mu.Lock()
		for i := range f.w.indices {
			if f.w.indices[i].Name == index {
				f.w.indices[i].Replicas = n
			}
		}
		f.w.mu.Unlock()
	}
	return nil
}

func (f *fakeAPI) calls() ([]rerouteCall, []putCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reroutes), slices.Clone(f.puts), f.reads
}

func moveLabel(m allocation.Move) string {
	return fmt.Sprintf("%s[%d] %s->%s", m.Index, m.Shard, m.FromName, m.ToName)
}

// rig is an engine over state.Memory, bus.Memory and fake clusters, all on one world's clock.
type rig struct {
	e     *Engine
	store *state.Memory
	bus   *bus.Memory
	apis  map[string]*fakeAPI
}

// issued records in the ledger a move issued by an earlier cycle.
func (r *rig) issued(t *testing.T, m allocation.Move) {
	t.Helper()
	r.issuedGroup(t, statusIssued, m)
}

// issuedGroup records in the ledger a group of moves issued together by an earlier cycle, with the
// status its verification left.
func (r *rig) issuedGroup(t *testing.T, status ledgerStatus, group ...allocation.Move) {
	t.Helper()
	lk := state.Key{PK: pk("prod"), SK: ledgerKey("plan#earlier", group[0])}
	entry := ledgerEntry{Move: group[0], Group: group, Status: status, PlanKey: "plan#earlier", Strategy: "reroute"}
	if _, err := state.PutJSON(t.Context(), r.store, lk, entry, state.Condition{IfAbsent: true}, time.Hour, r.e.now()); err != nil {
		t.Fatal(err)
	}
}

func testConfig(clusters ...string) config.Config {
	c := config.Default()
	for _, n := range clusters {
		c.Clusters = append(c.Clusters, config.Cluster{Name: n, URLs: []string{"http://127.0.0.1:9200"}, Auth: "none"})
	}
	// Plain moves: the count-neutral swaps are the planner's business, tested there.
	c.Allocation.BuiltinBalancer.Enabled = false
	c.Replicas.Enabled = false
	return c
}

func newRig(t *testing.T, cfg config.Config, worlds map[string]*world) *rig {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	var clock *world
	for _, w := range worlds {
		clock = w
		break
	}
	r := &rig{store: state.NewMemory(clock.Now), bus: &bus.Memory{}, apis: map[string]*fakeAPI{}}
	for name, w := range worlds {
		r.apis[name] = newFakeAPI(w)
	}
	r.e = &Engine{Store: r.store, Bus: r.bus, Clock: clock.Now, Log: slog.New(slog.DiscardHandler), Config: cfg,
		Cluster: func(name string) (ClusterAPI, error) {
			a, ok := r.apis[name]
			if !ok {
				return nil, fmt.Errorf("no fake for %s", name)
			}
			return a, nil
		}}
	return r
}

func (r *rig) ingest(t *testing.T, name string) string {
	t.Helper()
	res, err := r.e.Ingest(t.Context(), []string{name})
	if err != nil {
		t.Fatalf("ingest %s: %v", name, err)
	}
	return res[0].SnapshotKey
}

// events returns the drained events of one detail type, their details decoded as T.
func events[T any](t *testing.T, recorded []bus.Recorded, detailType string) []T {
	t.Helper()
	var out []T
	for _, r := range recorded {
		if r.DetailType != detailType {
			continue
		}
		var d T
		if err := json.Unmarshal(r.Detail, &d); err != nil {
			t.Fatalf("%s detail %s: %v", detailType, r.Detail, err)
		}
		out = append(out, d)
	}
	return out
}

// hotWorld is node a carrying 8.02 WRITE threads with a 5 s queue, b and c cool: the planner moves
// h1 (2.5 threads, closest to half the hottest) to c, the least utilized. h1 and h2 (1.5 threads)
// each bring a to its goal; h2's 2 GiB take longer to relocate (files, then the translog replay:
// 4 min against 3) so h1's relief lands first. One index per shard keeps the index-balance phase
// out of it.
func hotWorld() *world {
	return newWorld("a", "b", "c").
		index("h0", 0, []float64{4}, nil, []string{"a"}).
		index("h1", 0, []float64{2.5}, nil, []string{"a"}).
		index("h2", 0, []float64{1.5}, nil, []string{"a"}).sized("h2", 2<<30).
		index("h3", 0, []float64{0.02}, nil, []string{"a"}).
		index("other", 0, []float64{1, 0.5}, nil, []string{"b"}, []string{"c"}).
		queueing("a", 500)
}

const wantMove = "h1[0] a->c"

// planned ingests and detects three samples 30 s apart: the first has no rates, the second starts
// the streak, the third is the second sustained sample and plans the move. It returns the plan key.
func (r *rig) planned(t *testing.T, w *world) string {
	t.Helper()
	var res DetectResult
	for i := range 3 {
		if i > 0 {
			w.tick(30 * time.Second)
		}
		key := r.ingest(t, "prod")
		var err error
		if res, err = r.e.Detect(t.Context(), "prod", key); err != nil {
			t.Fatalf("detect: %v", err)
		}
	}
	if len(res.Plan.Moves) != 1 || moveLabel(res.Plan.Moves[0]) != wantMove {
		t.Fatalf("plan: got %+v, want the one move %s; notes %+v", res.Plan.Moves, wantMove, res.Plan.Notes)
	}
	r.bus.Drain()
	return res.PlanKey
}
