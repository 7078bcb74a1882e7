package sim

import (
	"cmp"
	"slices"
	"strings"
)

// sortUnassigned puts unassigned copies in the order OpenSearch's allocator takes them
// (LocalShardsBalancer.allocateUnassigned). It sorts primaries before replicas, then copies of
// different indices by PriorityComparator: index.priority highest first, then the newest
// index.creation_date, then the index name in reverse; copies of one index by shard number. It then
// takes the list in rounds, each round taking the first of the remaining copies of each shard and
// role, so that a shard's second replica waits for every shard's first.
func sortUnassigned(pending []*shardCopy) {
	slices.SortStableFunc(pending, compareUnassigned)
	type key struct {
		sh      *shard
		primary bool
	}
	round := make(map[*shardCopy]int, len(pending))
	seen := map[key]int{}
	for _, c := range pending {
		k := key{c.sh, c.primary}
		round[c] = seen[k]
		seen[k]++
	}
	slices.SortStableFunc(pending, func(x, y *shardCopy) int { return cmp.Compare(round[x], round[y]) })
}

// compareUnassigned is the allocator's comparator: primaries first, then PriorityComparator
// between indices, then shard number within one.
func compareUnassigned(x, y *shardCopy) int {
	if x.primary != y.primary {
		if x.primary {
			return -1
		}
		return 1
	}
	a, b := x.sh.idx, y.sh.idx
	if a == b {
		return cmp.Compare(x.sh.num, y.sh.num)
	}
	return cmp.Or(
		cmp.Compare(b.priority, a.priority),
		b.created.Compare(a.created),
		// Java's String.compareTo orders by UTF-16 code unit; index names are lowercase and
		// mostly ASCII, where it agrees with Go's byte order.
		strings.Compare(b.name, a.name),
	)
}
