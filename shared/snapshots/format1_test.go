package snapshots

import (
	"context"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// saveFormat1 is Save as it wrote snapshots before format 2: the indices in the meta item and
// every chunk as JSON. Tests use it to check that such snapshots, stored before an upgrade, still
// load.
func saveFormat1(ctx context.Context, st state.Store, snap *cluster.Snapshot, ctrs cluster.Counters, ttl time.Duration, now time.Time) (string, error) {
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
	var unplaced []cluster.Copy
	for _, c := range snap.Copies {
		ch, ok := chunks[c.Node]
		if !ok {
			unplaced = append(unplaced, c)
			continue
		}
		ch.Copies = append(ch.Copies, c)
		k := cluster.CopyKey(c.Index, c.Shard, c.Node)
		if v, ok := ctrs.Copies[k]; ok {
			ch.CopyCtrs[k] = v
		}
	}
	var values [][]byte
	var sks []string
	for _, id := range m.NodeIDs {
		parts, err := splitEncode(len(chunks[id].Copies), partBytes, chunks[id].partFormat1)
		if err != nil {
			return "", fmt.Errorf("save snapshot %s node %s: %w", key, id, err)
		}
		for i, b := range parts {
			values, sks = append(values, b), append(sks, nodeSK(key, id, i))
		}
		m.NodeParts = append(m.NodeParts, len(parts))
	}
	parts, err := splitEncode(len(unplaced), partBytes, func(lo, hi int) ([]byte, error) { return state.EncodeJSON(unplaced[lo:hi]) })
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

// part encodes the part of c holding copies lo to hi; part 0 also holds the node and its counters.
func (c *nodeChunk) partFormat1(lo, hi int) ([]byte, error) {
	p := nodeChunk{Copies: c.Copies[lo:hi], CopyCtrs: map[string]cluster.CopyCounters{}}
	if lo == 0 {
		p.Node, p.Counters, p.HasCtrs = c.Node, c.Counters, c.HasCtrs
	}
	for _, cp := range p.Copies {
		k := cluster.CopyKey(cp.Index, cp.Shard, cp.Node)
		if v, ok := c.CopyCtrs[k]; ok {
			p.CopyCtrs[k] = v
		}
	}
	return state.EncodeJSON(p)
}
