package snapshots

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
	"github.com/shardwise/shardwise/shared/state/statetest"
)

var t0 = time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)

// small is a three-node snapshot with an unassigned replica, a relocating copy and a node whose
// counters were not read.
func small(at time.Time) (*cluster.Snapshot, cluster.Counters) {
	s := &cluster.Snapshot{Cluster: "prod", At: at, IntervalSeconds: 30, Health: "yellow",
		Settings: cluster.Settings{DiskHighWatermark: 0.9, AwarenessAttributes: []string{"zone"},
			Filters: cluster.Filters{Exclude: map[string]string{"_name": "old-node"}}},
		Indices: []cluster.Index{
			{Name: "logs", Primaries: 2, Replicas: 1},
			{Name: "metrics", Primaries: 1, Replicas: 1, Filters: cluster.Filters{Require: map[string]string{"zone": "a"}}},
		},
	}
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		s.Nodes = append(s.Nodes, cluster.Node{ID: "id-" + name, Name: name, Roles: []string{"data", "ingest"},
			Attributes: map[string]string{"zone": string(rune('a' + i))}, HeapUsedBytes: 2 << 30, HeapMaxBytes: 8 << 30,
			DiskTotalBytes: 100 << 30, DiskAvailableBytes: 60 << 30, StatsAt: at.Add(-time.Second),
			Write:  cluster.Pool{Threads: 8, Queue: 10 * i, Load: 1.5, LoadKnown: true, Utilization: 0.1875, RateKnown: true, QueueLatencySeconds: float64(i)},
			Search: cluster.Pool{Threads: 13, Load: 0.4, LoadKnown: true}, SearchLatencyMs: 12, SearchLatencyKnown: true})
	}
	s.Copies = []cluster.Copy{
		{Index: "logs", Shard: 0, Primary: true, State: cluster.StateStarted, Node: "id-node-a", SizeBytes: 5 << 30, WriteLoad: 1, SearchLoad: 0.2, LoadKnown: true},
		{Index: "logs", Shard: 0, State: cluster.StateStarted, Node: "id-node-b", SizeBytes: 5 << 30, WriteLoad: 1, SearchLoad: 0.2, LoadKnown: true},
		{Index: "logs", Shard: 1, Primary: true, State: cluster.StateRelocating, Node: "id-node-c", RelocatingNode: "id-node-a", SizeBytes: 4 << 30, WriteLoad: 0.5, LoadKnown: true},
		{Index: "logs", Shard: 1, State: cluster.StateUnassigned, SizeBytes: 4 << 30},
		{Index: "metrics", Shard: 0, Primary: true, State: cluster.StateStarted, Node: "id-node-a", SizeBytes: 1 << 30},
		{Index: "metrics", Shard: 0, State: cluster.StateUnassigned, SizeBytes: 1 << 30},
	}
	s.Sort()
	ctrs := cluster.Counters{At: at,
		Nodes: map[string]cluster.NodeCounters{
			"id-node-a": {At: at.Add(-time.Second), WriteCompleted: 1000, WriteRejected: 2, SearchCompleted: 50, QueryTimeMillis: 700, QueryTotal: 70},
			"id-node-b": {At: at.Add(-time.Second), WriteCompleted: 900},
		},
		Copies: map[string]cluster.CopyCounters{
			cluster.CopyKey("logs", 0, "id-node-a"):    {IndexTimeMillis: 100000, SearchTimeMillis: 2000},
			cluster.CopyKey("logs", 0, "id-node-b"):    {IndexTimeMillis: 99000, SearchTimeMillis: 1000},
			cluster.CopyKey("logs", 1, "id-node-c"):    {IndexTimeMillis: 5000},
			cluster.CopyKey("metrics", 0, "id-node-a"): {IndexTimeMillis: 7},
		}}
	return s, ctrs
}

// store returns an empty store whose clock stands at t0, the time the fixtures are taken.
func store() *state.Memory { return state.NewMemory(statetest.NewClock(t0).Now) }

