// Package snapshots stores cluster snapshots in the state table so a cluster of 100,000 shard
// copies and tens of thousands of indices fits DynamoDB's 400 KB item limit and no partition takes
// the whole write burst. A snapshot is a meta item (health, settings and the layout below) in the
// cluster's partition, and items of at most partBytes each holding its indices, its nodes with
// their counters, and its copies with theirs, the copies as compressed columns (columns.go).
// These items are spread over up to maxPartitions partition keys of their own, about
// partitionBytes each. The meta item is written last, so a reader never sees half a snapshot. The
// counters stored with a snapshot are the "previous counters" the next ingest derives rates from.
//
// Load also reads the format written before (format 1: the indices in the meta item, one JSON
// chunk per node in parts, and before that one unspread item per node), so that snapshots stored
// before an upgrade stay readable for their TTL.
package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// PK is the partition holding everything about one cluster but its snapshots' chunk items.
func PK(clusterName string) string { return "cluster#" + clusterName }

// ChunkPK is the i-th partition holding chunk items of the cluster's snapshots.
func ChunkPK(clusterName string, i int) string {
	return fmt.Sprintf("%s#snap#%02d", PK(clusterName), i)
}

const (
	latestSK = "snap#latest"
	// keyLayout sorts lexically in time order.
	keyLayout = "20060102T150405.000000000Z"
	// partBytes bounds one chunk item's value, far under state.MaxValueBytes. A node holding
	// 10,000 copies came to 594,230 bytes compressed in one item; cut at 64 KiB it takes ten,
	// which also lets the items spread evenly over partitions.
	partBytes = 64 << 10
	// partitionBytes is how much of one snapshot a partition key should take. DynamoDB bills a
	// write unit per started KB and one partition sustains 1,000 write units a second; a
	// 30,000-copy snapshot is about 2 MB, which this spreads over about 10 partitions.
	partitionBytes = 256 << 10
	// maxPartitions bounds the partition keys a reader queries per snapshot.
	maxPartitions = 32
)

type meta struct {
	// Format is formatColumns for a snapshot whose indices are in items of their own and whose
	// chunks hold columns; zero for one whose meta item lists the indices and whose chunks are
	// JSON, which is still read.
	Format          int              `json:"format,omitempty"`
	Cluster         string           `json:"cluster"`
	At              time.Time        `json:"at"`
	IntervalSeconds float64          `json:"interval_seconds"`
	Health          string           `json:"health"`
	Settings        cluster.Settings `json:"settings"`
	Indices         []cluster.Index  `json:"indices"`
	// Unplaced is where snapshots written before UnplacedChunks kept these copies; still read.
	Unplaced []cluster.Copy `json:"unplaced,omitempty"`
	// UnplacedChunks counts the items holding copies with no node chunk.
	UnplacedChunks int       `json:"unplaced_chunks,omitempty"`
	NodeIDs        []string  `json:"node_ids"`
	CountersAt     time.Time `json:"counters_at"`
	// Partitions counts the partition keys (ChunkPK 0 to Partitions-1) holding the chunk items.
	// Zero is a snapshot written before chunks were spread: one item per node, in PK, still read.
	Partitions int `json:"partitions,omitempty"`
	// NodeParts holds, for each of NodeIDs, how many items its chunk takes.
	NodeParts []int `json:"node_parts,omitempty"`
	// IndexParts, NodeItems and CopyItems count the items holding the indices, the nodes with
	// their counters, and the copies with theirs, in format 2.
	IndexParts int `json:"index_parts,omitempty"`
	NodeItems  int `json:"node_items,omitempty"`
	CopyItems  int `json:"copy_items,omitempty"`
	// Copies is how many copies the snapshot holds, so that Load allocates once (format 2).
	Copies int `json:"copies,omitempty"`
}

const (
	// formatColumns is the format Save writes.
	formatColumns = 2
	// copiesHint bounds the copies Load allocates room for before it reads them.
	copiesHint = 1 << 20
)

