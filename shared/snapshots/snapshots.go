// Package snapshots stores cluster snapshots in the state table so a 30,000-shard cluster fits
// DynamoDB's 400 KB item limit and no partition takes the whole write burst. A snapshot is a meta
// item (health, settings, indices and the layout below) in the cluster's partition, and chunk
// items of at most partBytes each: a node's copies and their counters in as many parts as they
// need, and the copies no node chunk holds (unassigned ones). Chunk items are spread over up to
// maxPartitions partition keys of their own, about partitionBytes each. The meta item is written
// last, so a reader never sees half a snapshot. The counters stored with a snapshot are the
// "previous counters" the next ingest derives rates from.
package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// IndexParts counts the items holding Indices in format 2.
	IndexParts int `json:"index_parts,omitempty"`
	// Copies is how many copies the snapshot holds, so that Load allocates once (format 2).
	Copies int `json:"copies,omitempty"`
}

const (
	// formatColumns is the format Save writes.
	formatColumns = 2
	// copiesHint bounds the copies Load allocates room for before it reads them.
	copiesHint = 1 << 20
)

// nodeChunk is one part of a node's chunk. Part 0 carries the node and its counters; every part
// carries some of its copies and their counters.
type nodeChunk struct {
	Node     cluster.Node                    `json:"node"`
	Copies   []cluster.Copy                  `json:"copies"`
	Counters cluster.NodeCounters            `json:"counters"`
	CopyCtrs map[string]cluster.CopyCounters `json:"copy_counters"`
	HasCtrs  bool                            `json:"has_counters"`
}

// Key names a stored snapshot.
func Key(at time.Time) string { return "snap#" + at.UTC().Format(keyLayout) }

func nodeSK(key, id string, part int) string { return fmt.Sprintf("%s#node#%s#%04d", key, id, part) }
func unplacedSK(key string, i int) string    { return fmt.Sprintf("%s#unplaced#%04d", key, i) }
func indicesSK(key string, i int) string     { return fmt.Sprintf("%s#indices#%04d", key, i) }

