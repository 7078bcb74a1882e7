package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/state"
)

// flakyBus fails its first fail Publish calls, as EventBridge does when throttled or unreachable,
// and records the rest.
type flakyBus struct {
	bus.Memory
	mu   sync.Mutex
	fail int
}

func (f *flakyBus) Publish(ctx context.Context, events ...bus.Event) error {
	f.mu.Lock()
	failing := f.fail > 0
	if failing {
		f.fail--
	}
	f.mu.Unlock()
	if failing {
		return errors.New("eventbridge: ThrottlingException")
	}
	return f.Memory.Publish(ctx, events...)
}

// TestMoveRetryPublishesWhatItIssued: the move was issued, then publishing its event failed and
// the invocation failed. Its retry reports the move executed and publishes it, without issuing it
// again; a third delivery then skips it.
func TestMoveRetryPublishesWhatItIssued(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	flaky := &flakyBus{fail: 1}
	r.e.Bus = flaky

	if _, err := r.e.Move(t.Context(), "prod", planKey); err == nil || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Fatalf("first Move: got %v, want the publish failure", err)
	}
	w.relocate("h1", "a", "c") // OpenSearch carries out the issued move
	retry, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeLabels(retry); !slices.Equal(got, []string{wantMove + " executed"}) || !strings.Contains(retry.Outcomes[0].Reason, "never published") {
		t.Fatalf("retry: got %v %+v, want %s executed, saying its event was never published", got, retry.Outcomes, wantMove)
	}
	published := events[bus.ShardMoveExecuted](t, flaky.Drain(), bus.TypeShardMoveExecuted)
	if len(published) != 1 || published[0].Outcome != OutcomeExecuted {
		t.Fatalf("Shard Move Executed after the retry: got %+v, want one executed", published)
	}
	third, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeLabels(third); !slices.Equal(got, []string{wantMove + " skipped"}) {
		t.Fatalf("third delivery: got %v, want skipped", got)
	}
	issued := 0
	reroutes, _, _ := r.apis["prod"].calls()
	for _, c := range reroutes {
		if !c.DryRun {
			issued++
		}
	}
	if issued != 1 {
		t.Fatalf("real reroute calls: got %d, want 1", issued)
	}
}

// TestDetectRetryPublishesTheStoredPlan: detect stored its plan, then publishing "Moves Planned"
// failed. The retry finds the stored plan and publishes it; a duplicate after that does not.
func TestDetectRetryPublishesTheStoredPlan(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	var key string
	for i := range 3 {
		if i > 0 {
			w.tick(30 * time.Second)
		}
		key = r.ingest(t, "prod")
		if i < 2 {
			if _, err := r.e.Detect(t.Context(), "prod", key); err != nil {
				t.Fatal(err)
			}
		}
	}
	flaky := &flakyBus{fail: 1}
	r.e.Bus = flaky
	if _, err := r.e.Detect(t.Context(), "prod", key); err == nil {
		t.Fatal("first detect: got nil, want the publish failure")
	}
	for i, want := range []int{1, 0} {
		res, err := r.e.Detect(t.Context(), "prod", key)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Repeated {
			t.Fatalf("detect %d after the failure: not repeated", i+1)
		}
		planned := events[bus.MovesPlanned](t, flaky.Drain(), bus.TypeMovesPlanned)
		if len(planned) != want {
			t.Fatalf("detect %d after the failure: %d Moves Planned, want %d", i+1, len(planned), want)
		}
	}
}

// TestVerifyClaimedEntryLeftBehind: an invocation claimed a move, issued it, and died before
// recording so. Once the lease's TTL has passed, a later cycle verifies the entry like an issued one.
func TestVerifyClaimedEntryLeftBehind(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	plan, _, err := state.GetJSON[allocation.Plan](t.Context(), r.store, state.Key{PK: pk("prod"), SK: planKey})
	if err != nil {
		t.Fatal(err)
	}
	m := plan.Moves[0]
	lk := state.Key{PK: pk("prod"), SK: ledgerKey(planKey, m)}
	if _, err := state.PutJSON(t.Context(), r.store, lk, ledgerEntry{Move: m, Status: statusClaimed, PlanKey: planKey, ClaimedAt: w.Now()},
		state.Condition{}, 0, w.Now()); err != nil {
		t.Fatal(err)
	}
	w.relocate("h1", "a", "c")
	w.tick(leaseTTL)
	if _, err := r.e.Detect(t.Context(), "prod", r.ingest(t, "prod")); err != nil {
		t.Fatal(err)
	}
	entry, _, err := state.GetJSON[ledgerEntry](t.Context(), r.store, lk)
	if err != nil || entry.Status != statusArrived {
		t.Fatalf("ledger entry: got %+v (%v), want arrived", entry, err)
	}
}