// nodeChunk is a node and its counters (format 2's nodes items hold a list of them) or, in format
// 1, one part of a node's chunk: part 0 carries the node and its counters, every part some of its
// copies and their counters.
type nodeChunk struct {
	Node     cluster.Node                    `json:"node"`
	Copies   []cluster.Copy                  `json:"copies,omitempty"`
	Counters cluster.NodeCounters            `json:"counters"`
	CopyCtrs map[string]cluster.CopyCounters `json:"copy_counters,omitempty"`
	HasCtrs  bool                            `json:"has_counters"`
}

// Key names a stored snapshot.
func Key(at time.Time) string { return "snap#" + at.UTC().Format(keyLayout) }

func nodeSK(key, id string, part int) string { return fmt.Sprintf("%s#node#%s#%04d", key, id, part) }
func unplacedSK(key string, i int) string    { return fmt.Sprintf("%s#unplaced#%04d", key, i) }
func indicesSK(key string, i int) string     { return fmt.Sprintf("%s#indices#%04d", key, i) }
func nodesSK(key string, i int) string       { return fmt.Sprintf("%s#nodes#%04d", key, i) }
func copiesSK(key string, i int) string      { return fmt.Sprintf("%s#copies#%04d", key, i) }

// Save stores the snapshot and the counters it was derived from, and points "latest" at it. It
// writes format 2: the indices, the nodes and the copies each in items of their own, the copies
// as columns (see columns.go) in the snapshot's order. prev, when given, are the counters the
// snapshot's loads were derived from (cluster.Derive): each node's interval between them lets
// loads be stored as the counter growth they came from, in fewer bytes.
func Save(ctx context.Context, st state.Store, snap *cluster.Snapshot, ctrs cluster.Counters, prev *cluster.Counters, ttl time.Duration, now time.Time) (string, error) {
	key := Key(snap.At)
	pk := PK(snap.Cluster)
	exp := time.Time{}
	if ttl > 0 {
		exp = now.Add(ttl)
	}
	m := meta{Format: formatColumns, Cluster: snap.Cluster, At: snap.At, IntervalSeconds: snap.IntervalSeconds, Health: snap.Health,
		Settings: snap.Settings, CountersAt: ctrs.At, Copies: len(snap.Copies)}
	nodes := make([]nodeChunk, len(snap.Nodes))
	known := make(map[string]bool, len(snap.Nodes))
	dt := make(map[string]float64, len(snap.Nodes))
	for i, n := range snap.Nodes {
		nodes[i].Node = n
		nodes[i].Counters, nodes[i].HasCtrs = ctrs.Nodes[n.ID]
		known[n.ID] = true
		if before, ok := prevNode(prev, n.ID); ok && nodes[i].HasCtrs {
			// As cluster.Derive's nodeIntervals has it.
			dt[n.ID] = nodes[i].Counters.At.Sub(before.At).Seconds()
		}
	}
	// Each kind of item is encoded into as few items as keep each within partBytes, the three
	// kinds at once (they share nothing but what they read), and stored in this order. The copies
	// are not cut into short runs first to spare splitEncode's first attempt: each copies item
	// holds a table of the nodes its copies are on, and short runs of a large cluster's copies each
	// name nearly every node (runs of 1,500 copies at 750 nodes wrote nine times the bytes).
	kinds := []struct {
		what   string
		n      int
		sk     func(key string, i int) string
		encode func(lo, hi int) ([]byte, error)
		count  *int
	}{
		{"indices", len(snap.Indices), indicesSK, func(lo, hi int) ([]byte, error) {
			return state.EncodeJSON(snap.Indices[lo:hi])
		}, &m.IndexParts},
		{"nodes", len(nodes), nodesSK, func(lo, hi int) ([]byte, error) {
			return state.EncodeJSON(nodes[lo:hi])
		}, &m.NodeItems},
		{"copies", len(snap.Copies), copiesSK, func(lo, hi int) ([]byte, error) {
			// Counters are kept for the copies of known nodes only, as cluster.Derive reads them.
			var ckey []byte
			counters := func(c *cluster.Copy) (cluster.CopyCounters, bool) {
				if !known[c.Node] {
					return cluster.CopyCounters{}, false
				}
				ckey = cluster.AppendCopyKey(ckey[:0], c.Index, c.Shard, c.Node)
				v, ok := ctrs.Copies[string(ckey)]
				return v, ok
			}
			return state.Compress(encodeColumns(nil, snap.Copies[lo:hi], counters, dt))
		}, &m.CopyItems},
	}
	parts := make([][][]byte, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		if k.n == 0 {
			continue
		}
		wg.Go(func() { parts[i], errs[i] = splitEncode(k.n, partBytes, k.encode) })
	}
	wg.Wait()
	var values [][]byte
	var sks []string
	for i, k := range kinds {
		if errs[i] != nil {
			return "", fmt.Errorf("save snapshot %s %s: %w", key, k.what, errs[i])
		}
		for j, b := range parts[i] {
			values, sks = append(values, b), append(sks, k.sk(key, j))
		}
		*k.count = len(parts[i])
	}
	m.Partitions = partitions(values)
	items := make([]state.Item, len(values))
	for i, p := range spread(values, m.Partitions) {
		items[i] = state.Item{Key: state.Key{PK: ChunkPK(snap.Cluster, p), SK: sks[i]}, Value: values[i], ExpiresAt: exp}
	}
	if err := st.BatchPut(ctx, items); err != nil {
		return "", fmt.Errorf("save snapshot %s: %w", key, err)
	}
	b, err := state.EncodeJSON(m)
	if err != nil {
		return "", fmt.Errorf("save snapshot %s meta: %w", key, err)
	}
	if _, err := st.Put(ctx, state.Item{Key: state.Key{PK: pk, SK: key + "#meta"}, Value: b, ExpiresAt: exp}, state.Condition{}); err != nil {
		return "", fmt.Errorf("save snapshot %s meta: %w", key, err)
	}
	if _, err := state.PutJSON(ctx, st, state.Key{PK: pk, SK: latestSK}, key, state.Condition{}, ttl, now); err != nil {
		return "", fmt.Errorf("save snapshot %s latest: %w", key, err)
	}
	return key, nil
}

