package engine

import (
	"crypto/sha256"
	"slices"
	"sync"

	"github.com/shardwise/shardwise/shared/state"
)

// Detect verifies the moves on the ledger and Move counts shardwise's own moves in flight, each
// reading every ledger entry of the cluster each cycle; an entry is rewritten a few times while
// its move is claimed, issued and verified, and then read unchanged for the rest of its TTL.
// Decoding every entry's head each time was about 9 % of a production-size run's CPU. headMemo
// keeps each entry's head as decoded with the digest of the bytes it came from, so that an entry
// whose stored bytes are those decoded before (same length and SHA-256) is not decoded again. Same bytes, same decoding: the result is
// what decoding would give, and each caller gets a head of its own (its group copied). The memo is
// the process's, as snapshots' decoded snapshots are: whatever engine or store read the bytes,
// they decode alike.
var ledgerHeads headMemo

type headMemo struct {
	mu sync.Mutex
	// byPK holds, per cluster partition, each entry's head by sort key, from the last read of its
	// ledger. A read replaces its partition's map whole, so entries gone from the ledger go.
	byPK map[string]map[string]memoHead
}

// memoHead is one ledger entry's head as decoded, with the length and SHA-256 of the bytes it
// was decoded from: not the bytes, since an entry with its verdicts takes KBs, and the local
// runner collects garbage at GOGC 400, where each MB kept costs about five of peak RSS.
type memoHead struct {
	size int
	sum  [sha256.Size]byte
	head ledgerHead
}

// read starts a read of the ledger of partition pk: head decodes its entries one by one, and done,
// called once every entry of the read went through head, keeps them for the next read.
func (m *headMemo) read(pk string) *headRead {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &headRead{memo: m, pk: pk, last: m.byPK[pk], seen: map[string]memoHead{}}
}

// headRead is one read of a partition's ledger.
type headRead struct {
	memo *headMemo
	pk   string
	last map[string]memoHead
	seen map[string]memoHead
}

// head decodes the head of ledger entry it, or copies the one decoded from the same bytes before.
func (r *headRead) head(it state.Item) (ledgerHead, error) {
	sum := sha256.Sum256(it.Value)
	if was, ok := r.last[it.Key.SK]; ok && was.size == len(it.Value) && was.sum == sum {
		r.seen[it.Key.SK] = was
		return cloneHead(was.head), nil
	}
	h, err := state.DecodeJSON[ledgerHead](it.Value)
	if err != nil {
		return ledgerHead{}, err
	}
	r.seen[it.Key.SK] = memoHead{size: len(it.Value), sum: sum, head: cloneHead(h)}
	return h, nil
}

// done keeps the heads of this read, the partition's whole ledger, in place of the last read's.
func (r *headRead) done() {
	r.memo.mu.Lock()
	defer r.memo.mu.Unlock()
	if r.memo.byPK == nil {
		r.memo.byPK = map[string]map[string]memoHead{}
	}
	r.memo.byPK[r.pk] = r.seen
}

// cloneHead copies the slice a head holds (its moves' verdicts are never decoded into a head).
func cloneHead(h ledgerHead) ledgerHead {
	h.Group = slices.Clone(h.Group)
	return h
}

// ForgetDecoded drops the ledger heads kept, so that the next read decodes every entry, as a
// freshly started process would. Benchmarks use it, with snapshots.Forget, to measure each
// function as its own Lambda.
func ForgetDecoded() {
	ledgerHeads.mu.Lock()
	defer ledgerHeads.mu.Unlock()
	ledgerHeads.byPK = nil
}
