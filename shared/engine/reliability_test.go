package engine

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
)

// TestDryRunCleanupChangesNothing: with dry-run on, a filter whose copies have left is not taken
// off the index: the settings stay, the record stays, and the log says what would be removed.
func TestDryRunCleanupChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dryRun bool
		want   string
	}{
		{name: "dry-run: would remove", dryRun: true, want: "would remove"},
		{name: "live: removed", dryRun: false, want: "allocation filter removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			cfg := liveConfig("allocation-filter")
			cfg.Safety.DryRun = tc.dryRun
			r := newRig(t, cfg, map[string]*world{"prod": w})
			key := holdFilter(t, r, w.Now().Add(-filterMaxAge))
			var logs strings.Builder
			r.e.Log = slog.New(slog.NewTextHandler(&logs, nil))
			w.relocate("h1", "a", "c")
			r.ingest(t, "prod")
			_, puts, _ := r.apis["prod"].calls()
			_, err := r.store.Get(t.Context(), key)
			if tc.dryRun {
				if len(puts) != 0 {
					t.Fatalf("dry-run sent settings: %+v", puts)
				}
				if err != nil {
					t.Fatalf("dry-run dropped the filter record: %v", err)
				}
			} else if len(puts) != 1 || err == nil {
				t.Fatalf("live: puts %+v, record err %v; want the filter removed", puts, err)
			}
			if !strings.Contains(logs.String(), tc.want) {
				t.Fatalf("log lacks %q:\n%s", tc.want, logs.String())
			}
		})
	}
}

// TestFilterKeepsOperatorEntries: shardwise's exclusion comes off leaving exactly what was there
// before it, an operator's own entries included, even when the operator excluded the same node.
func TestFilterKeepsOperatorEntries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		original string // the operator's value before shardwise's move; "" none
		wantAdd  bool   // shardwise adds (and later removes) an exclusion
		want     any    // the value after cleanup; nil is the setting removed
		steer    []string
		added    string // the value shardwise writes, when it adds
	}{
		{name: "no prior value", original: "", wantAdd: true, want: nil, added: "a"},
		{name: "operator excludes another node", original: "x", wantAdd: true, want: "x", added: "x,a"},
		{name: "operator's spacing kept", original: "x, y", wantAdd: true, want: "x, y", added: "x, y,a"},
		{name: "steering names come off with the source", original: "x", wantAdd: true, want: "x", steer: []string{"b"}, added: "x,a,b"},
		{name: "a steering name the operator lists stays the operator's", original: "b", wantAdd: true, want: "b", steer: []string{"b"}, added: "b,a"},
		{name: "operator already excludes the node", original: "a", wantAdd: false, want: "a"},
		{name: "operator excludes the node among others", original: "x,a", wantAdd: false, want: "x,a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("allocation-filter"), map[string]*world{"prod": w})
			api := r.apis["prod"]
			if tc.original != "" {
				api.settings["h1"] = map[string]string{excludeSetting: tc.original}
			}
			m := allocation.Move{Index: "h1", Shard: 0, From: "id-a", FromName: "a", To: "id-c", ToName: "c"}
			_, err := r.e.addExclusion(t.Context(), api, "prod", m, tc.steer)
			_, puts, _ := api.calls()
			if added := err == nil && len(puts) == 1; added != tc.wantAdd {
				t.Fatalf("added %v (err %v, puts %+v), want %v", added, err, puts, tc.wantAdd)
			}
			if tc.wantAdd && puts[0].Settings[excludeSetting] != tc.added {
				t.Fatalf("added %v, want %q", puts[0].Settings[excludeSetting], tc.added)
			}
			w.relocate("h1", "a", "c")
			w.wait(filterMaxAge)
			r.ingest(t, "prod")
			got, ok := api.settings["h1"][excludeSetting]
			if tc.want == nil {
				if ok {
					t.Fatalf("after cleanup: %q, want the setting removed", got)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("after cleanup: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMoveRedPrimaryLost: a red cluster whose shard has no copy left skips the plan with
// "operator action needed" in every outcome, not a generic health refusal.
func TestMoveRedPrimaryLost(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	w.index("lost", 0, []float64{0}, nil, []string{""})
	r.apis["prod"].health = Health{Status: "red"}
	res, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Outcome != OutcomeSkipped ||
		!strings.Contains(res.Outcomes[0].Reason, "operator action needed: 1 shards have no copy left (lost[0])") {
		t.Fatalf("outcomes: %+v, want skipped with operator action needed", res.Outcomes)
	}
}