// prevNode returns a node's earlier counters, if any.
func prevNode(prev *cluster.Counters, id string) (cluster.NodeCounters, bool) {
	if prev == nil {
		return cluster.NodeCounters{}, false
	}
	n, ok := prev.Nodes[id]
	return n, ok
}

// splitEncode encodes items 0 to n through encode in as few consecutive ranges as keep each
// value within budget, and always at least one range (n may be 0). Compression makes sizes
// unpredictable, so a range that comes out too large is split again.
func splitEncode(n, budget int, encode func(lo, hi int) ([]byte, error)) ([][]byte, error) {
	return splitRange(0, n, budget, encode, true)
}

// splitRange is splitEncode of the things lo to hi. With atOnce the ranges it cuts them into are
// encoded at once (each on its own, encode's calls sharing nothing) and their items kept in
// order, with the first range's error in that order: what encoding them in turn gives.
func splitRange(lo, hi, budget int, encode func(lo, hi int) ([]byte, error), atOnce bool) ([][]byte, error) {
	b, err := encode(lo, hi)
	if err != nil {
		return nil, err
	}
	if len(b) <= budget {
		return [][]byte{b}, nil
	}
	if hi-lo <= 1 {
		return nil, fmt.Errorf("%w: one copy encodes to %d bytes, over %d", state.ErrTooLarge, len(b), budget)
	}
	// One more range than the size asks for, so that most ranges fit at the first try.
	k := min(hi-lo, (len(b)+budget-1)/budget+1)
	parts := make([][][]byte, k)
	errs := make([]error, k)
	each := func(i int) {
		parts[i], errs[i] = splitRange(lo+i*(hi-lo)/k, lo+(i+1)*(hi-lo)/k, budget, encode, false)
	}
	if atOnce {
		var wg sync.WaitGroup
		for i := range k {
			wg.Go(func() { each(i) })
		}
		wg.Wait()
	} else {
		for i := range k {
			if each(i); errs[i] != nil {
				break
			}
		}
	}
	var out [][]byte
	for i := range k {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, parts[i]...)
	}
	return out, nil
}

