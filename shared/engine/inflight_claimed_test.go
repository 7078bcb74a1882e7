package engine

import (
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// TestOwnMovesInFlightCountsClaimed: a move invocation that died after issuing its reroute, before
// recording it, leaves its ledger entry claimed. Its lease expires a minute later, while the copy
// may still be relocating: the breaker of the next invocation must count that copy among
// shardwise's own moves, or it could start another move from or to the same nodes.
func TestOwnMovesInFlightCountsClaimed(t *testing.T) {
	m := allocation.Move{Index: "hot", Shard: 0, From: "n0", FromName: "node-0", To: "n2", ToName: "node-2", SizeBytes: 1 << 30, Phase: "relieve"}
	nodes := []cluster.Node{{ID: "n0", Name: "node-0"}, {ID: "n1", Name: "node-1"}, {ID: "n2", Name: "node-2"}}
	for _, tc := range []struct {
		name   string
		status ledgerStatus
		copy   cluster.Copy
		want   int
	}{
		{"claimed, relocating as planned", statusClaimed, cluster.Copy{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n2"}, 1},
		// Under the allocation-filter strategy OpenSearch picks the target.
		{"claimed, relocating elsewhere", statusClaimed, cluster.Copy{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n1"}, 1},
		// Not yet known to have been issued: held until verification settles it.
		{"claimed, still on its source", statusClaimed, cluster.Copy{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateStarted}, 1},
		{"claimed, arrived", statusClaimed, cluster.Copy{Index: "hot", Shard: 0, Node: "n2", State: cluster.StateStarted}, 0},
		{"issued, relocating", statusIssued, cluster.Copy{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n2"}, 1},
		{"skipped", statusSkipped, cluster.Copy{Index: "hot", Shard: 0, Node: "n0", State: cluster.StateRelocating, RelocatingNode: "n2"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			lk := state.Key{PK: pk("prod"), SK: ledgerKey("plan#x", m)}
			entry := ledgerEntry{Move: m, Group: []allocation.Move{m}, Status: tc.status, PlanKey: "plan#x", ClaimedAt: w.Now()}
			if tc.status == statusIssued {
				entry.Strategy = "reroute"
			}
			if _, err := state.PutJSON(t.Context(), r.store, lk, entry, state.Condition{IfAbsent: true}, 0, w.Now()); err != nil {
				t.Fatal(err)
			}
			snap := &cluster.Snapshot{Nodes: nodes, Copies: []cluster.Copy{tc.copy}}
			got, err := r.e.ownMovesInFlight(t.Context(), "prod", snap)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("own moves in flight: %+v, want %d", got, tc.want)
			}
		})
	}
}
