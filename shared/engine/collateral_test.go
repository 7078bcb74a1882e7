package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
)

func TestFilterCollateral(t *testing.T) {
	snap := &cluster.Snapshot{
		Nodes: []cluster.Node{{ID: "n0", Name: "node-0"}, {ID: "n1", Name: "node-1"}, {ID: "n2", Name: "node-2"}},
		Copies: []cluster.Copy{
			// The planned copy: the ledger's own entry covers it.
			{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n2"},
			// Another copy of the index on the excluded node, moved by the same exclusion.
			{Index: "hot", Shard: 4, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n1"},
			// Started, or on another node, or of another index: none is the exclusion's doing.
			{Index: "hot", Shard: 3, Node: "n0", State: cluster.StateStarted},
			{Index: "hot", Shard: 5, Node: "n1", State: cluster.StateRelocating, RelocatingNode: "n2"},
			{Index: "cold", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n1"},
		},
	}
	m := allocation.Move{Index: "hot", Shard: 0, From: "n0", FromName: "node-0", To: "n2", ToName: "node-2"}
	got := filterCollateral(m, indexCopies(snap))
	if len(got) != 1 || got[0].Shard != 4 || got[0].From != "n0" || got[0].To != "n1" || got[0].ToName != "node-1" {
		t.Errorf("got %+v, want hot[4] node-0→node-1 alone", got)
	}
}

// TestFilterCollateralPlannedCopyElsewhere: under an exclusion OpenSearch's allocator picks the
// planned copy's target, and where that is not the planned one the breaker holds the node it
// really goes to (random fault seed 195: a move onto it was accepted while it relocated).
func TestFilterCollateralPlannedCopyElsewhere(t *testing.T) {
	cases := []struct {
		name   string
		target string
		want   []string // the relocations held beside the planned move, as "shard→node"
	}{
		{"the allocator sent it where it was planned", "n2", nil},
		{"the allocator sent it to another node", "n1", []string{"0→node-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := &cluster.Snapshot{
				Nodes:  []cluster.Node{{ID: "n0", Name: "node-0"}, {ID: "n1", Name: "node-1"}, {ID: "n2", Name: "node-2"}},
				Copies: []cluster.Copy{{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: tc.target}},
			}
			m := allocation.Move{Index: "hot", Shard: 0, From: "n0", FromName: "node-0", To: "n2", ToName: "node-2"}
			var got []string
			for _, c := range filterCollateral(m, indexCopies(snap)) {
				got = append(got, fmt.Sprintf("%d→%s", c.Shard, c.ToName))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