// partitions is how many partition keys values are spread over so that none takes more than
// partitionBytes. spread gives no partition more than the average plus one value, and a value is
// at most partBytes.
func partitions(values [][]byte) int {
	total := 0
	for _, v := range values {
		total += len(v)
	}
	const share = partitionBytes - partBytes
	return max(1, min(maxPartitions, len(values), (total+share-1)/share))
}

// spread assigns each value, in order, to the partition that holds the fewest bytes so far (the
// lowest such index on a tie), so that partitions take nearly equal shares.
func spread(values [][]byte, n int) []int {
	load := make([]int, n)
	out := make([]int, len(values))
	for i, v := range values {
		p := 0
		for j := range load {
			if load[j] < load[p] {
				p = j
			}
		}
		out[i] = p
		load[p] += len(v)
	}
	return out
}

// ErrNone means no snapshot is stored (or all have expired).
var ErrNone = errors.New("no snapshot stored")

// Latest returns the key of the newest snapshot.
func Latest(ctx context.Context, st state.Store, clusterName string) (string, error) {
	key, _, err := state.GetJSON[string](ctx, st, state.Key{PK: PK(clusterName), SK: latestSK})
	if errors.Is(err, state.ErrNotFound) {
		return "", ErrNone
	}
	if err != nil {
		return "", fmt.Errorf("latest snapshot of %s: %w", clusterName, err)
	}
	return key, nil
}

// Load reads a snapshot and the counters stored with it. Loads of one snapshot at once (the
// functions one event invokes together) take turns, so that only the first decodes it and the
// others find it decoded (see cache).
func Load(ctx context.Context, st state.Store, clusterName, key string) (*cluster.Snapshot, *cluster.Counters, error) {
	done, err := loading.turn(ctx, clusterName+"\x00"+key)
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", key, err)
	}
	defer done()
	return load(ctx, st, clusterName, key)
}

func load(ctx context.Context, st state.Store, clusterName, key string) (*cluster.Snapshot, *cluster.Counters, error) {
	metaKey := state.Key{PK: PK(clusterName), SK: key + "#meta"}
	it, err := st.Get(ctx, metaKey)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", key, ErrNone)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s meta: %w", key, err)
	}
	prev, known := cachedMeta(clusterName, key, it.Value)
	var m meta
	if known {
		// Load sorts the snapshot's indices in place; the kept meta item stays as it was decoded.
		m = prev.m
		m.Settings, m.Indices = cloneSettings(m.Settings), cloneIndices(m.Indices)
	} else if m, err = state.DecodeJSON[meta](it.Value); err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s meta: get %s: %w", key, metaKey, err)
	}
	if m.Partitions == 0 {
		return loadUnspread(ctx, st, clusterName, key, &m)
	}
	if m.Partitions > maxPartitions || m.Format != formatColumns && len(m.NodeParts) != len(m.NodeIDs) {
		return nil, nil, fmt.Errorf("load snapshot %s: meta lists %d partitions and %d part counts for %d nodes", key, m.Partitions, len(m.NodeParts), len(m.NodeIDs))
	}
	stored := map[string][]byte{}
	for i := range m.Partitions {
		items, err := st.Query(ctx, ChunkPK(clusterName, i), key+"#")
		if err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s partition %d: %w", key, i, err)
		}
		for _, it := range items {
			stored[it.Key.SK] = it.Value
		}
	}
	if known && prev.hit(stored) {
		return cloneSnapshot(prev.snap), cloneCounters(prev.ctrs), nil
	}
	d := &decoded{cluster: clusterName, key: key, meta: it.Value, m: m, chunks: map[string][]byte{}}
	var snap *cluster.Snapshot
	var ctrs *cluster.Counters
	if m.Format == formatColumns {
		snap, ctrs, err = decodeColumnChunks(key, &m, stored, d.chunks)
	} else {
		snap, ctrs, err = decodeJSONChunks(key, &m, stored, d.chunks)
	}
	if err != nil {
		return nil, nil, err
	}
	snap.Sort()
	d.snap, d.ctrs = snap, ctrs
	remember(d)
	return cloneSnapshot(snap), cloneCounters(ctrs), nil
}

