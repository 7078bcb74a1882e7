package engine

import (
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
