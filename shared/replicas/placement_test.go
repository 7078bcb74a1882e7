package replicas

import (
	"fmt"
	"strings"
	"testing"
)

// nodes builds n nodes on their own hosts with zone attributes cycling over zones.
func nodes(n int, zones ...string) []PlacementNode {
	out := make([]PlacementNode, n)
	for i := range out {
		out[i] = PlacementNode{Host: fmt.Sprintf("h%d", i)}
		if len(zones) > 0 {
			out[i].Attrs = map[string]string{"zone": zones[i%len(zones)]}
		}
	}
	return out
}

func TestMaxCopies(t *testing.T) {
	sharedHosts := nodes(6)
	for i := range sharedHosts {
		sharedHosts[i].Host = fmt.Sprintf("h%d", i/2)
	}
	crowded := nodes(4)
	for i := range crowded {
		crowded[i].Others = 9
	}
	// Both limits hold, the cluster's on one crowded node: the text names the limit that held the
	// last node's room.
	crowdedFirst, crowdedLast := nodes(4), nodes(4)
	crowdedFirst[0].Others, crowdedLast[3].Others = 9, 9
	tests := []struct {
		name  string
		nodes []PlacementNode
		rules PlacementRules
		want  int
		why   string
	}{
		{"no rules: one copy per node", nodes(12), PlacementRules{Primaries: 2}, 12, ""},
		{"index total_shards_per_node 1 with 2 primaries on 6 nodes: 3 copies", nodes(6),
			PlacementRules{Primaries: 2, TotalShardsPerNode: 1}, 3, "index.routing.allocation.total_shards_per_node=1"},
		{"index total_shards_per_node at the primaries changes nothing", nodes(6),
			PlacementRules{Primaries: 2, TotalShardsPerNode: 2}, 6, ""},
		{"cluster total_shards_per_node with 9 other copies per node: one copy each", crowded,
			PlacementRules{Primaries: 2, ClusterTotalShardsPerNode: 10}, 2, "cluster.routing.allocation.total_shards_per_node=10"},
		{"both limits, the crowded node first", crowdedFirst,
			PlacementRules{Primaries: 3, TotalShardsPerNode: 2, ClusterTotalShardsPerNode: 10}, 2, "index.routing.allocation.total_shards_per_node=2 on 4 nodes"},
		{"both limits, the crowded node last", crowdedLast,
			PlacementRules{Primaries: 3, TotalShardsPerNode: 2, ClusterTotalShardsPerNode: 10}, 2, "cluster.routing.allocation.total_shards_per_node=10 on 4 nodes"},
		{"same_shard.host: two nodes per host", sharedHosts,
			PlacementRules{Primaries: 1, SameShardHost: true}, 3, "same_shard.host: 3 hosts for 6 nodes"},
		{"same_shard.host off: hosts do not matter", sharedHosts, PlacementRules{Primaries: 1}, 6, ""},
		{"awareness over 3 present zones: every node usable", nodes(6, "a", "b", "c"),
			PlacementRules{Primaries: 1, Awareness: []string{"zone"}}, 6, ""},
		{"forced awareness with a zone that has no node: 2 of 3 zones hold 2 per value", nodes(6, "a", "b"),
			PlacementRules{Primaries: 1, Awareness: []string{"zone"}, ForcedAwareness: map[string][]string{"zone": {"a", "b", "c"}}},
			4, "awareness on zone over a,b,c"},
		{"forced values out of order: named sorted, the caller's list left as given", nodes(6, "a", "b"),
			PlacementRules{Primaries: 1, Awareness: []string{"zone"}, ForcedAwareness: map[string][]string{"zone": {"c", "a", "b"}}},
			4, "awareness on zone over a,b,c"},
		{"uneven zones: 5 in a, 1 in b", []PlacementNode{
			{Attrs: map[string]string{"zone": "a"}}, {Attrs: map[string]string{"zone": "a"}}, {Attrs: map[string]string{"zone": "a"}},
			{Attrs: map[string]string{"zone": "a"}}, {Attrs: map[string]string{"zone": "a"}}, {Attrs: map[string]string{"zone": "b"}}},
			PlacementRules{Primaries: 1, Awareness: []string{"zone"}}, 3, "awareness on zone over a,b"},
		{"no nodes", nil, PlacementRules{Primaries: 1}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.rules)
			got, why := MaxCopies(tc.nodes, tc.rules)
			if after := fmt.Sprint(tc.rules); after != before {
				t.Errorf("MaxCopies changed its rules: %s, given %s", after, before)
			}
			if got != tc.want {
				t.Errorf("MaxCopies got %d (%s), want %d", got, why, tc.want)
			}
			if !strings.Contains(why, tc.why) || (tc.why == "" && why != "") {
				t.Errorf("why got %q, want it to contain %q", why, tc.why)
			}
		})
	}
}
