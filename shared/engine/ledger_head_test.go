package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
)

// TestLedgerHeadReadsEntry: the ledger as verification and the breaker read it gives the entry's
// status, strategy, claim time and moves, each move whole but for its verdicts.
func TestLedgerHeadReadsEntry(t *testing.T) {
	vs := []allocation.Verdict{{Decider: allocation.DeciderHeap, Decision: allocation.NotPreferred, Value: 0.8, Limit: 0.85, Reason: "node-2 heap would be 80%"}}
	hot := allocation.Move{Index: "hot", Shard: 1, Primary: true, From: "n0", FromName: "node-0", To: "n2", ToName: "node-2",
		SizeBytes: 1 << 30, WriteLoad: 2.5, Phase: allocation.PhaseWriteHotspot, SwapGroup: 3, Reason: "relieve", Verdicts: vs, EstimatedSeconds: 42}
	back := allocation.Move{Index: "cool", Shard: 0, From: "n2", FromName: "node-2", To: "n0", ToName: "node-0",
		SizeBytes: 1 << 20, WriteLoad: 0.1, Phase: allocation.PhaseSwapReturn, SwapGroup: 3, Reason: "return", Verdicts: vs}
	at := time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)
	bare := func(ms ...allocation.Move) []allocation.Move {
		out := make([]allocation.Move, len(ms))
		for i, m := range ms {
			m.Verdicts = nil
			out[i] = m
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		entry ledgerEntry
		want  []allocation.Move
	}{
		{"a swap's group", ledgerEntry{Move: hot, Group: []allocation.Move{hot, back}, Status: statusIssued, Strategy: "reroute", PlanKey: "plan#1", ClaimedAt: at,
			Each: []ledgerMove{{Move: hot.Key(), Status: statusIssued}}}, bare(hot, back)},
		{"a move alone", ledgerEntry{Move: hot, Status: statusClaimed, PlanKey: "plan#1", ClaimedAt: at}, bare(hot)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.entry)
			if err != nil {
				t.Fatal(err)
			}
			var h ledgerHead
			if err := json.Unmarshal(b, &h); err != nil {
				t.Fatal(err)
			}
			if h.Status != tc.entry.Status || h.Strategy != tc.entry.Strategy || !h.ClaimedAt.Equal(tc.entry.ClaimedAt) || h.Move.Phase != tc.entry.Move.Phase {
				t.Errorf("got status %q strategy %q claimed %v phase %q, want %q %q %v %q", h.Status, h.Strategy, h.ClaimedAt, h.Move.Phase,
					tc.entry.Status, tc.entry.Strategy, tc.entry.ClaimedAt, tc.entry.Move.Phase)
			}
			if got := h.moves(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("moves:\ngot  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