// chunk returns the stored value of a chunk item and notes it in used.
func chunk(stored, used map[string][]byte, sk string) ([]byte, bool) {
	raw, ok := stored[sk]
	if ok {
		used[sk] = raw
	}
	return raw, ok
}

// decodeColumnChunks assembles a format 2 snapshot from its items.
func decodeColumnChunks(key string, m *meta, stored, used map[string][]byte) (*cluster.Snapshot, *cluster.Counters, error) {
	if len(m.NodeIDs) > 0 || len(m.NodeParts) > 0 {
		// The first layout of format 2 (node chunks of columns), on main for an hour and never
		// released, listed its nodes here; this reader would find none of its items.
		return nil, nil, fmt.Errorf("load snapshot %s: format 2 meta lists %d node ids: an unreleased earlier layout, not read", key, len(m.NodeIDs))
	}
	snap, ctrs := assemble(m)
	// The count only sizes the first allocation; a corrupt one costs at most copiesHint.
	hint := max(0, min(m.Copies, copiesHint))
	snap.Copies = make([]cluster.Copy, 0, hint)
	ctrs.Copies = make(map[string]cluster.CopyCounters, hint)
	item := func(what string, sk func(string, int) string, i int) ([]byte, error) {
		raw, ok := chunk(stored, used, sk(key, i))
		if !ok {
			return nil, fmt.Errorf("load snapshot %s: %s item %d missing (expired or partial write)", key, what, i)
		}
		return raw, nil
	}
	kept := make([]indexChunk, 0, max(0, min(m.IndexParts, 64)))
	for i := range m.IndexParts {
		raw, err := item("indices", indicesSK, i)
		if err != nil {
			return nil, nil, err
		}
		ixs, ic, err := indexChunks.decode(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, indicesSK(key, i), err)
		}
		kept = append(kept, ic)
		snap.Indices = append(snap.Indices, ixs...)
	}
	indexChunks.keep(kept)
	for i := range m.NodeItems {
		raw, err := item("nodes", nodesSK, i)
		if err != nil {
			return nil, nil, err
		}
		nodes, err := state.DecodeJSON[[]nodeChunk](raw)
		if err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, nodesSK(key, i), err)
		}
		for _, n := range nodes {
			addNode(snap, ctrs, n)
		}
	}
	var buf []byte
	for i := range m.CopyItems {
		raw, err := item("copies", copiesSK, i)
		if err != nil {
			return nil, nil, err
		}
		if buf, err = state.DecompressTo(buf[:0], raw); err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, copiesSK(key, i), err)
		}
		if snap.Copies, err = decodeColumns(buf, snap.Copies, ctrs.Copies); err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, copiesSK(key, i), err)
		}
	}
	return snap, ctrs, nil
}

