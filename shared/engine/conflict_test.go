package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/state"
)

// racingStore plays another invocation that writes an item between this invocation's read and its
// conditional write: before a conditional Put to an item whose SK is sk, it runs interlope on the
// store beneath, at most times times. The Put then meets a genuine conflict.
type racingStore struct {
	state.Store
	sk        string
	interlope func(ctx context.Context, s state.Store, it state.Item) error

	mu    sync.Mutex
	times int
	raced int
}

func (r *racingStore) Put(ctx context.Context, it state.Item, cond state.Condition) (state.Item, error) {
	r.mu.Lock()
	race := it.Key.SK == r.sk && (cond.IfAbsent || cond.IfVersion != 0) && r.raced < r.times
	if race {
		r.raced++
	}
	r.mu.Unlock()
	if race {
		if err := r.interlope(ctx, r.Store, it); err != nil {
			return state.Item{}, err
		}
	}
	return r.Store.Put(ctx, it, cond)
}

// overwrite stores value unconditionally, as the other invocation's write.
func overwrite(value string) func(context.Context, state.Store, state.Item) error {
	return func(ctx context.Context, s state.Store, it state.Item) error {
		_, err := s.Put(ctx, state.Item{Key: it.Key, Value: []byte(value)}, state.Condition{})
		return err
	}
}

// TestReplicasConflictOnCooldownsIsBenign: another invocation stores the cooldown memory between
// this one's read and write. This one decides again from the stored memory and applies once; one
// that keeps losing leaves the snapshot to the others. Neither fails.
func TestReplicasConflictOnCooldownsIsBenign(t *testing.T) {
	cases := []struct {
		name         string
		races        int
		wantRepeated bool
		wantPuts     []string
	}{
		{name: "lost once: decides again and applies", races: 1, wantPuts: []string{"capped=2", "popular=2"}},
		{name: "lost every time: leaves it to the others", races: memoryAttempts, wantRepeated: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, key := replicaRig(t, replicaWorld())
			racing := &racingStore{Store: r.store, sk: replicasMemoryKey, times: tc.races, interlope: overwrite(`{}`)}
			r.e.Store = racing
			res, err := r.e.Replicas(t.Context(), "prod", key)
			if err != nil {
				t.Fatalf("got err %v, want a conflict to be benign", err)
			}
			if racing.raced != tc.races {
				t.Fatalf("raced %d times, want %d", racing.raced, tc.races)
			}
			_, puts, _ := r.apis["prod"].calls()
			got := replicaPuts(puts)
			slices.Sort(got)
			if res.Repeated != tc.wantRepeated || !slices.Equal(got, tc.wantPuts) {
				t.Fatalf("repeated %v settings %v, want repeated %v settings %v", res.Repeated, got, tc.wantRepeated, tc.wantPuts)
			}
			changed := events[bus.ReplicasChanged](t, r.bus.Drain(), bus.TypeReplicasChanged)
			if wantEvents := len(tc.wantPuts) > 0; (len(changed) == 1) != wantEvents {
				t.Fatalf("Replicas Changed events: got %d, want one: %v", len(changed), wantEvents)
			}
		})
	}
}

// TestDetectConflictOnStreaksIsBenign: another invocation stores hotspot streaks between this
// one's read and write, every cycle. Detect keeps theirs, fails nothing, and still plans and
// publishes the move once the streak is sustained.
func TestDetectConflictOnStreaksIsBenign(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	// The other invocation computed the same streaks from the same cluster.
	racing := &racingStore{Store: r.store, sk: memoryKey, times: 3, interlope: func(ctx context.Context, s state.Store, it state.Item) error {
		_, err := s.Put(ctx, it, state.Condition{})
		return err
	}}
	r.e.Store = racing
	planKey := r.planned(t, w)
	if racing.raced != 3 {
		t.Fatalf("raced %d times, want 3: once per detect", racing.raced)
	}
	if !strings.HasPrefix(planKey, "plan#") {
		t.Fatalf("plan key %q", planKey)
	}
}

// TestFilterAlreadyHeldIsSkipped: a record of the same exclusion exists (an earlier cycle's, or a
// racing invocation's). The move is skipped with the reason and the index's settings untouched.
func TestFilterAlreadyHeldIsSkipped(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("allocation-filter"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	if _, err := state.PutJSON(t.Context(), r.store, state.Key{PK: pk("prod"), SK: filterKey("h1", "a")},
		filterRecord{Index: "h1", Node: "id-a", NodeName: "a"}, state.Condition{}, 0, w.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatalf("got err %v, want a held filter to be benign", err)
	}
	if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " skipped"}) {
		t.Fatalf("outcomes: got %v, want %s skipped", got, wantMove)
	}
	if why := res.Outcomes[0].Reason; !strings.Contains(why, "already excluded") {
		t.Errorf("reason: got %q, want it to say the exclusion is already held", why)
	}
	if _, puts, _ := r.apis["prod"].calls(); len(puts) != 0 {
		t.Errorf("settings calls: got %+v, want none", puts)
	}
}