// Save stores the snapshot and the counters it was derived from, and points "latest" at it. It
// writes format 2: indices in items of their own, copies as columns (see columns.go). prev, when
// given, are the counters the snapshot's loads were derived from (cluster.Derive): each node's
// interval between them lets loads be stored as the counter growth they came from, in fewer bytes.
func Save(ctx context.Context, st state.Store, snap *cluster.Snapshot, ctrs cluster.Counters, prev *cluster.Counters, ttl time.Duration, now time.Time) (string, error) {
	key := Key(snap.At)
	pk := PK(snap.Cluster)
	exp := time.Time{}
	if ttl > 0 {
		exp = now.Add(ttl)
	}
	chunks := make(map[string]*nodeChunk, len(snap.Nodes))
	m := meta{Format: formatColumns, Cluster: snap.Cluster, At: snap.At, IntervalSeconds: snap.IntervalSeconds, Health: snap.Health,
		Settings: snap.Settings, CountersAt: ctrs.At, Copies: len(snap.Copies)}
	for _, n := range snap.Nodes {
		c := &nodeChunk{Node: n}
		c.Counters, c.HasCtrs = ctrs.Nodes[n.ID]
		chunks[n.ID] = c
		m.NodeIDs = append(m.NodeIDs, n.ID)
	}
	var unplaced []cluster.Copy
	for _, c := range snap.Copies {
		ch, ok := chunks[c.Node]
		if !ok {
			unplaced = append(unplaced, c)
			continue
		}
		ch.Copies = append(ch.Copies, c)
	}
	var values [][]byte
	var sks []string
	ixParts, err := splitEncode(len(snap.Indices), partBytes, func(lo, hi int) ([]byte, error) { return state.EncodeJSON(snap.Indices[lo:hi]) })
	if err != nil {
		return "", fmt.Errorf("save snapshot %s indices: %w", key, err)
	}
	if len(snap.Indices) > 0 {
		for i, b := range ixParts {
			values, sks = append(values, b), append(sks, indicesSK(key, i))
		}
		m.IndexParts = len(ixParts)
	}
	enc := &columnEncoder{counters: ctrs.Copies}
	for _, id := range m.NodeIDs {
		enc.dt = 0
		if now, ok := ctrs.Nodes[id]; ok && prev != nil {
			if before, ok := prev.Nodes[id]; ok {
				// As cluster.Derive's nodeIntervals has it.
				enc.dt = now.At.Sub(before.At).Seconds()
			}
		}
		parts, err := splitEncode(len(chunks[id].Copies), partBytes, func(lo, hi int) ([]byte, error) { return enc.nodePart(chunks[id], lo, hi) })
		if err != nil {
			return "", fmt.Errorf("save snapshot %s node %s: %w", key, id, err)
		}
		for i, b := range parts {
			values, sks = append(values, b), append(sks, nodeSK(key, id, i))
		}
		m.NodeParts = append(m.NodeParts, len(parts))
	}
	enc.dt = 0
	parts, err := splitEncode(len(unplaced), partBytes, func(lo, hi int) ([]byte, error) { return enc.encode(nil, unplaced[lo:hi], false) })
	if err != nil {
		return "", fmt.Errorf("save snapshot %s unplaced copies: %w", key, err)
	}
	if len(unplaced) > 0 {
		for i, b := range parts {
			values, sks = append(values, b), append(sks, unplacedSK(key, i))
		}
		m.UnplacedChunks = len(parts)
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

// columnEncoder encodes the copies of one snapshot into compressed column chunks, reusing one
// buffer.
type columnEncoder struct {
	counters map[string]cluster.CopyCounters
	// dt is the interval the loads of the copies being encoded were derived over.
	dt  float64
	buf []byte
}

// nodePart encodes the part of c holding copies lo to hi; part 0 also holds the node and its
// counters, as JSON.
func (e *columnEncoder) nodePart(c *nodeChunk, lo, hi int) ([]byte, error) {
	var head []byte
	if lo == 0 {
		var err error
		if head, err = json.Marshal(nodeChunk{Node: c.Node, Counters: c.Counters, HasCtrs: c.HasCtrs}); err != nil {
			return nil, fmt.Errorf("encode node %s: %w", c.Node.ID, err)
		}
	}
	return e.encode(head, c.Copies[lo:hi], true)
}

// encode compresses the column encoding of copies with head; withCounters stores each copy's
// counters, which only copies on a known node have.
func (e *columnEncoder) encode(head []byte, copies []cluster.Copy, withCounters bool) ([]byte, error) {
	e.buf = encodeColumns(e.buf[:0], head, copies, func(c *cluster.Copy) (cluster.CopyCounters, bool) {
		if !withCounters {
			return cluster.CopyCounters{}, false
		}
		v, ok := e.counters[cluster.CopyKey(c.Index, c.Shard, c.Node)]
		return v, ok
	}, e.dt)
	return state.Compress(e.buf)
}

// splitEncode encodes items 0 to n through encode in as few consecutive ranges as keep each
// value within budget, and always at least one range (n may be 0). Compression makes sizes
// unpredictable, so a range that comes out too large is split again.
func splitEncode(n, budget int, encode func(lo, hi int) ([]byte, error)) ([][]byte, error) {
	var out [][]byte
	var split func(lo, hi int) error
	split = func(lo, hi int) error {
		b, err := encode(lo, hi)
		if err != nil {
			return err
		}
		if len(b) <= budget {
			out = append(out, b)
			return nil
		}
		if hi-lo <= 1 {
			return fmt.Errorf("%w: one copy encodes to %d bytes, over %d", state.ErrTooLarge, len(b), budget)
		}
		// One more range than the size asks for, so that most ranges fit at the first try.
		k := min(hi-lo, (len(b)+budget-1)/budget+1)
		for i := range k {
			if err := split(lo+i*(hi-lo)/k, lo+(i+1)*(hi-lo)/k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := split(0, n); err != nil {
		return nil, err
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

// Load reads a snapshot and the counters stored with it.
func Load(ctx context.Context, st state.Store, clusterName, key string) (*cluster.Snapshot, *cluster.Counters, error) {
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
	if m.Partitions > maxPartitions || len(m.NodeParts) != len(m.NodeIDs) {
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

// decodeColumnChunks assembles a format 2 snapshot from its chunk items.
func decodeColumnChunks(key string, m *meta, stored, used map[string][]byte) (*cluster.Snapshot, *cluster.Counters, error) {
	snap, ctrs := assemble(m)
	// The count only sizes the first allocation; a corrupt one costs at most copiesHint.
	hint := max(0, min(m.Copies, copiesHint))
	snap.Copies = make([]cluster.Copy, 0, hint)
	ctrs.Copies = make(map[string]cluster.CopyCounters, hint)
	for i := range m.IndexParts {
		raw, ok := chunk(stored, used, indicesSK(key, i))
		if !ok {
			return nil, nil, fmt.Errorf("load snapshot %s: indices part %d missing (expired or partial write)", key, i)
		}
		ixs, err := state.DecodeJSON[[]cluster.Index](raw)
		if err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s %s: %w", key, indicesSK(key, i), err)
		}
		snap.Indices = append(snap.Indices, ixs...)
	}
	var buf []byte
	decode := func(sk string, raw []byte) ([]byte, error) {
		var err error
		if buf, err = state.DecompressTo(buf[:0], raw); err != nil {
			return nil, fmt.Errorf("load snapshot %s %s: %w", key, sk, err)
		}
		var head []byte
		if head, snap.Copies, err = decodeColumns(buf, snap.Copies, ctrs.Copies); err != nil {
			return nil, fmt.Errorf("load snapshot %s %s: %w", key, sk, err)
		}
		return head, nil
	}
	for n, id := range m.NodeIDs {
		for i := range m.NodeParts[n] {
			sk := nodeSK(key, id, i)
			raw, ok := chunk(stored, used, sk)
			if !ok {
				return nil, nil, fmt.Errorf("load snapshot %s: node chunk %s part %d missing (expired or partial write)", key, id, i)
			}
			head, err := decode(sk, raw)
			if err != nil {
				return nil, nil, err
			}
			if i > 0 {
				continue
			}
			var c nodeChunk
			if err := json.Unmarshal(head, &c); err != nil {
				return nil, nil, fmt.Errorf("load snapshot %s %s: node: %w", key, sk, err)
			}
			if c.Node.ID != id {
				return nil, nil, fmt.Errorf("load snapshot %s %s: holds node %q", key, sk, c.Node.ID)
			}
			addNode(snap, ctrs, c)
		}
	}
	for i := range m.UnplacedChunks {
		sk := unplacedSK(key, i)
		raw, ok := chunk(stored, used, sk)
		if !ok {
			return nil, nil, fmt.Errorf("load snapshot %s: unplaced copies chunk %d missing (expired or partial write)", key, i)
		}
		if _, err := decode(sk, raw); err != nil {
			return nil, nil, err
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
