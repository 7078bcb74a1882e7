// Package snapshots stores cluster snapshots in the state table so a 30,000-shard cluster fits
// DynamoDB's 400 KB item limit: one compressed item per node (the node, its copies and their
// counters), items of up to 5,000 copies no node chunk holds (unassigned ones), and a meta item
// (health, settings, indices), written meta last so a reader never sees half a snapshot. The
// counters stored with a snapshot are the "previous counters" the next ingest derives rates from.
package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// PK is the partition holding everything about one cluster.
func PK(clusterName string) string { return "cluster#" + clusterName }

const (
	latestSK = "snap#latest"
	// keyLayout sorts lexically in time order.
	keyLayout = "20060102T150405.000000000Z"
	// unplacedPerItem bounds the copies without a node chunk (unassigned, or on a node whose stats
	// are missing) stored in one item. A cluster restarting whole has nearly every copy
	// unassigned: 30,000 of them in the meta item came to 356 KiB compressed, over the item limit.
	// 5,000 come to about 60 KiB.
	unplacedPerItem = 5000
)

type meta struct {
	Cluster         string           `json:"cluster"`
	At              time.Time        `json:"at"`
	IntervalSeconds float64          `json:"interval_seconds"`
	Health          string           `json:"health"`
	Settings        cluster.Settings `json:"settings"`
	Indices         []cluster.Index  `json:"indices"`
	// Unplaced is where snapshots written before UnplacedChunks kept these copies; still read.
	Unplaced []cluster.Copy `json:"unplaced,omitempty"`
	// UnplacedChunks counts the items holding copies with no node chunk, unplacedPerItem each.
	UnplacedChunks int       `json:"unplaced_chunks,omitempty"`
	NodeIDs        []string  `json:"node_ids"`
	CountersAt     time.Time `json:"counters_at"`
}

type nodeChunk struct {
	Node     cluster.Node                    `json:"node"`
	Copies   []cluster.Copy                  `json:"copies"`
	Counters cluster.NodeCounters            `json:"counters"`
	CopyCtrs map[string]cluster.CopyCounters `json:"copy_counters"`
	HasCtrs  bool                            `json:"has_counters"`
}

// Key names a stored snapshot.
func Key(at time.Time) string { return "snap#" + at.UTC().Format(keyLayout) }

// Save stores the snapshot and the counters it was derived from, and points "latest" at it.
func Save(ctx context.Context, st state.Store, snap *cluster.Snapshot, ctrs cluster.Counters, ttl time.Duration, now time.Time) (string, error) {
	key := Key(snap.At)
	pk := PK(snap.Cluster)
	exp := time.Time{}
	if ttl > 0 {
		exp = now.Add(ttl)
	}
	chunks := make(map[string]*nodeChunk, len(snap.Nodes))
	m := meta{Cluster: snap.Cluster, At: snap.At, IntervalSeconds: snap.IntervalSeconds, Health: snap.Health,
		Settings: snap.Settings, Indices: snap.Indices, CountersAt: ctrs.At}
	for _, n := range snap.Nodes {
		c := &nodeChunk{Node: n, CopyCtrs: map[string]cluster.CopyCounters{}}
		c.Counters, c.HasCtrs = ctrs.Nodes[n.ID]
		chunks[n.ID] = c
		m.NodeIDs = append(m.NodeIDs, n.ID)
	}
	for _, c := range snap.Copies {
		ch, ok := chunks[c.Node]
		if !ok {
			m.Unplaced = append(m.Unplaced, c)
			continue
		}
		ch.Copies = append(ch.Copies, c)
		k := cluster.CopyKey(c.Index, c.Shard, c.Node)
		if v, ok := ctrs.Copies[k]; ok {
			ch.CopyCtrs[k] = v
		}
	}
	items := make([]state.Item, 0, len(chunks))
	for _, id := range m.NodeIDs {
		b, err := state.EncodeJSON(chunks[id])
		if err != nil {
			return "", fmt.Errorf("save snapshot %s node %s: %w", key, id, err)
		}
		items = append(items, state.Item{Key: state.Key{PK: pk, SK: key + "#node#" + id}, Value: b, ExpiresAt: exp})
	}
	for start := 0; start < len(m.Unplaced); start += unplacedPerItem {
		b, err := state.EncodeJSON(m.Unplaced[start:min(start+unplacedPerItem, len(m.Unplaced))])
		if err != nil {
			return "", fmt.Errorf("save snapshot %s unplaced copies: %w", key, err)
		}
		items = append(items, state.Item{Key: state.Key{PK: pk, SK: unplacedSK(key, m.UnplacedChunks)}, Value: b, ExpiresAt: exp})
		m.UnplacedChunks++
	}
	m.Unplaced = nil
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
	pk := PK(clusterName)
	items, err := st.Query(ctx, pk, key+"#")
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", key, err)
	}
	var m *meta
	chunks := map[string]nodeChunk{}
	unplaced := map[string][]cluster.Copy{}
	for _, it := range items {
		switch {
		case strings.HasSuffix(it.Key.SK, "#meta"):
			v, err := state.DecodeJSON[meta](it.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("load snapshot %s meta: %w", key, err)
			}
			m = &v
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
	if m == nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", key, ErrNone)
	}
	snap := &cluster.Snapshot{Cluster: m.Cluster, At: m.At, IntervalSeconds: m.IntervalSeconds, Health: m.Health,
		Settings: m.Settings, Indices: m.Indices}
	ctrs := &cluster.Counters{At: m.CountersAt, Nodes: map[string]cluster.NodeCounters{}, Copies: map[string]cluster.CopyCounters{}}
	for _, id := range m.NodeIDs {
		c, ok := chunks[id]
		if !ok {
			return nil, nil, fmt.Errorf("load snapshot %s: node chunk %s missing (expired or partial write)", key, id)
		}
		snap.Nodes = append(snap.Nodes, c.Node)
		snap.Copies = append(snap.Copies, c.Copies...)
		if c.HasCtrs {
			ctrs.Nodes[id] = c.Counters
		}
		for k, v := range c.CopyCtrs {
			ctrs.Copies[k] = v
		}
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

func unplacedSK(key string, i int) string { return fmt.Sprintf("%s#unplaced#%04d", key, i) }
