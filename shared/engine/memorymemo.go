package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/state"
)

// The replicas function reads its cooldown memory every cycle: one entry per index, about 4,000
// at production size, and a steady index's entry is not rewritten (replicas.Seen, sameMemory), so
// for cycles on end the stored bytes are those of the cycle before. Decoding them was 2.3 s of the
// production benchmark's 99 s (pprof at d40d4d2). replicaMemories keeps, per memory key, the
// memory as decoded with the length and SHA-256 of the bytes it came from, so bytes read again are
// not decoded again. Same bytes, same decoding: the result is what decoding would give. As
// ledgerHeads, the memo is the process's: whatever engine or store read the bytes, they decode
// alike.
var replicaMemories memoryMemo

type memoryMemo struct {
	mu    sync.Mutex
	byKey map[state.Key]memoMemory
}

// memoMemory is a memory as decoded, with the length and SHA-256 of the bytes it came from.
type memoMemory struct {
	size int
	sum  [sha256.Size]byte
	mem  map[string]replicas.Memory
}

// getMemory is state.GetLargeJSON[map[string]replicas.Memory] at key, taking the decoding from
// the memo when the stored bytes are those decoded last. Each caller gets a map of its own; the
// entries' Recent slices are shared with the memo, which holds because nothing changes a memory's
// Recent in place (replicas.Decide builds its next memory anew and see returns a new slice).
func (m *memoryMemo) getMemory(ctx context.Context, s state.Store, key state.Key) (map[string]replicas.Memory, state.LargeRef, error) {
	raw, ref, err := state.GetLarge(ctx, s, key)
	if err != nil {
		return nil, ref, err
	}
	sum := sha256.Sum256(raw)
	m.mu.Lock()
	was, ok := m.byKey[key]
	m.mu.Unlock()
	if ok && was.size == len(raw) && was.sum == sum {
		return maps.Clone(was.mem), ref, nil
	}
	var mem map[string]replicas.Memory
	if err := json.Unmarshal(raw, &mem); err != nil {
		return nil, ref, fmt.Errorf("get %s: decode %T: %w", key, mem, err)
	}
	m.mu.Lock()
	if m.byKey == nil {
		m.byKey = map[state.Key]memoMemory{}
	}
	m.byKey[key] = memoMemory{size: len(raw), sum: sum, mem: maps.Clone(mem)}
	m.mu.Unlock()
	return mem, ref, nil
}
