package replicas_test

import (
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/replicas"
)

// The article's example: 4 nodes of 13 search threads, an index with 2 primaries taking 80 % of
// search load while the search pools are 96 % busy. The formula gives products 4 copies; reviews
// would keep its floor's pools only 19 % busy, so it stays at its floor.
func ExampleDecide() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	in := []replicas.IndexInput{
		{Name: "products", Primaries: 2, Replicas: 1, EligibleNodes: 4, SearchLoad: 40, LoadKnown: true, ExtraCopiesAllowed: -1,
			PoolThreads: 52, PoolLoad: 50, CopyNodes: 4, NodeSearchThreads: 13, WriteLoadPerCopy: 0.2, CopyBytes: 3 << 30},
		{Name: "reviews", Primaries: 2, Replicas: 1, EligibleNodes: 4, SearchLoad: 10, LoadKnown: true, ExtraCopiesAllowed: -1,
			PoolThreads: 52, PoolLoad: 50, CopyNodes: 4, NodeSearchThreads: 13, WriteLoadPerCopy: 0.2, CopyBytes: 2 << 30},
	}
	changes, all, _ := replicas.Decide(now, in, nil, replicas.DefaultConfig())
	for _, d := range all {
		fmt.Println(d.Kind, d.Reason)
	}
	fmt.Println(len(changes), "change")
	// Output:
	// scale-up products: raise number_of_replicas 1→3 now: desired copies = min(ceil(L×N/(S×X)), N) = 4 with L=0.800 (40.000 of 50.000 busy search threads), N=4, S=2, X=0.5; the search pools holding its copies are 96% busy; min 1 (first seen with 1, at least 1), max 3 (N-1 with N=4); costs 4 shard copies indexing 0.80 WRITE threads and 12.0 GiB to copy; each copy serves 5.00 busy search threads instead of 10.00, and its own load keeps the search pools of the nodes it spans 77% busy instead of 77%.
	// hold reviews: keep number_of_replicas at 1: little absolute load: its 10.000 busy search threads would keep the search pools of its floor (2 copies per shard) 19% busy, under the 50% at which more copies lower latency; min 1 (first seen with 1, at least 1), max 3 (N-1 with N=4).
	// 1 change
}
