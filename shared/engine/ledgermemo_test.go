package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/state"
)

// TestHeadMemoDecodesAlike reads a ledger several times through one memo as entries are claimed,
// issued, verified, added and dropped: every head must be what decoding its bytes gives, a
// caller's change to a head must not reach a later read, and an entry that does not decode must
// fail as it did without the memo.
func TestHeadMemoDecodesAlike(t *testing.T) {
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	hot := allocation.Move{Index: "hot", Shard: 1, From: "n0", FromName: "node-0", To: "n2", ToName: "node-2", Phase: allocation.PhaseWriteHotspot, SwapGroup: 1}
	back := allocation.Move{Index: "cool", Shard: 0, From: "n2", FromName: "node-2", To: "n0", ToName: "node-0", Phase: allocation.PhaseSwapReturn, SwapGroup: 1}
	other := allocation.Move{Index: "warm", Shard: 2, From: "n1", FromName: "node-1", To: "n3", ToName: "node-3", Phase: allocation.PhaseWriteHotspot}
	item := func(sk string, e ledgerEntry) state.Item {
		b, err := state.EncodeJSON(e)
		if err != nil {
			t.Fatal(err)
		}
		return state.Item{Key: state.Key{PK: "cluster#c", SK: sk}, Value: b}
	}
	swap := ledgerEntry{Move: hot, Group: []allocation.Move{hot, back}, Status: statusClaimed, PlanKey: "plan#1", ClaimedAt: at}
	issued := swap
	issued.Status, issued.Strategy = statusIssued, "reroute"
	arrived := issued
	arrived.Status, arrived.Reason = statusArrived, "hot[1] is STARTED on node-2"
	alone := ledgerEntry{Move: other, Status: statusIssued, Strategy: "reroute", PlanKey: "plan#2", ClaimedAt: at.Add(time.Minute)}
	reads := []struct {
		name  string
		items []state.Item
		fails bool
	}{
		{"a claimed swap", []state.Item{item("ledger#a", swap)}, false},
		{"the same bytes again", []state.Item{item("ledger#a", swap)}, false},
		{"issued", []state.Item{item("ledger#a", issued)}, false},
		{"a second entry", []state.Item{item("ledger#a", issued), item("ledger#b", alone)}, false},
		{"the first verified", []state.Item{item("ledger#a", arrived), item("ledger#b", alone)}, false},
		{"the first expired", []state.Item{item("ledger#b", alone)}, false},
		{"an entry that does not decode", []state.Item{item("ledger#b", alone), {Key: state.Key{PK: "cluster#c", SK: "ledger#x"}, Value: []byte(`{"move":`)}}, true},
		{"the swap back under its old key", []state.Item{item("ledger#a", swap), item("ledger#b", alone)}, false},
	}
	var memo headMemo
	for _, r := range reads {
		read := memo.read("cluster#c")
		failed := false
		for _, it := range r.items {
			got, err := read.head(it)
			want, wantErr := state.DecodeJSON[ledgerHead](it.Value)
			if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("%s: %s: error %v, without the memo %v", r.name, it.Key.SK, err, wantErr)
			}
			if err != nil {
				failed = true
				break
			}
			if !reflect.DeepEqual(got, want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				t.Fatalf("%s: %s: got %s, want %s", r.name, it.Key.SK, gj, wj)
			}
			// What a caller does to its head stays with it.
			got.Status = "mutated"
			for i := range got.Group {
				got.Group[i].To = "mutated"
			}
		}
		if failed != r.fails {
			t.Fatalf("%s: failed %v, want %v", r.name, failed, r.fails)
		}
		if !failed {
			read.done()
		}
	}
}