func TestSaveLoadRoundTrip(t *testing.T) {
	st := store()
	snap, ctrs := small(t0)
	key, err := Save(t.Context(), st, snap, ctrs, nil, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	if key != Key(t0) || !strings.HasPrefix(key, "snap#") {
		t.Errorf("key: got %q want %q", key, Key(t0))
	}
	got, gotCtrs, err := Load(t.Context(), st, "prod", key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, snap) {
		t.Errorf("snapshot round trip:\n got %+v\nwant %+v", got, snap)
	}
	// node-c's counters were not read: it comes back without an entry, not with zeros.
	wantCtrs := &ctrs
	if !reflect.DeepEqual(gotCtrs, wantCtrs) {
		t.Errorf("counters round trip:\n got %+v\nwant %+v", gotCtrs, wantCtrs)
	}
	if c := got.Counts(); c.Unassigned != 2 || c.Relocating != 1 {
		t.Errorf("counts: got %+v, want the 2 unassigned and 1 relocating copies back", c)
	}
}

func TestLatest(t *testing.T) {
	st := store()
	if _, err := Latest(t.Context(), st, "prod"); !errors.Is(err, ErrNone) {
		t.Fatalf("Latest on an empty store: got %v, want ErrNone", err)
	}
	var keys []string
	for i := range 3 {
		s, c := small(t0.Add(time.Duration(i) * 30 * time.Second))
		k, err := Save(t.Context(), st, s, c, nil, time.Hour, t0)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	got, err := Latest(t.Context(), st, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if got != keys[2] {
		t.Errorf("Latest: got %q want %q", got, keys[2])
	}
	if !slices.IsSorted(keys) {
		t.Errorf("keys do not sort in time order: %v", keys)
	}
	if _, err := Latest(t.Context(), st, "other"); !errors.Is(err, ErrNone) {
		t.Errorf("Latest of another cluster: got %v, want ErrNone", err)
	}
	// Older snapshots stay loadable by key.
	old, _, err := Load(t.Context(), st, "prod", keys[0])
	if err != nil || !old.At.Equal(t0) {
		t.Errorf("Load of the first key: got %v, %v", old, err)
	}
}

// deleteItem damages a stored snapshot by deleting one of its items (a small snapshot's items are
// all in partition 0).
func deleteItem(sk func(string, int) string, i int) func(*testing.T, *state.Memory, *statetest.Clock, string) string {
	return func(t *testing.T, st *state.Memory, _ *statetest.Clock, key string) string {
		if err := st.Delete(t.Context(), state.Key{PK: ChunkPK("prod", 0), SK: sk(key, i)}, state.Condition{}); err != nil {
			t.Fatal(err)
		}
		return key
	}
}

// overwriteItem damages a stored snapshot by replacing one of its items' value.
func overwriteItem(sk func(string, int) string, i int, value []byte) func(*testing.T, *state.Memory, *statetest.Clock, string) string {
	return func(t *testing.T, st *state.Memory, _ *statetest.Clock, key string) string {
		if _, err := st.Put(t.Context(), state.Item{Key: state.Key{PK: ChunkPK("prod", 0), SK: sk(key, i)}, Value: value}, state.Condition{}); err != nil {
			t.Fatal(err)
		}
		return key
	}
}

func mustCompress(b []byte) []byte {
	z, err := state.Compress(b)
	if err != nil {
		panic(err)
	}
	return z
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		// break damages the stored snapshot and returns the key to load.
		damage  func(t *testing.T, st *state.Memory, clock *statetest.Clock, key string) string
		wantErr string
		is      error
	}{
		{
			name:    "missing copies item",
			damage:  deleteItem(copiesSK, 0),
			wantErr: "copies item 0 missing",
		},
		{
			name:    "missing nodes item",
			damage:  deleteItem(nodesSK, 0),
			wantErr: "nodes item 0 missing",
		},
		{
			name:    "missing indices item",
			damage:  deleteItem(indicesSK, 0),
			wantErr: "indices item 0 missing",
		},
		{
			name: "missing meta",
			damage: func(t *testing.T, st *state.Memory, _ *statetest.Clock, key string) string {
				if err := st.Delete(t.Context(), state.Key{PK: PK("prod"), SK: key + "#meta"}, state.Condition{}); err != nil {
					t.Fatal(err)
				}
				return key
			},
			is: ErrNone,
		},
		{
			name:    "unknown key",
			damage:  func(*testing.T, *state.Memory, *statetest.Clock, string) string { return Key(t0.Add(time.Hour)) },
			is:      ErrNone,
			wantErr: "load snapshot",
		},
		{
			name:    "corrupt nodes item",
			damage:  overwriteItem(nodesSK, 0, []byte("{not json")),
			wantErr: "#nodes#0000",
		},
		{
			name:    "copies item not compressed columns",
			damage:  overwriteItem(copiesSK, 0, []byte("{not columns")),
			wantErr: "#copies#0000",
		},
		{
			name:    "copies item of another column version",
			damage:  overwriteItem(copiesSK, 0, mustCompress([]byte{columnsVersion + 1, 0, 1, 0, 0})),
			wantErr: "malformed column chunk",
		},
		{
			// The first layout of format 2, never released, listed node ids in its meta item and
			// kept columns in per-node items this reader does not look for.
			name: "format 2 meta listing node ids",
			damage: func(t *testing.T, st *state.Memory, _ *statetest.Clock, key string) string {
				k := state.Key{PK: PK("prod"), SK: key + "#meta"}
				m, _, err := state.GetJSON[meta](t.Context(), st, k)
				if err != nil {
					t.Fatal(err)
				}
				if m.Format != formatColumns {
					t.Fatalf("meta format %d, want %d", m.Format, formatColumns)
				}
				m.NodeIDs = []string{"n1"}
				if _, err := state.PutJSON(t.Context(), st, k, m, state.Condition{}, 0, t0); err != nil {
					t.Fatal(err)
				}
				return key
			},
			wantErr: "unreleased earlier layout",
		},
		{
			name: "expired snapshot",
			damage: func(_ *testing.T, _ *state.Memory, clock *statetest.Clock, key string) string {
				clock.Advance(2 * time.Hour)
				return key
			},
			is: ErrNone,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := statetest.NewClock(t0)
			st := state.NewMemory(clock.Now)
			s, c := small(t0)
			key, err := Save(t.Context(), st, s, c, nil, time.Hour, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			// Loaded once intact first, so that what Load keeps of it cannot hide the damage.
			if _, _, err := Load(t.Context(), st, "prod", key); err != nil {
				t.Fatal(err)
			}
			_, _, err = Load(t.Context(), st, "prod", tc.damage(t, st, clock, key))
			if err == nil {
				t.Fatal("Load: got nil, want an error")
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Load: got %q, want it to contain %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Load: got %v, want errors.Is %v", err, tc.is)
			}
		})
	}
}

// saveUnspread stores snap as Save did before chunks were spread over partitions: one chunk item
// per node beside the meta item, and the unplaced copies in the meta item itself (inMeta) or in
// items of their own.
func saveUnspread(t *testing.T, st state.Store, snap *cluster.Snapshot, ctrs cluster.Counters, inMeta bool) string {
	t.Helper()
	key, pk := Key(snap.At), PK(snap.Cluster)
	m := meta{Cluster: snap.Cluster, At: snap.At, IntervalSeconds: snap.IntervalSeconds, Health: snap.Health,
		Settings: snap.Settings, Indices: snap.Indices, CountersAt: ctrs.At}
	var items []state.Item
	var unplaced []cluster.Copy
	for _, n := range snap.Nodes {
		c := nodeChunk{Node: n, CopyCtrs: map[string]cluster.CopyCounters{}}
		c.Counters, c.HasCtrs = ctrs.Nodes[n.ID]
		for _, cp := range snap.Copies {
			if cp.Node == n.ID {
				c.Copies = append(c.Copies, cp)
				if v, ok := ctrs.Copies[cluster.CopyKey(cp.Index, cp.Shard, cp.Node)]; ok {
					c.CopyCtrs[cluster.CopyKey(cp.Index, cp.Shard, cp.Node)] = v
				}
			}
		}
		b, err := state.EncodeJSON(c)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, state.Item{Key: state.Key{PK: pk, SK: key + "#node#" + n.ID}, Value: b})
		m.NodeIDs = append(m.NodeIDs, n.ID)
	}
	for _, cp := range snap.Copies {
		if !slices.Contains(m.NodeIDs, cp.Node) {
			unplaced = append(unplaced, cp)
		}
	}
	if inMeta {
		m.Unplaced = unplaced
	} else {
		b, err := state.EncodeJSON(unplaced)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, state.Item{Key: state.Key{PK: pk, SK: unplacedSK(key, 0)}, Value: b})
		m.UnplacedChunks = 1
	}
	if err := st.BatchPut(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	if _, err := state.PutJSON(t.Context(), st, state.Key{PK: pk, SK: key + "#meta"}, m, state.Condition{}, 0, t0); err != nil {
		t.Fatal(err)
	}
	return key
}

// Snapshots stored before a deploy stay readable for their TTL: those with one chunk item per
// node in the cluster's partition, and the older ones still that kept unassigned copies in their
// meta item.
func TestLoadUnspread(t *testing.T) {
	cases := []struct {
		name   string
		inMeta bool
	}{
		{"unplaced copies in items of their own", false},
		{"unplaced copies in the meta item", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := store()
			snap, ctrs := small(t0)
			key := saveUnspread(t, st, snap, ctrs, tc.inMeta)
			got, gotCtrs, err := Load(t.Context(), st, "prod", key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, snap) {
				t.Errorf("snapshot:\n got %+v\nwant %+v", got, snap)
			}
			if !reflect.DeepEqual(gotCtrs, &ctrs) {
				t.Errorf("counters:\n got %+v\nwant %+v", gotCtrs, &ctrs)
			}
		})
	}
}

