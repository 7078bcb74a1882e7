package alloc

import (
	"cmp"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/model"
)

// sortUnassigned puts unassigned copies in the order OpenSearch's allocator takes them
// (LocalShardsBalancer.allocateUnassigned). It sorts primaries before replicas, then copies of
// different indices by PriorityComparator: index.priority highest first, then the newest
// index.creation_date, then the index name in reverse; copies of one index by shard number. It then
// takes the list in rounds, each round taking the first of the remaining copies of each shard and
// role, so that a shard's second replica waits for every shard's first.
func sortUnassigned(pending []*model.ShardCopy) {
	slices.SortStableFunc(pending, compareUnassigned)
	type key struct {
		sh      *model.Shard
		primary bool
	}
	round := make(map[*model.ShardCopy]int, len(pending))
	seen := map[key]int{}
	for _, c := range pending {
		k := key{c.Sh, c.Primary}
		round[c] = seen[k]
		seen[k]++
	}
	slices.SortStableFunc(pending, func(x, y *model.ShardCopy) int { return cmp.Compare(round[x], round[y]) })
}

// compareUnassigned is the allocator's comparator: primaries first, then PriorityComparator
// between indices, then shard number within one.
func compareUnassigned(x, y *model.ShardCopy) int {
	if x.Primary != y.Primary {
		if x.Primary {
			return -1
		}
		return 1
	}
	a, b := x.Sh.Idx, y.Sh.Idx
	if a == b {
		return cmp.Compare(x.Sh.Num, y.Sh.Num)
	}
	return cmp.Or(
		cmp.Compare(b.Priority, a.Priority),
		b.Created.Compare(a.Created),
		// Java's String.compareTo orders by UTF-16 code unit; index names are lowercase and
		// mostly ASCII, where it agrees with Go's byte order.
		strings.Compare(b.Name, a.Name),
	)
}
