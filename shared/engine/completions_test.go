package engine

import (
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/safety"
)

// TestCompletionsOnly: with the breaker open only on shardwise's own moves in flight, the staged
// returns completing swaps under way go and the plan's other moves wait; any other failing check,
// or a plan without such a return, holds every move as before.
func TestCompletionsOnly(t *testing.T) {
	back := allocation.Move{Index: "cold", Shard: 0, From: "id-b", To: "id-a", Phase: allocation.PhaseStagedReturn,
		Completes: &allocation.Moved{Index: "hot", Shard: 0, From: "id-a", To: "id-b"}}
	fresh := allocation.Move{Index: "hot", Shard: 1, From: "id-c", To: "id-d", Phase: allocation.PhaseWriteHotspot}
	ownFull := safety.Verdict{Checks: []safety.Check{{Name: safety.CheckOwnInFlight, OK: false, Value: "5", Limit: "4", Reason: "5 of shardwise's moves still relocating, limit 4"}}}
	yellowToo := safety.Verdict{Checks: append(slices.Clone(ownFull.Checks), safety.Check{Name: "health", OK: false, Value: "yellow", Limit: "green", Reason: "cluster health \"yellow\""})}
	closed := safety.Verdict{Closed: true, Checks: []safety.Check{{Name: safety.CheckOwnInFlight, OK: true, Value: "1", Limit: "4"}}}
	cases := []struct {
		name     string
		moves    []allocation.Move
		breaker  safety.Verdict
		kept     []string
		heldKeys []string
	}{
		{"own moves at their limit: the staged return goes, the rest waits", []allocation.Move{fresh, back}, ownFull, []string{back.Key()}, []string{fresh.Key()}},
		{"another check failing too: nothing goes this way", []allocation.Move{fresh, back}, yellowToo, nil, nil},
		{"no staged return in the plan", []allocation.Move{fresh}, ownFull, nil, nil},
		{"the breaker closed", []allocation.Move{fresh, back}, closed, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, held := completionsOnly(tc.moves, tc.breaker)
			var gotKept, gotHeld []string
			for _, m := range kept {
				gotKept = append(gotKept, m.Key())
			}
			for _, o := range held {
				gotHeld = append(gotHeld, o.Move.Key())
				if o.Outcome != OutcomeSkipped || o.Reason == "" {
					t.Errorf("held %s: outcome %s reason %q, want skipped with the breaker's reason", o.Move.Key(), o.Outcome, o.Reason)
				}
			}
			if !slices.Equal(gotKept, tc.kept) || !slices.Equal(gotHeld, tc.heldKeys) {
				t.Errorf("got kept %v held %v, want %v %v", gotKept, gotHeld, tc.kept, tc.heldKeys)
			}
		})
	}
}
