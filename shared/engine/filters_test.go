package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// holdFilter records an exclusion of node a from h1 added at added, as the move function leaves
// it, with the setting in place.
func holdFilter(t *testing.T, r *rig, added time.Time) state.Key {
	t.Helper()
	key := state.Key{PK: pk("prod"), SK: filterKey("h1", "a")}
	if _, err := state.PutJSON(t.Context(), r.store, key, filterRecord{Index: "h1", Node: "id-a", NodeName: "a", AddedAt: added},
		state.Condition{}, 0, added); err != nil {
		t.Fatal(err)
	}
	r.apis["prod"].settings["h1"] = map[string]string{excludeSetting: "a"}
	return key
}

// TestFilterCleanup: an exclusion comes off an hour after it was added when its copies left (before
// then OpenSearch's balancer would bring them back), at once when a copy of its index is
// unassigned, when it outlived its hotspot, when it is too old, and its record goes when the
// index is gone; otherwise it stays.
func TestFilterCleanup(t *testing.T) {
	cases := []struct {
		name       string
		age        time.Duration
		hot        bool // detect's last sample saw a hot
		deleted    bool
		moved      bool   // h1's copy has left a
		unassigned bool   // h1 has a replica with no node
		want       string // in the log reason; "" keeps the filter
	}{
		{name: "copies left: kept so that they do not come back", age: time.Minute, hot: true, moved: true},
		{name: "copies left, hotspot over: kept so that they do not come back", age: 2 * time.Minute, moved: true},
		{name: "copies left an hour ago", age: filterMaxAge, moved: true, want: "no copy of h1 remains on a, and in 1h0m0s"},
		{name: "copies left, a copy unassigned", age: time.Minute, hot: true, moved: true, unassigned: true,
			want: "no copy of h1 remains on a and a copy of it is unassigned"},
		{name: "still hot and young: kept", age: time.Minute, hot: true},
		{name: "just added, hotspot not yet re-read: kept", age: 30 * time.Second},
		{name: "hotspot over", age: 2 * time.Minute, want: "the hotspot on a is over"},
		{name: "too old", age: filterMaxAge, hot: true, want: "could not leave a"},
		{name: "index deleted", age: filterMaxAge, hot: true, deleted: true, want: "no longer exists"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			if tc.unassigned {
				for i := range w.indices {
					if w.indices[i].Name == "h1" {
						w.indices[i].Replicas = 1
					}
				}
				w.copies = append(w.copies, cluster.Copy{Index: "h1", Shard: 0, State: cluster.StateUnassigned, SizeBytes: 1 << 30})
			}
			r := newRig(t, liveConfig("allocation-filter"), map[string]*world{"prod": w})
			key := holdFilter(t, r, w.Now().Add(-tc.age))
			streaks := map[string]allocation.Streak{}
			if tc.hot {
				streaks["id-a"] = allocation.Streak{Count: 2, At: w.Now()}
			}
			if _, err := state.PutJSON(t.Context(), r.store, state.Key{PK: pk("prod"), SK: memoryKey},
				allocation.Memory{Streaks: streaks}, state.Condition{}, 0, w.Now()); err != nil {
				t.Fatal(err)
			}
			var logs strings.Builder
			r.e.Log = slog.New(slog.NewTextHandler(&logs, nil))
			api := r.apis["prod"]
			api.deleted = map[string]bool{"h1": tc.deleted}
			if tc.moved {
				w.relocate("h1", "a", "c")
			}
			r.ingest(t, "prod")
			_, err := r.store.Get(t.Context(), key)
			kept := err == nil
			if kept != (tc.want == "") {
				t.Fatalf("record kept %v, want kept %v", kept, tc.want == "")
			}
			_, puts, _ := api.calls()
			switch {
			case tc.want == "" || tc.deleted:
				if len(puts) != 0 {
					t.Fatalf("settings calls: got %+v, want none", puts)
				}
			default:
				if len(puts) != 1 || puts[0].Index != "h1" || puts[0].Settings[excludeSetting] != nil {
					t.Fatalf("settings calls: got %+v, want the exclusion removed from h1", puts)
				}
			}
			if !strings.Contains(logs.String(), tc.want) {
				t.Fatalf("log does not give the reason %q:\n%s", tc.want, logs.String())
			}
		})
	}
}

// TestFilterBudgetCountsEveryCopyItMoves: excluding a from h1 pushes both of h1's copies off a,
// so with max_moves_per_cycle 1 the filter is not added; with 2 it is.
func TestFilterBudgetCountsEveryCopyItMoves(t *testing.T) {
	for _, tc := range []struct {
		perCycle int
		want     string
	}{
		{perCycle: 1, want: OutcomeSkipped},
		{perCycle: 2, want: OutcomeExecuted},
	} {
		t.Run(fmt.Sprintf("max_moves_per_cycle %d", tc.perCycle), func(t *testing.T) {
			w := newWorld("a", "b", "c").
				index("h0", 0, []float64{4}, nil, []string{"a"}).
				index("h1", 0, []float64{2.5, 0.02}, nil, []string{"a"}, []string{"a"}).
				index("h2", 0, []float64{1.5}, nil, []string{"a"}).sized("h2", 2<<30).
				index("other", 0, []float64{1, 0.5}, nil, []string{"b"}, []string{"c"}).
				queueing("a", 500)
			cfg := liveConfig("allocation-filter")
			cfg.Safety.MaxMovesPerCycle = tc.perCycle
			r := newRig(t, cfg, map[string]*world{"prod": w})
			var res DetectResult
			for i := range 3 {
				if i > 0 {
					w.tick(30 * time.Second)
				}
				var err error
				if res, err = r.e.Detect(t.Context(), "prod", r.ingest(t, "prod")); err != nil {
					t.Fatal(err)
				}
			}
			if len(res.Plan.Moves) != 1 || res.Plan.Moves[0].Index != "h1" {
				t.Fatalf("plan: got %+v, want one move of h1", res.Plan.Moves)
			}
			out, err := r.e.Move(t.Context(), "prod", res.PlanKey)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Outcomes) != 1 || out.Outcomes[0].Outcome != tc.want {
				t.Fatalf("outcomes: got %+v, want %s", out.Outcomes, tc.want)
			}
			if tc.want == OutcomeSkipped && !strings.Contains(out.Outcomes[0].Reason, "2 copies") {
				t.Errorf("reason: got %q, want it to count the 2 copies the filter moves", out.Outcomes[0].Reason)
			}
		})
	}
}

// TestMovesByExclusion: the planner plans for exclusions under the allocation-filter strategy, and
// under auto for a day after the cluster refused _cluster/reroute; never under reroute.
func TestMovesByExclusion(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		refused  bool
		after    time.Duration // since the refusal
		want     bool
	}{
		{strategy: "reroute", refused: true, want: false},
		{strategy: "allocation-filter", want: true},
		{strategy: "auto", want: false},
		{strategy: "auto", refused: true, after: 23 * time.Hour, want: true},
		{strategy: "auto", refused: true, after: 25 * time.Hour, want: false},
	} {
		t.Run(fmt.Sprintf("%s refused %v %s before", tc.strategy, tc.refused, tc.after), func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig(tc.strategy), map[string]*world{"prod": w})
			if tc.refused {
				r.e.rememberRerouteRefused(t.Context(), "prod", errors.New("reroute: opensearch returned 403 Forbidden"))
				w.tick(tc.after)
			}
			got, err := r.e.movesByExclusion(t.Context(), "prod")
			if err != nil || got != tc.want {
				t.Errorf("got %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}
