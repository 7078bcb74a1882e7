package opensearch

import (
	"crypto/sha256"
	"maps"
	"slices"
	"sync"
)

// A client reads GET _cluster/state once per ingest and again before each move, and at 4,100
// indices and 30,000 copies decoding it took a fifth of a production-size run's CPU, a third of
// that flattening the indices' settings. Most of an answer is what the previous answer said: the
// metadata changes when an index is created, deleted or has its settings changed, and between
// the ingest and the move of one cycle the whole answer is often the same. stateMemo keeps what
// the client's last answer decoded to, so that bytes decoded before are not decoded again: the
// whole answer when it is the last one (same length and SHA-256), and otherwise each index's
// metadata whose state and settings bytes are those the last answer had for it. Same bytes, same
// decoding: the result is what decoding would give, and each caller gets values of its own (maps
// and slices copied). The answer itself is not kept, only its digest: the local runner collects
// garbage at GOGC 400, where each MB kept costs about five of peak RSS.
type stateMemo struct {
	mu sync.Mutex
	// sum is the digest of the last answer decoded without error (see digestOf), and state what
	// it decoded to.
	sum   digest
	state ClusterState
	// indices is each index's metadata in the last answer, by name. It is replaced whole, never
	// changed in place, so that a decode reading it needs the lock only to fetch it.
	indices map[string]memoIndex
}

// memoIndex is one index's metadata as decoded, with the bytes it was decoded from.
type memoIndex struct {
	state    string
	settings []byte
	meta     IndexMetadata
	// fresh marks an entry decoded by the answer being kept, whose meta keep fills in.
	fresh bool
}

// digest identifies an answer: its length and SHA-256 (the zero digest is none).
type digest struct {
	size int
	sum  [sha256.Size]byte
}

func digestOf(body []byte) digest { return digest{size: len(body) + 1, sum: sha256.Sum256(body)} }

// whole returns a copy of the last answer's decoding if sum is that answer's.
func (m *stateMemo) whole(sum digest) (ClusterState, bool) {
	if m == nil {
		return ClusterState{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sum == (digest{}) || m.sum != sum {
		return ClusterState{}, false
	}
	return cloneClusterState(m.state), true
}

// lastIndices returns the index metadata of the last answer (nil if none).
func (m *stateMemo) lastIndices() map[string]memoIndex {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.indices
}

// keep remembers an answer's digest and what it decoded to. The caller gives up indices; cs is
// copied, so the caller keeps its own. The metadata kept
// for each index newly decoded is the copy kept in the state: the memo's values are never
// changed, only copied out, so one copy serves both.
func (m *stateMemo) keep(sum digest, cs ClusterState, indices map[string]memoIndex) {
	if m == nil {
		return
	}
	kept := cloneClusterState(cs)
	for _, ix := range kept.Indices {
		if e, ok := indices[ix.Name]; ok && e.fresh {
			e.meta, e.fresh = ix, false
			indices[ix.Name] = e
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sum, m.state, m.indices = sum, kept, indices
}

// cloneClusterState copies cs so that nothing a caller changes in the copy reaches cs.
// TestCloneClusterStateCoversEveryReference lists the fields this must copy.
func cloneClusterState(cs ClusterState) ClusterState {
	out := cs
	out.Nodes = slices.Clone(cs.Nodes)
	for i := range out.Nodes {
		out.Nodes[i].Attributes = maps.Clone(out.Nodes[i].Attributes)
	}
	out.Indices = slices.Clone(cs.Indices)
	for i := range out.Indices {
		out.Indices[i] = cloneIndexMetadata(out.Indices[i])
	}
	out.Routing = slices.Clone(cs.Routing)
	return out
}

// cloneIndexMetadata copies the maps an IndexMetadata holds.
func cloneIndexMetadata(ix IndexMetadata) IndexMetadata {
	ix.Settings = maps.Clone(ix.Settings)
	ix.Filters.Include = maps.Clone(ix.Filters.Include)
	ix.Filters.Exclude = maps.Clone(ix.Filters.Exclude)
	ix.Filters.Require = maps.Clone(ix.Filters.Require)
	return ix
}

// Forget drops what the client kept of its last cluster state answer, so that the next answer is
// decoded whole, as by a freshly started process. Benchmarks use it to measure each function as
// its own Lambda.
func (c *Client) Forget() {
	c.states.mu.Lock()
	defer c.states.mu.Unlock()
	c.states.sum, c.states.state, c.states.indices = digest{}, ClusterState{}, nil
}