func TestExpiredLatestIsNone(t *testing.T) {
	clock := statetest.NewClock(t0)
	st := state.NewMemory(clock.Now)
	s, c := small(t0)
	if _, err := Save(t.Context(), st, s, c, nil, time.Hour, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := Latest(t.Context(), st, "prod"); err != nil {
		t.Fatalf("Latest before expiry: %v", err)
	}
	clock.Advance(time.Hour)
	if _, err := Latest(t.Context(), st, "prod"); !errors.Is(err, ErrNone) {
		t.Errorf("Latest after the TTL: got %v, want ErrNone", err)
	}
}

// sizeStore records the size of every value written through it, and the bytes each partition
// key receives.
type sizeStore struct {
	state.Store
	mu      sync.Mutex
	largest int
	which   string
	items   int
	perPK   map[string]int
}

func (s *sizeStore) note(it state.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items++
	if len(it.Value) > s.largest {
		s.largest, s.which = len(it.Value), it.Key.SK
	}
	if s.perPK == nil {
		s.perPK = map[string]int{}
	}
	s.perPK[it.Key.PK] += len(it.Value)
}

// hottest returns the partition key that received the most bytes, and how many.
func (s *sizeStore) hottest() (string, int) {
	pk, most := "", 0
	for k, n := range s.perPK {
		if n > most || n == most && k < pk {
			pk, most = k, n
		}
	}
	return pk, most
}

func (s *sizeStore) Put(ctx context.Context, it state.Item, c state.Condition) (state.Item, error) {
	s.note(it)
	return s.Store.Put(ctx, it, c)
}

func (s *sizeStore) BatchPut(ctx context.Context, items []state.Item) error {
	for _, it := range items {
		s.note(it)
	}
	return s.Store.BatchPut(ctx, items)
}

// large builds a cluster of nodes nodes with 30,000 copies: 3,000 indices of 5 primaries with 1
// replica, with random sizes, loads and counters so compression gets no help from repetition.
// unassigned copies of the last indices lose their node, as after a node loss.
func large(nodes, unassigned int) (*cluster.Snapshot, cluster.Counters) {
	const indices, primaries = 3000, 5
	rng := rand.New(rand.NewPCG(1, 2))
	s := &cluster.Snapshot{Cluster: "big", At: t0, IntervalSeconds: 30, Health: "green", Settings: cluster.Settings{DiskHighWatermark: 0.9}}
	ctrs := cluster.Counters{At: t0, Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}}
	for i := range nodes {
		id := fmt.Sprintf("%022x", rng.Uint64())
		s.Nodes = append(s.Nodes, cluster.Node{ID: id, Name: fmt.Sprintf("opensearch-data-%02d", i), Host: fmt.Sprintf("10.0.%d.%d", i/200, i%200),
			Roles: []string{"data", "ingest"}, Attributes: map[string]string{"zone": fmt.Sprintf("eu-west-1%c", 'a'+i%3)},
			HeapUsedBytes: rng.Int64N(30 << 30), HeapMaxBytes: 31 << 30, DiskTotalBytes: 4 << 40, DiskAvailableBytes: rng.Int64N(4 << 40),
			Write: cluster.Pool{Threads: 16, Load: rng.Float64() * 16, LoadKnown: true, RateKnown: true, CompletedPerSecond: rng.Float64() * 1e4}})
		ctrs.Nodes[id] = cluster.NodeCounters{At: t0, WriteCompleted: rng.Int64(), QueryTimeMillis: rng.Int64(), QueryTotal: rng.Int64()}
	}
	for ix := range indices {
		name := fmt.Sprintf("logs-tenant-%04d-2026.11.%02d-%06d", ix%977, ix%28+1, ix)
		s.Indices = append(s.Indices, cluster.Index{Name: name, Primaries: primaries, Replicas: 1})
		for sh := range primaries {
			for r := range 2 {
				n := s.Nodes[(ix*primaries*2+sh*2+r)%nodes]
				c := cluster.Copy{Index: name, Shard: sh, Primary: r == 0, State: cluster.StateStarted, Node: n.ID,
					SizeBytes: rng.Int64N(50 << 30), WriteLoad: rng.Float64(), SearchLoad: rng.Float64(), LoadKnown: true}
				if ix >= indices-unassigned/(primaries*2) {
					c.State, c.Node, c.WriteLoad, c.SearchLoad, c.LoadKnown = cluster.StateUnassigned, "", 0, 0, false
				} else {
					ctrs.Copies[cluster.CopyKey(name, sh, n.ID)] = cluster.CopyCounters{IndexTimeMillis: rng.Int64(), SearchTimeMillis: rng.Int64()}
				}
				s.Copies = append(s.Copies, c)
			}
		}
	}
	s.Sort()
	return s, ctrs
}

