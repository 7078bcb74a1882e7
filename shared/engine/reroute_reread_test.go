package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/state"
)

// TestRerouteErrorReread: a real reroute whose answer is lost (a timeout) may have landed; the
// routing is read again, and the outcome follows what it shows, not the error.
func TestRerouteErrorReread(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lands  bool
		want   string
		status ledgerStatus
	}{
		{name: "timed out but landed", lands: true, want: OutcomeExecuted, status: statusIssued},
		{name: "timed out and did not land", lands: false, want: OutcomeRefused, status: statusRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			planKey := r.planned(t, w)
			r.apis["prod"].rerouteErr = func(_ []allocation.Move, dryRun bool) error {
				if dryRun {
					return nil
				}
				if tc.lands {
					w.relocating("h1", 0, "c")
				}
				return context.DeadlineExceeded
			}
			res, err := r.e.Move(t.Context(), "prod", planKey)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " " + tc.want}) {
				t.Fatalf("outcomes: got %v (%+v), want %s %s", got, res.Outcomes, wantMove, tc.want)
			}
			items, err := r.store.Query(t.Context(), pk("prod"), ledgerPrefix)
			if err != nil || len(items) != 1 {
				t.Fatalf("ledger: %v %v", items, err)
			}
			e, err := state.DecodeJSON[ledgerEntry](items[0].Value)
			if err != nil || e.Status != tc.status {
				t.Fatalf("ledger status %s (%v), want %s", e.Status, err, tc.status)
			}
		})
	}
}
