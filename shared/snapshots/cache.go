package snapshots

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// Every function of a cycle loads the snapshot ingest stored, and decoding a 30,000-copy snapshot
// (gunzip and JSON of 2 MB) took a fifth of a production-scale local run, five times per tick. Load
// still reads every item from the store; when the meta item and each chunk it reads hold the bytes
// an earlier Load decoded, it hands back a copy of that result instead of decoding them again. Same
// bytes, same decoding: the result is what decoding would give.

// cacheEntries is how many decoded snapshots are kept: the latest and the one before it, which
// ingest reads as the previous sample while the other functions read the latest.
const cacheEntries = 2

// decoded is one snapshot as Load decoded it, with the stored values it came from.
type decoded struct {
	cluster, key string
	meta         []byte
	m            meta
	chunks       map[string][]byte // sort key → stored value, for every chunk item Load read
	snap         *cluster.Snapshot
	ctrs         *cluster.Counters
}

var cache struct {
	mu      sync.Mutex
	entries []*decoded // most recently stored last
}

// cachedMeta returns the meta item decoded from raw by an earlier Load of this snapshot, if any.
func cachedMeta(clusterName, key string, raw []byte) (*decoded, bool) {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	for _, d := range cache.entries {
		if d.cluster == clusterName && d.key == key && bytes.Equal(d.meta, raw) {
			return d, true
		}
	}
	return nil, false
}

// hit reports whether every chunk item d was decoded from is in stored with the same bytes.
func (d *decoded) hit(stored map[string][]byte) bool {
	for sk, v := range d.chunks {
		if s, ok := stored[sk]; !ok || !bytes.Equal(s, v) {
			return false
		}
	}
	return true
}

// remember keeps a decoded snapshot, evicting the oldest entry beyond cacheEntries. The caller
// gives up snap and ctrs: Load returns copies.
func remember(d *decoded) {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	cache.entries = slices.DeleteFunc(cache.entries, func(e *decoded) bool { return e.cluster == d.cluster && e.key == d.key })
	cache.entries = append(cache.entries, d)
	if n := len(cache.entries) - cacheEntries; n > 0 {
		cache.entries = slices.Delete(cache.entries, 0, n)
	}
}

// cloneSnapshot copies s so that nothing a caller changes in the copy reaches s: every slice and
// map it holds is copied. TestCloneCoversEveryReference lists the fields this must copy.
func cloneSnapshot(s *cluster.Snapshot) *cluster.Snapshot {
	out := *s
	out.Settings = cloneSettings(s.Settings)
	out.Nodes = slices.Clone(s.Nodes)
	for i := range out.Nodes {
		n := &out.Nodes[i]
		n.Roles = slices.Clone(n.Roles)
		n.Attributes = maps.Clone(n.Attributes)
	}
	out.Indices = cloneIndices(s.Indices)
	out.Copies = slices.Clone(s.Copies)
	return &out
}

func cloneIndices(ixs []cluster.Index) []cluster.Index {
	out := slices.Clone(ixs)
	for i := range out {
		out[i].Filters = cloneFilters(out[i].Filters)
	}
	return out
}

func cloneSettings(s cluster.Settings) cluster.Settings {
	s.AwarenessAttributes = slices.Clone(s.AwarenessAttributes)
	if s.ForcedAwareness != nil {
		fa := make(map[string][]string, len(s.ForcedAwareness))
		for k, v := range s.ForcedAwareness {
			fa[k] = slices.Clone(v)
		}
		s.ForcedAwareness = fa
	}
	s.Filters = cloneFilters(s.Filters)
	return s
}

func cloneFilters(f cluster.Filters) cluster.Filters {
	f.Include, f.Exclude, f.Require = maps.Clone(f.Include), maps.Clone(f.Exclude), maps.Clone(f.Require)
	return f
}

func cloneCounters(c *cluster.Counters) *cluster.Counters {
	return &cluster.Counters{At: c.At, Nodes: maps.Clone(c.Nodes), Copies: maps.Clone(c.Copies)}
}

// Forget drops every decoded snapshot and indices item kept, so that the next Load decodes what
// it reads, as a freshly started process would. Benchmarks use it to measure each function as its
// own Lambda.
func Forget() {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	cache.entries = nil
	indexChunks.mu.Lock()
	defer indexChunks.mu.Unlock()
	indexChunks.last = nil
}

// Each snapshot stores its indices in items of their own, and they change only when an index is
// created, deleted or has its settings changed: a cycle's snapshot mostly holds the indices items
// of the one before, byte for byte, whose copies and nodes changed. indexChunks keeps the indices
// items of the last snapshot decoded, so that such an item is not decoded again (4,100 indices'
// JSON, about a third of decoding a 30,000-copy snapshot). Same bytes, same decoding; each Load
// gets indices of its own (their filters copied). Only the last snapshot's items are kept: the
// runner collects garbage at GOGC 400, where each MB kept costs about five of peak RSS.
var indexChunks indexMemo

type indexMemo struct {
	mu sync.Mutex
	// last holds the indices items of the last snapshot decoded.
	last []indexChunk
}

// indexChunk is one indices item as stored, and its indices decoded. Neither is ever changed.
type indexChunk struct {
	raw []byte
	ixs []cluster.Index
}

// decode returns the indices stored in raw, an indices item's value, and the item to keep.
func (m *indexMemo) decode(raw []byte) ([]cluster.Index, indexChunk, error) {
	m.mu.Lock()
	for _, c := range m.last {
		if bytes.Equal(c.raw, raw) {
			m.mu.Unlock()
			return cloneIndices(c.ixs), c, nil
		}
	}
	m.mu.Unlock()
	ixs, err := state.DecodeJSON[[]cluster.Index](raw)
	if err != nil {
		return nil, indexChunk{}, err
	}
	return ixs, indexChunk{raw: bytes.Clone(raw), ixs: cloneIndices(ixs)}, nil
}

// keep replaces the items kept with those of the snapshot just decoded.
func (m *indexMemo) keep(chunks []indexChunk) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = chunks
}

// loading is the snapshots being loaded now, each with a channel closed when its Load is done.
var loading = turns{busy: map[string]chan struct{}{}}

type turns struct {
	mu   sync.Mutex
	busy map[string]chan struct{}
}

// turn waits until no other caller holds key's turn, then takes it; done gives it back.
func (t *turns) turn(ctx context.Context, key string) (done func(), err error) {
	for {
		t.mu.Lock()
		ch, busy := t.busy[key]
		if !busy {
			ch = make(chan struct{})
			t.busy[key] = ch
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				delete(t.busy, key)
				t.mu.Unlock()
				close(ch)
			}, nil
		}
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
