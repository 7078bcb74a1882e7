package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/state"
)

// secondPlan stores, for a newer snapshot of w, a plan of its own with one move other than the
// first plan's, as a webhook or alarm plan arriving beside the 30 s one would.
func secondPlan(t *testing.T, r *rig, w *world, first string) string {
	t.Helper()
	plan, _, err := state.GetJSON[allocation.Plan](t.Context(), r.store, state.Key{PK: pk("prod"), SK: first})
	if err != nil {
		t.Fatal(err)
	}
	m := plan.Moves[0]
	m.Index, m.To, m.ToName, m.WriteLoad = "h2", "id-b", "b", 1.5
	plan.Moves = []allocation.Move{m}
	w.tick(30 * time.Second)
	key := planKey(r.ingest(t, "prod"))
	if _, err := state.PutJSON(t.Context(), r.store, state.Key{PK: pk("prod"), SK: key}, plan, state.Condition{}, 0, w.Now()); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestMoveLeaseOneMoverPerCluster: a second move invocation starts while the first is between its
// breaker's health read and its reroute. Without a lease both read "nothing in flight" and both
// act. With it the second skips every move, saying who holds the lease, and acts once the first
// has released it.
func TestMoveLeaseOneMoverPerCluster(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	first := r.planned(t, w)
	second := secondPlan(t, r, w, first)
	api := r.apis["prod"]

	var during MoveResult
	api.onHealth = func() {
		var err error
		if during, err = r.e.Move(t.Context(), "prod", second); err != nil {
			t.Errorf("second invocation: %v", err)
		}
	}
	res, err := r.e.Move(t.Context(), "prod", first)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " executed"}) {
		t.Fatalf("first invocation: got %v, want %s executed", got, wantMove)
	}
	if got := outcomeLabels(during); !slices.Equal(got, []string{"h2[0] a->b skipped"}) ||
		!strings.Contains(during.Outcomes[0].Reason, "holds prod's allocation lease (move "+first) {
		t.Fatalf("second invocation, during the first: got %v %+v, want skipped naming the lease holder", got, during.Outcomes)
	}
	issued := 0
	reroutes, _, _ := api.calls()
	for _, c := range reroutes {
		if !c.DryRun {
			issued++
		}
	}
	if issued != 1 {
		t.Fatalf("real reroute calls: got %d, want 1 (%+v)", issued, reroutes)
	}

	// Released: the next invocation takes the lease.
	after, err := r.e.Move(t.Context(), "prod", second)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range after.Outcomes {
		if strings.Contains(o.Reason, "lease") {
			t.Fatalf("after the first released the lease: %s %s", o.Outcome, o.Reason)
		}
	}
}

// TestLeaseExpires: an invocation that died holding the lease blocks the cluster only until the
// lease's TTL passes.
func TestLeaseExpires(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	if _, err := r.e.takeLease(t.Context(), "prod", "a move that died"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.takeLease(t.Context(), "prod", "the next move"); err == nil || !strings.Contains(err.Error(), "a move that died") {
		t.Fatalf("within the TTL: got %v, want the lease held by the dead invocation", err)
	}
	w.wait(leaseTTL + leaseClockSkew)
	l, err := r.e.takeLease(t.Context(), "prod", "the next move")
	if err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	l.Release()
	if rec, _, err := state.GetJSON[leaseRecord](t.Context(), r.store, state.Key{PK: pk("prod"), SK: leaseSK}); err != nil || rec.Holder != "" {
		t.Fatalf("released lease: got %+v (%v), want a record with no holder", rec, err)
	}
}
