package collect

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/opensearch"
)

// TestBuildInEitherOrder: Build gives the same sample whether the shard stats and the routing
// table come in the client's order (by index and shard, walked side by side) or in any other
// (looked up by maps), including a stats copy listed twice (the last counts), a copy without
// stats, and stats without a routing entry.
func TestBuildInEitherOrder(t *testing.T) {
	r := base()
	r.ss.Copies = append(r.ss.Copies,
		opensearch.ShardCopyStats{Index: "logs", Shard: 1, State: "STARTED", Node: "n2", IndexTimeMillis: 5, StoreBytes: 9 << 30},
		opensearch.ShardCopyStats{Index: "logs", Shard: 1, State: "STARTED", Node: "n2", IndexTimeMillis: 6, StoreBytes: 1 << 30},
		opensearch.ShardCopyStats{Index: "zeta", Shard: 3, Primary: true, State: "STARTED", Node: "n1", StoreBytes: 1})
	r.cs.Routing = append(r.cs.Routing,
		opensearch.ShardRouting{Index: "logs", Shard: 1, State: "STARTED", Node: "n2"},
		opensearch.ShardRouting{Index: "metrics", Shard: 0, Primary: true, State: "STARTED", Node: "n2"})
	byShard := func(a, b opensearch.ShardCopyStats) int { return compareShard(a.Index, a.Shard, b.Index, b.Shard) }
	routingByShard := func(a, b opensearch.ShardRouting) int { return compareShard(a.Index, a.Shard, b.Index, b.Shard) }

	sorted := r
	sorted.ss.Copies = slices.Clone(r.ss.Copies)
	sorted.cs.Routing = slices.Clone(r.cs.Routing)
	slices.SortStableFunc(sorted.ss.Copies, byShard)
	slices.SortStableFunc(sorted.cs.Routing, routingByShard)
	if x := newStatsIndex(sorted.ss.Copies, sorted.cs.Routing); !x.sorted {
		t.Fatal("the sorted lists are not walked side by side")
	}
	want := sorted.build(t)

	rng := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		shuffled := sorted
		shuffled.ss.Copies = slices.Clone(sorted.ss.Copies)
		shuffled.cs.Routing = slices.Clone(sorted.cs.Routing)
		// Shuffle, keeping the duplicate stats copy's two entries in their order.
		rng.Shuffle(len(shuffled.cs.Routing), func(i, j int) {
			shuffled.cs.Routing[i], shuffled.cs.Routing[j] = shuffled.cs.Routing[j], shuffled.cs.Routing[i]
		})
		if x := newStatsIndex(shuffled.ss.Copies, shuffled.cs.Routing); x.sorted && !slices.IsSortedFunc(shuffled.cs.Routing, routingByShard) {
			t.Fatal("unsorted routing walked side by side")
		}
		if got := shuffled.build(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("routing %v:\n got %+v\nwant %+v", shuffled.cs.Routing, got, want)
		}
	}
	// The duplicate's last entry counts, in both walks.
	if got := want.Counters.Copies[cluster.CopyKey("logs", 1, "n2")].IndexTimeMillis; got != 6 {
		t.Errorf("logs[1] on n2: index time %d, want the last entry's 6", got)
	}
}
