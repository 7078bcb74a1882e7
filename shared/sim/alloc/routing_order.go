package alloc

import (
	"cmp"
	"slices"
	"unicode/utf16"

	"github.com/shardwise/shardwise/shared/sim/model"
)

// routingOrder returns the indices in the order OpenSearch's balancer first lists them, before it
// sorts them by how unbalanced each is: the keys of the routing table, a java.util.HashMap of index
// names, bucket by bucket, and within a bucket in the order the indices were created. Ties in that
// sort keep this order, so which of several equally unbalanced indices moves first depends on their
// names' hashes, not on when they were created. (Lucene's IntroSorter, which OpenSearch sorts with,
// may also reorder ties; that is not modelled.)
func (s *Allocator) routingOrder() []*model.Index {
	capacity := javaHashMapCapacity(len(s.Indices))
	out := slices.Clone(s.Indices)
	slices.SortStableFunc(out, func(a, b *model.Index) int {
		return cmp.Compare(javaHashBucket(a.Name, capacity), javaHashBucket(b.Name, capacity))
	})
	return out
}

// javaStringHash is java.lang.String.hashCode: s[0]·31^(n−1) + … + s[n−1] over UTF-16 code units,
// in 32-bit arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaHashBucket is the bucket java.util.HashMap puts a key in: its hash with the high half folded
// into the low half, masked to the table's capacity (a power of two).
func javaHashBucket(key string, capacity int) int {
	h := uint32(javaStringHash(key))
	return int((h ^ h>>16) & uint32(capacity-1))
}

// javaHashMapCapacity is the table size of a java.util.HashMap filled with n keys one by one: 16,
// doubled each time the size passes three quarters of it.
func javaHashMapCapacity(n int) int {
	capacity := 16
	for n > capacity*3/4 {
		capacity *= 2
	}
	return capacity
}