// TestIngestDuplicateTrigger: the schedule delivered twice, or the webhook and the schedule at
// once. The second sample within minSampleInterval of the last neither replaces it (its rates over
// no time would be unknown) nor announces it again.
func TestIngestDuplicateTrigger(t *testing.T) {
	cases := []struct {
		name    string
		after   time.Duration
		wantDup bool
	}{
		{name: "same instant", after: 0, wantDup: true},
		{name: "within the minimum interval", after: minSampleInterval - time.Second, wantDup: true},
		{name: "at the minimum interval", after: minSampleInterval, wantDup: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
			r.ingest(t, "prod")
			w.tick(30 * time.Second)
			first := r.ingest(t, "prod")
			r.bus.Drain()
			w.tick(tc.after)
			res, err := r.e.Ingest(t.Context(), []string{"prod"})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Duplicate != tc.wantDup {
				t.Fatalf("duplicate: got %v, want %v", res[0].Duplicate, tc.wantDup)
			}
			announced := events[bus.StatsIngested](t, r.bus.Drain(), bus.TypeStatsIngested)
			if tc.wantDup {
				if res[0].SnapshotKey != first || len(announced) != 0 {
					t.Fatalf("got key %s and %d events, want the last sample's key %s and no event", res[0].SnapshotKey, len(announced), first)
				}
				if !res[0].Snapshot.Copies[0].LoadKnown {
					t.Fatal("the last sample's loads are no longer known")
				}
				return
			}
			if res[0].SnapshotKey == first || len(announced) != 1 {
				t.Fatalf("got key %s and %d events, want a new sample announced once", res[0].SnapshotKey, len(announced))
			}
		})
	}
}

// TestAlertIngestIsNeverADuplicate: an alert asks for a sample now, however recent the scheduled
// one: it is taken and announced.
func TestAlertIngestIsNeverADuplicate(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	r.ingest(t, "prod")
	w.tick(30 * time.Second)
	first := r.ingest(t, "prod")
	r.bus.Drain()
	w.tick(time.Second)
	// The plan is stored before the sample is announced: the detect function that "Stats
	// Ingested" wakes finds it, rather than racing this call to plan the same snapshot.
	planned := map[string]bool{}
	r.e.Bus = publishHook{Publisher: r.bus, before: func(ev bus.Event) {
		if ev.DetailType != bus.TypeStatsIngested {
			return
		}
		raw, err := json.Marshal(ev.Detail)
		if err != nil {
			t.Fatal(err)
		}
		var d bus.StatsIngested
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		_, err = r.store.Get(t.Context(), state.Key{PK: pk("prod"), SK: planKey(d.SnapshotKey)})
		planned[d.SnapshotKey] = err == nil
	}}
	ir, _, err := r.e.IngestAndDetect(t.Context(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	announced := events[bus.StatsIngested](t, r.bus.Drain(), bus.TypeStatsIngested)
	if ir.Duplicate || ir.SnapshotKey == first || len(announced) != 1 {
		t.Fatalf("duplicate %v, key %s (scheduled %s), %d Stats Ingested; want a new sample announced", ir.Duplicate, ir.SnapshotKey, first, len(announced))
	}
	if !planned[ir.SnapshotKey] {
		t.Errorf("Stats Ingested for %s went out before its plan was stored", ir.SnapshotKey)
	}
}

// publishHook calls before with each event, then publishes it.
type publishHook struct {
	bus.Publisher
	before func(bus.Event)
}

func (p publishHook) Publish(ctx context.Context, events ...bus.Event) error {
	for _, ev := range events {
		p.before(ev)
	}
	return p.Publisher.Publish(ctx, events...)
}
