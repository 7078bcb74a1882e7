package replicas_test

import (
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/replicas"
)

// The article's example: 4 nodes, an index with 2 primaries taking 80 % of search load.
func ExampleDecide() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	in := []replicas.IndexInput{
		{Name: "products", Primaries: 2, Replicas: 1, EligibleNodes: 4, SearchLoad: 4, LoadKnown: true, ExtraCopiesAllowed: -1},
		{Name: "reviews", Primaries: 2, Replicas: 1, EligibleNodes: 4, SearchLoad: 1, LoadKnown: true, ExtraCopiesAllowed: -1},
	}
	changes, all, _ := replicas.Decide(now, in, nil, replicas.DefaultConfig())
	for _, d := range all {
		fmt.Println(d.Kind, d.Reason)
	}
	fmt.Println(len(changes), "change")
	// Output:
	// scale-up products: raise number_of_replicas 1→3 now: desired copies = min(ceil(L×N/(S×X)), N) = 4 with L=0.800 (4.000 of 5.000 busy search threads), N=4, S=2, X=0.5; min 1 (first seen with 1, at least 1), max 3 (N-1 with N=4).
	// hold reviews: keep number_of_replicas at 1: desired copies = min(ceil(L×N/(S×X)), N) = 1 with L=0.200 (1.000 of 5.000 busy search threads), N=4, S=2, X=0.5; min 1 (first seen with 1, at least 1), max 3 (N-1 with N=4).
	// 1 change
}