// TestMain stops the moto server TestLargeSnapshotOnDynamo starts when SHARDWISE_MOTO_ENDPOINT
// is unset.
func TestMain(m *testing.M) { dynamotest.Main(m) }

func TestLargeSnapshotFitsDynamoItems(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 30,000-copy snapshot")
	}
	cases := []struct {
		name       string
		nodes      int
		unassigned int
	}{
		{"every copy assigned", 37, 0},
		{"a fifth of the copies unassigned", 37, 6000},
		{"all unassigned", 37, 30000},
		// 10,000 copies per node: one item per node came to 594,230 bytes.
		{"three nodes", 3, 0},
		{"three nodes, a fifth unassigned", 3, 6000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { saveLarge(t, store(), tc.nodes, tc.unassigned) })
	}
}

// A 30,000-copy snapshot on three nodes round-trips through DynamoDB (moto), whose item limit
// and batch rules are the real ones.
func TestLargeSnapshotOnDynamo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 30,000-copy snapshot")
	}
	client := dynamotest.Client(t, dynamotest.Endpoint(t))
	saveLarge(t, state.NewDynamo(client, dynamotest.NewTable(t, client), statetest.NewClock(t0).Now), 3, 0)
}

// saveLarge saves and loads a 30,000-copy snapshot on nodes nodes through st, checking the size
// of every item and the bytes each partition takes.
func saveLarge(t *testing.T, base state.Store, nodes, unassigned int) {
	t.Helper()
	snap, ctrs := large(nodes, unassigned)
	if len(snap.Copies) != 30000 || len(snap.Nodes) != nodes {
		t.Fatalf("fixture: %d copies on %d nodes, want 30000 on %d", len(snap.Copies), len(snap.Nodes), nodes)
	}
	st := &sizeStore{Store: base}
	key, err := Save(t.Context(), st, snap, ctrs, nil, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	hotPK, hotBytes := st.hottest()
	t.Logf("%d items, largest %s at %d bytes (%.0f KiB of the %d KiB limit); %d partition keys, the hottest %s took %d bytes",
		st.items, st.which, st.largest, float64(st.largest)/1024, state.MaxValueBytes/1024, len(st.perPK), hotPK, hotBytes)
	if st.largest >= state.MaxValueBytes {
		t.Errorf("largest item %s: %d bytes, want under %d", st.which, st.largest, state.MaxValueBytes)
	}
	// DynamoDB bills a write per started KB; one partition sustains 1,000 write units a
	// second. A snapshot may send no partition more than partitionBytes.
	if hotBytes > partitionBytes {
		t.Errorf("partition %s took %d bytes of the snapshot, want at most %d", hotPK, hotBytes, partitionBytes)
	}
	got, gotCtrs, err := Load(t.Context(), st, "big", key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, snap) || !reflect.DeepEqual(gotCtrs, &ctrs) {
		t.Errorf("loaded %d copies and %d copy counters, want the %d and %d saved, equal", len(got.Copies), len(gotCtrs.Copies), len(snap.Copies), len(ctrs.Copies))
	}
	if c := got.Counts(); c.Unassigned != unassigned {
		t.Errorf("unassigned: got %d want %d", c.Unassigned, unassigned)
	}
}
