package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// TestLedgerKeepAlive: an entry whose moves are in flight is written again once less than half of
// snapshot_ttl is left, and not past ledgerInFlightMaxAge after its claim; an entry with nothing in
// flight is left to expire.
func TestLedgerKeepAlive(t *testing.T) {
	const ttl = 2 * time.Hour
	now := t0
	for _, tc := range []struct {
		name      string
		inFlight  int
		claimed   time.Time
		expiresAt time.Time
		refresh   bool
		reason    string
	}{
		{"nothing in flight", 0, now.Add(-3 * time.Hour), now.Add(10 * time.Minute), false, "no move of the entry is in flight"},
		{"in flight, most of its life left", 1, now.Add(-30 * time.Minute), now.Add(90 * time.Minute), false, "more than half of snapshot_ttl"},
		{"in flight, half its life left", 1, now.Add(-time.Hour), now.Add(time.Hour), true, "kept until 2026-11-29T12:00:00Z"},
		{"in flight, about to expire", 2, now.Add(-5 * time.Hour), now.Add(time.Second), true, "2 of its moves still in flight"},
		{"in flight, never expires", 1, now.Add(-time.Hour), time.Time{}, false, "never expires"},
		{"in flight, claim time unknown", 1, time.Time{}, now.Add(time.Minute), true, "kept until"},
		{"in flight just under the bound", 1, now.Add(-ledgerInFlightMaxAge + time.Minute), now.Add(time.Minute), true, "kept until"},
		{"in flight at the bound", 1, now.Add(-ledgerInFlightMaxAge), now.Add(time.Minute), false, "taken as stuck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ledgerKeepAlive(tc.inFlight, tc.claimed, tc.expiresAt, now, ttl)
			if got.Refresh != tc.refresh || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("got %+v, want refresh %v, reason containing %q", got, tc.refresh, tc.reason)
			}
			if got.Refresh && !got.ExpiresAt.Equal(now.Add(ttl)) {
				t.Errorf("expires at %v, want %v", got.ExpiresAt, now.Add(ttl))
			}
			if !got.Refresh && !got.ExpiresAt.IsZero() {
				t.Errorf("no refresh, yet an expiry %v", got.ExpiresAt)
			}
		})
	}
}

// TestLedgerOutlivesSnapshotTTLWhileRelocating: a copy that relocates for longer than snapshot_ttl
// (with the translog replay a 20 GiB copy at 4.2 WRITE threads takes 2 h 44 min) keeps its ledger
// entry, so that the breaker goes on counting it among shardwise's own moves and holding its
// nodes. Detect's verification runs every half hour here; the entry was written with
// snapshot_ttl (2 h), as the move function writes it.
func TestLedgerOutlivesSnapshotTTLWhileRelocating(t *testing.T) {
	m := allocation.Move{Index: "h1", Shard: 0, From: "id-a", FromName: "a", To: "id-c", ToName: "c", SizeBytes: 1 << 30, Phase: "relieve"}
	for _, tc := range []struct {
		name string
		// claimedAgo is how long before the first cycle the entry was claimed.
		claimedAgo time.Duration
		// arriveAt is the cycle at which the copy lands on its target (0: never).
		arriveAt int
		// want is shardwise's own moves in flight the breaker counts after each cycle.
		want []int
	}{
		{"relocating for 4 h", 0, 0, []int{1, 1, 1, 1, 1, 1, 1, 1}},
		{"lands after 2 h 30 min", 0, 5, []int{1, 1, 1, 1, 0, 0, 0, 0}},
		// Claimed 7 days less 30 minutes ago: past the bound from the first cycle, it is no
		// longer rewritten and expires snapshot_ttl after its last write.
		{"relocating past the bound", ledgerInFlightMaxAge - 30*time.Minute, 0, []int{1, 1, 1, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			lk := state.Key{PK: pk("prod"), SK: ledgerKey("plan#x", m)}
			entry := ledgerEntry{Move: m, Group: []allocation.Move{m}, Status: statusIssued, Strategy: "reroute", PlanKey: "plan#x",
				ClaimedAt: w.Now().Add(-tc.claimedAgo), Reason: "reroute accepted"}
			if _, err := state.PutJSON(t.Context(), r.store, lk, entry, state.Condition{IfAbsent: true}, r.e.ttl(), w.Now()); err != nil {
				t.Fatal(err)
			}
			w.relocating("h1", 0, "c")
			var got []int
			for i := 1; i <= len(tc.want); i++ {
				w.wait(30 * time.Minute)
				if i == tc.arriveAt {
					w.relocate("h1", "a", "c")
					w.mu.Lock()
					for j := range w.copies {
						if c := &w.copies[j]; c.Index == "h1" {
							c.State, c.RelocatingNode = cluster.StateStarted, ""
						}
					}
					w.mu.Unlock()
				}
				snap, err := r.apis["prod"].ReadTopology(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				verified, err := r.e.verifyMoves(t.Context(), "prod", &snap)
				if err != nil {
					t.Fatal(err)
				}
				own, err := r.e.ownMovesInFlight(t.Context(), "prod", &snap)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, len(own))
				// Detect hands the planner what its verification found in flight: what the breaker
				// then counts.
				if a, b := moveKeys(verified), moveKeys(own); !slices.Equal(a, b) {
					t.Errorf("cycle %d: verification found %v in flight, the breaker counts %v", i, a, b)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("own moves in flight after each half-hour cycle: got %v, want %v", got, tc.want)
			}
			// The entry's bytes are never changed by keeping it: what it records stays whole.
			if it, err := r.store.Get(t.Context(), lk); err == nil {
				e, derr := state.DecodeJSON[ledgerEntry](it.Value)
				if derr != nil || e.Reason == "" || e.PlanKey != "plan#x" || len(e.Group) != 1 {
					t.Errorf("ledger entry after keeping: %+v (%v)", e, derr)
				}
			}
		})
	}
}

// moveKeys are the moves' ledger keys, sorted.
func moveKeys(moves []allocation.Move) []string {
	out := make([]string, 0, len(moves))
	for _, m := range moves {
		out = append(out, m.Key())
	}
	slices.Sort(out)
	return out
}