// decodeJSONChunks assembles a snapshot written before format 2 from its JSON chunk items.
func decodeJSONChunks(key string, m *meta, stored, used map[string][]byte) (*cluster.Snapshot, *cluster.Counters, error) {
	snap, ctrs := assemble(m)
	for n, id := range m.NodeIDs {
		for i := range m.NodeParts[n] {
			sk := nodeSK(key, id, i)
			raw, ok := chunk(stored, used, sk)
			if !ok {
				return nil, nil, fmt.Errorf("load snapshot %s: node chunk %s part %d missing (expired or partial write)", key, id, i)
			}
			c, err := state.DecodeJSON[nodeChunk](raw)
			if err != nil {
				return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, sk, err)
			}
			if i == 0 {
				if c.Node.ID != id {
					return nil, nil, fmt.Errorf("load snapshot %s %s: holds node %q", key, sk, c.Node.ID)
				}
				addNode(snap, ctrs, c)
			}
			addCopies(snap, ctrs, c)
		}
	}
	for i := range m.UnplacedChunks {
		raw, ok := chunk(stored, used, unplacedSK(key, i))
		if !ok {
			return nil, nil, fmt.Errorf("load snapshot %s: unplaced copies chunk %d missing (expired or partial write)", key, i)
		}
		c, err := state.DecodeJSON[[]cluster.Copy](raw)
		if err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, unplacedSK(key, i), err)
		}
		snap.Copies = append(snap.Copies, c...)
	}
	return snap, ctrs, nil
}

// loadUnspread reads the rest of a snapshot written before chunks were spread over partitions:
// one chunk item per node, beside the meta item, so that snapshots stored before a deploy stay
// readable for their TTL.
func loadUnspread(ctx context.Context, st state.Store, clusterName, key string, m *meta) (*cluster.Snapshot, *cluster.Counters, error) {
	items, err := st.Query(ctx, PK(clusterName), key+"#")
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", key, err)
	}
	chunks := map[string]nodeChunk{}
	unplaced := map[string][]cluster.Copy{}
	for _, it := range items {
		switch {
		case strings.HasSuffix(it.Key.SK, "#meta"):
		case strings.HasPrefix(it.Key.SK, key+"#unplaced#"):
			v, err := state.DecodeJSON[[]cluster.Copy](it.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, it.Key.SK, err)
			}
			unplaced[it.Key.SK] = v
		default:
			c, err := state.DecodeJSON[nodeChunk](it.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, it.Key.SK, err)
			}
			chunks[c.Node.ID] = c
		}
	}
	snap, ctrs := assemble(m)
	for _, id := range m.NodeIDs {
		c, ok := chunks[id]
		if !ok {
			return nil, nil, fmt.Errorf("load snapshot %s: node chunk %s missing (expired or partial write)", key, id)
		}
		addNode(snap, ctrs, c)
		addCopies(snap, ctrs, c)
	}
	snap.Copies = append(snap.Copies, m.Unplaced...)
	for i := range m.UnplacedChunks {
		c, ok := unplaced[unplacedSK(key, i)]
		if !ok {
			return nil, nil, fmt.Errorf("load snapshot %s: unplaced copies chunk %d missing (expired or partial write)", key, i)
		}
		snap.Copies = append(snap.Copies, c...)
	}
	snap.Sort()
	return snap, ctrs, nil
}

// assemble starts a snapshot and its counters from the meta item.
func assemble(m *meta) (*cluster.Snapshot, *cluster.Counters) {
	snap := &cluster.Snapshot{Cluster: m.Cluster, At: m.At, IntervalSeconds: m.IntervalSeconds, Health: m.Health,
		Settings: m.Settings, Indices: m.Indices}
	ctrs := &cluster.Counters{At: m.CountersAt, Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}}
	return snap, ctrs
}

func addNode(snap *cluster.Snapshot, ctrs *cluster.Counters, c nodeChunk) {
	snap.Nodes = append(snap.Nodes, c.Node)
	if c.HasCtrs {
		ctrs.Nodes[c.Node.ID] = c.Counters
	}
}

func addCopies(snap *cluster.Snapshot, ctrs *cluster.Counters, c nodeChunk) {
	snap.Copies = append(snap.Copies, c.Copies...)
	for k, v := range c.CopyCtrs {
		ctrs.Copies[k] = v
	}
}
