package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/state"
)

func liveConfig(strategy string) config.Config {
	c := testConfig("prod")
	c.Safety.DryRun = false
	c.MoveStrategy = config.MoveStrategy(strategy)
	return c
}

func outcomeLabels(res MoveResult) []string {
	var out []string
	for _, o := range res.Outcomes {
		out = append(out, moveLabel(o.Move)+" "+o.Outcome)
	}
	return out
}

func TestMoveBreakerOpenSkipsEveryMove(t *testing.T) {
	cases := []struct {
		name string
		// open sets the fault up after the plan is made.
		open    func(w *world, api *fakeAPI)
		failing string
		reason  string
		// settled sets the optional fixed caps on relocating and initializing copies to 0.
		settled bool
	}{
		{"health yellow", func(_ *world, api *fakeAPI) { api.health.Status = "yellow" }, "health", `cluster health "yellow", required "green" or better`, false},
		{"a shard relocating under a fixed cap of 0", func(_ *world, api *fakeAPI) { api.health.Relocating = 1 }, "relocating", "1 shards relocating, limit 0", true},
		{"a shard initializing under a fixed cap of 0", func(_ *world, api *fakeAPI) { api.health.Initializing = 2 }, "initializing", "2 shards initializing, limit 0", true},
		{"relocations beyond cluster_concurrent_rebalance", func(w *world, _ *fakeAPI) {
			w.relocating("other", 0, "c")
			w.relocating("other", 1, "b")
			w.relocating("h0", 0, "b")
		}, "cluster_rebalance", "3 relocations besides shardwise's own, limit 2 (cluster_concurrent_rebalance)", false},
		{"stale stats", func(w *world, _ *fakeAPI) { w.wait(2 * time.Minute) }, "stats_fresh", "stats are 2m0s old, limit 1m0s", false},
		{"unreachable", func(_ *world, api *fakeAPI) { api.healthErr = errors.New("dial tcp 10.0.0.1:443: i/o timeout") }, "reachable", "OpenSearch unreachable: dial tcp", false},
	}
	for _, mode := range []string{"dry-run", "live"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				w := hotWorld()
				cfg := liveConfig("reroute")
				cfg.Safety.DryRun = mode == "dry-run"
				if tc.settled {
					cfg.Safety.MaxRelocating, cfg.Safety.MaxInitializing = 0, 0
				}
				r := newRig(t, cfg, map[string]*world{"prod": w})
				planKey := r.planned(t, w)
				api := r.apis["prod"]
				_, _, readsBefore := api.calls()
				tc.open(w, api)

				res, err := r.e.Move(t.Context(), "prod", planKey)
				if err != nil {
					t.Fatal(err)
				}
				if res.Breaker.Closed {
					t.Fatalf("breaker closed, want open on %s", tc.failing)
				}
				var failed []string
				for _, c := range res.Breaker.Failed() {
					failed = append(failed, c.Name)
				}
				if !slices.Contains(failed, tc.failing) {
					t.Errorf("failing checks: got %v, want %s among them", failed, tc.failing)
				}
				reason := res.Breaker.Reason()
				if !strings.Contains(reason, tc.reason) {
					t.Errorf("breaker reason %q lacks %q", reason, tc.reason)
				}
				if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " skipped"}) {
					t.Errorf("outcomes: got %v want every move skipped", got)
				}
				for _, o := range res.Outcomes {
					if o.Reason != reason {
						t.Errorf("outcome reason: got %q, want the breaker's %q", o.Reason, reason)
					}
				}
				reroutes, puts, reads := api.calls()
				if len(reroutes) != 0 || len(puts) != 0 {
					t.Errorf("cluster touched with the breaker open: reroutes %+v puts %+v", reroutes, puts)
				}
				// One fresh read when OpenSearch answered: the in-flight checks read its routing table.
				wantReads := readsBefore + 1
				if api.healthErr != nil {
					wantReads = readsBefore
				}
				if reads != wantReads {
					t.Errorf("fresh reads with the breaker open: got %d, want %d", reads, wantReads)
				}
				ev := events[bus.ShardMoveExecuted](t, r.bus.Drain(), bus.TypeShardMoveExecuted)
				if len(ev) != 1 || ev[0].Outcome != OutcomeSkipped || ev[0].Breaker.Closed || ev[0].Reason != reason || ev[0].DryRun != cfg.Safety.DryRun {
					t.Errorf("Shard Move Executed: got %+v, want one skipped event with the open breaker", ev)
				}
			})
		}
	}
}

func TestMoveDryRunOnlyAsksOpenSearch(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w}) // dry-run by default
	planKey := r.planned(t, w)
	for range 2 {
		res, err := r.e.Move(t.Context(), "prod", planKey)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Breaker.Closed {
			t.Fatalf("breaker open: %s", res.Breaker.Reason())
		}
		if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " dry-run"}) {
			t.Errorf("outcomes: got %v", got)
		}
		if !strings.Contains(res.Outcomes[0].Reason, "OpenSearch accepts it") {
			t.Errorf("reason: got %q", res.Outcomes[0].Reason)
		}
	}
	reroutes, puts, _ := r.apis["prod"].calls()
	want := []rerouteCall{{Moves: []string{wantMove}, DryRun: true}, {Moves: []string{wantMove}, DryRun: true}}
	if !slices.EqualFunc(reroutes, want, eqCall) || len(puts) != 0 {
		t.Errorf("calls: reroutes %+v puts %+v, want only dry-run reroutes", reroutes, puts)
	}
	if items, _ := r.store.Query(t.Context(), pk("prod"), "ledger#"); len(items) != 0 {
		t.Errorf("dry-run claimed %d ledger entries, want none", len(items))
	}
	for _, ev := range events[bus.ShardMoveExecuted](t, r.bus.Drain(), bus.TypeShardMoveExecuted) {
		if !ev.DryRun || ev.Outcome != OutcomeDryRun {
			t.Errorf("event: dry_run %v outcome %s", ev.DryRun, ev.Outcome)
		}
	}
}

func eqCall(a, b rerouteCall) bool { return a.DryRun == b.DryRun && slices.Equal(a.Moves, b.Moves) }

func TestMoveLiveDryRunsThenActsOnce(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)

	first, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeLabels(first); !slices.Equal(got, []string{wantMove + " executed"}) {
		t.Fatalf("first Move: got %v", got)
	}
	// The same plan delivered again (EventBridge delivers at least once).
	second, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeLabels(second); !slices.Equal(got, []string{wantMove + " skipped"}) || !strings.Contains(second.Outcomes[0].Reason, "a move is issued once") {
		t.Errorf("second Move: got %v (%q), want skipped by the ledger", got, second.Outcomes[0].Reason)
	}
	reroutes, _, _ := r.apis["prod"].calls()
	want := []rerouteCall{{Moves: []string{wantMove}, DryRun: true}, {Moves: []string{wantMove}, DryRun: false}}
	if !slices.EqualFunc(reroutes, want, eqCall) {
		t.Errorf("reroutes: got %+v want the dry run then the one real call", reroutes)
	}
	items, err := r.store.Query(t.Context(), pk("prod"), "ledger#")
	if err != nil || len(items) != 1 {
		t.Fatalf("ledger: got %d entries (%v) want 1", len(items), err)
	}
	entry, err := state.DecodeJSON[ledgerEntry](items[0].Value)
	if err != nil || entry.Status != "issued" || entry.PlanKey != planKey {
		t.Errorf("ledger entry: got %+v (%v), want issued for %s", entry, err, planKey)
	}
}

func TestMoveConcurrentInvocationsIssueOnce(t *testing.T) {
	const racers = 8
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	results := make([]MoveResult, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { results[i], errs[i] = r.e.Move(t.Context(), "prod", planKey) })
	}
	wg.Wait()
	executed, skipped := 0, 0
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		for _, o := range results[i].Outcomes {
			switch o.Outcome {
			case OutcomeExecuted:
				executed++
			case OutcomeSkipped:
				skipped++
			default:
				t.Errorf("racer %d: outcome %s (%s)", i, o.Outcome, o.Reason)
			}
		}
	}
	if executed != 1 || skipped != racers-1 {
		t.Errorf("outcomes: %d executed %d skipped, want 1 and %d", executed, skipped, racers-1)
	}
	reroutes, _, _ := r.apis["prod"].calls()
	issued := 0
	for _, c := range reroutes {
		if !c.DryRun {
			issued++
		}
	}
	if issued != 1 {
		t.Errorf("real reroute calls: got %d want exactly 1 (%+v)", issued, reroutes)
	}
}

func TestMoveRecheckSkipsAMoveWhoseCopyIsGone(t *testing.T) {
	cases := []struct {
		name   string
		change func(w *world)
		reason string
	}{
		{"the copy moved elsewhere", func(w *world) { w.relocate("h1", "a", "b") }, "h1[0] is no longer STARTED on a"},
		{"the target now holds a copy of the shard", func(w *world) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.copies = append(w.copies, w.copies[1])
			w.copies[len(w.copies)-1].Node, w.copies[len(w.copies)-1].Primary = "id-c", false
		}, "same_shard says NO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			planKey := r.planned(t, w)
			tc.change(w)
			res, err := r.e.Move(t.Context(), "prod", planKey)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " skipped"}) {
				t.Fatalf("outcomes: got %v", got)
			}
			if why := res.Outcomes[0].Reason; !strings.HasPrefix(why, "re-check on fresh state: ") || !strings.Contains(why, tc.reason) {
				t.Errorf("reason: got %q, want a re-check naming %q", why, tc.reason)
			}
			if reroutes, _, _ := r.apis["prod"].calls(); len(reroutes) != 0 {
				t.Errorf("reroutes: got %+v, want none", reroutes)
			}
			if items, _ := r.store.Query(t.Context(), pk("prod"), "ledger#"); len(items) != 0 {
				t.Errorf("ledger: a skipped move claimed %d entries", len(items))
			}
		})
	}
}

// twoHotWorld has a and b hot alike and c, d cool: the plan moves h1 a->d and g1 b->c (h2 and g2,
// 2 GiB, take longer to relocate, as in hotWorld).
func twoHotWorld() *world {
	w := newWorld("a", "b", "c", "d")
	for _, n := range []struct{ prefix, node string }{{"h", "a"}, {"g", "b"}} {
		for i, load := range []float64{4, 2.5, 1.5, 0.02} {
			w.index(fmt.Sprintf("%s%d", n.prefix, i), 0, []float64{load}, nil, []string{n.node})
		}
		w.sized(n.prefix+"2", 2<<30)
		w.queueing(n.node, 500)
	}
	return w.index("other", 0, []float64{1, 0.5}, nil, []string{"c"}, []string{"d"})
}

func TestMoveRerouteRefusals(t *testing.T) {
	refuse := func(index string, dryRun bool) func([]allocation.Move, bool) error {
		return func(moves []allocation.Move, dry bool) error {
			if dry == dryRun && slices.ContainsFunc(moves, func(m allocation.Move) bool { return m.Index == index }) {
				return &opensearch.APIError{Status: 400, Type: "illegal_argument_exception", Reason: "[move_allocation] can't move " + index}
			}
			return nil
		}
	}
	cases := []struct {
		name     string
		refuse   func([]allocation.Move, bool) error
		outcomes []string
		calls    []rerouteCall
		ledger   map[string]string
	}{
		{
			name:     "every move accepted: one dry run, one call",
			outcomes: []string{"h1[0] a->d executed", "g1[0] b->c executed"},
			calls: []rerouteCall{{Moves: []string{"h1[0] a->d", "g1[0] b->c"}, DryRun: true},
				{Moves: []string{"h1[0] a->d", "g1[0] b->c"}}},
			ledger: map[string]string{"h1": "issued", "g1": "issued"},
		},
		{
			name:     "one move refused in the dry run: the other still goes",
			refuse:   refuse("g1", true),
			outcomes: []string{"g1[0] b->c refused", "h1[0] a->d executed"},
			calls: []rerouteCall{{Moves: []string{"h1[0] a->d", "g1[0] b->c"}, DryRun: true},
				{Moves: []string{"h1[0] a->d"}, DryRun: true}, {Moves: []string{"g1[0] b->c"}, DryRun: true},
				{Moves: []string{"h1[0] a->d"}}},
			ledger: map[string]string{"h1": "issued", "g1": "refused"},
		},
		{
			name:     "the real call refused: every move refused",
			refuse:   refuse("h1", false),
			outcomes: []string{"h1[0] a->d refused", "g1[0] b->c refused"},
			calls: []rerouteCall{{Moves: []string{"h1[0] a->d", "g1[0] b->c"}, DryRun: true},
				{Moves: []string{"h1[0] a->d", "g1[0] b->c"}}},
			ledger: map[string]string{"h1": "refused", "g1": "refused"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := twoHotWorld()
			cfg := liveConfig("reroute")
			r := newRig(t, cfg, map[string]*world{"prod": w})
			var planKey string
			for i := range 3 {
				if i > 0 {
					w.tick(30 * time.Second)
				}
				res, err := r.e.Detect(t.Context(), "prod", r.ingest(t, "prod"))
				if err != nil {
					t.Fatal(err)
				}
				planKey = res.PlanKey
			}
			api := r.apis["prod"]
			api.rerouteErr = tc.refuse
			res, err := r.e.Move(t.Context(), "prod", planKey)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeLabels(res); !slices.Equal(got, tc.outcomes) {
				t.Errorf("outcomes: got %v want %v", got, tc.outcomes)
			}
			for _, o := range res.Outcomes {
				if o.Outcome == OutcomeRefused && !strings.Contains(o.Reason, "can't move") {
					t.Errorf("%s refused without OpenSearch's reason: %q", moveLabel(o.Move), o.Reason)
				}
			}
			if reroutes, _, _ := api.calls(); !slices.EqualFunc(reroutes, tc.calls, eqCall) {
				t.Errorf("reroute calls:\n got %+v\nwant %+v", reroutes, tc.calls)
			}
			items, err := r.store.Query(t.Context(), pk("prod"), "ledger#")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, it := range items {
				e, err := state.DecodeJSON[ledgerEntry](it.Value)
				if err != nil {
					t.Fatal(err)
				}
				got[e.Move.Index] = string(e.Status)
			}
			if !maps.Equal(got, tc.ledger) {
				t.Errorf("ledger: got %v want %v", got, tc.ledger)
			}
		})
	}
}

func TestMoveAutoFallsBackToAllocationFilter(t *testing.T) {
	const excl = "index.routing.allocation.exclude._name"
	cases := []struct {
		name     string
		original string
		added    string
		restored any
	}{
		{"no exclusion before: the setting is removed again", "", "a", nil},
		{"an operator's exclusion is kept", "old-node", "old-node,a", "old-node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("auto"), map[string]*world{"prod": w})
			planKey := r.planned(t, w)
			api := r.apis["prod"]
			if tc.original != "" {
				api.settings["h1"] = map[string]string{excl: tc.original}
			}
			api.rerouteErr = func([]allocation.Move, bool) error {
				return fmt.Errorf("%w: %w", ErrForbidden, &opensearch.APIError{Status: 403, Type: "security_exception", Reason: "no permissions for [cluster:admin/reroute]"})
			}

			res, err := r.e.Move(t.Context(), "prod", planKey)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " executed"}) || res.Outcomes[0].Strategy != "allocation-filter" {
				t.Fatalf("outcomes: got %v strategy %q, want executed by allocation filter", got, res.Outcomes[0].Strategy)
			}
			if why := res.Outcomes[0].Reason; !strings.Contains(why, "reroute forbidden") || !strings.Contains(why, excl) {
				t.Errorf("reason: got %q", why)
			}
			reroutes, puts, _ := api.calls()
			if len(reroutes) != 1 || !reroutes[0].DryRun {
				t.Errorf("reroutes: got %+v, want only the forbidden dry run", reroutes)
			}
			if len(puts) != 1 || puts[0].Index != "h1" || puts[0].Settings[excl] != tc.added {
				t.Fatalf("settings: got %+v, want %s=%q on h1", puts, excl, tc.added)
			}
			// The refusal is remembered: the next cycles plan for exclusions.
			if by, err := r.e.movesByExclusion(t.Context(), "prod"); err != nil || !by {
				t.Errorf("plans for exclusions after the refusal: %v (%v), want true", by, err)
			}

			// Nothing is cleaned up while the copy is still on a.
			if _, err := r.e.Move(t.Context(), "prod", planKey); err != nil {
				t.Fatal(err)
			}
			if _, puts, _ := api.calls(); len(puts) != 1 {
				t.Errorf("settings changed while the copy is still on a: %+v", puts)
			}

			// OpenSearch moves the copy off a; the exclusion keeps it off for the hour, then the
			// cycle's ingest restores the original value.
			w.relocate("h1", "a", "c")
			w.wait(filterMaxAge)
			w.tick(30 * time.Second)
			r.ingest(t, "prod")
			_, puts, _ = api.calls()
			if len(puts) != 2 || puts[1].Index != "h1" || puts[1].Settings[excl] != tc.restored {
				t.Fatalf("cleanup: got %+v, want %s=%v on h1", puts, excl, tc.restored)
			}
			if items, _ := r.store.Query(t.Context(), pk("prod"), "filter#"); len(items) != 0 {
				t.Errorf("filter records left after cleanup: %d", len(items))
			}
		})
	}
}

// An exclusion steers OpenSearch's allocator: d, busy and holding no copy of h1, has no room for
// it, so the exclusion names d too, and the move's reason says so; cleanup takes both names off.
func TestMoveExclusionSteersAwayFromBusyNodes(t *testing.T) {
	const excl = "index.routing.allocation.exclude._name"
	w := newWorld("a", "b", "c", "d").
		index("h0", 0, []float64{4}, nil, []string{"a"}).
		index("h1", 0, []float64{2.5}, nil, []string{"a"}).
		index("h2", 0, []float64{1.5}, nil, []string{"a"}).sized("h2", 2<<30).
		index("h3", 0, []float64{0.02}, nil, []string{"a"}).
		index("other", 0, []float64{1, 0.5}, nil, []string{"b"}, []string{"c"}).
		index("busy", 0, []float64{7}, nil, []string{"d"}).
		queueing("a", 500)
	r := newRig(t, liveConfig("allocation-filter"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	api := r.apis["prod"]
	res, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Outcome != OutcomeExecuted {
		t.Fatalf("outcomes: %+v, want one executed", res.Outcomes)
	}
	m := res.Outcomes[0].Move
	if m.ToName == "d" {
		t.Fatalf("planned %s, onto the busy node", moveLabel(m))
	}
	_, puts, _ := api.calls()
	if len(puts) != 1 || puts[0].Settings[excl] != "a,d" {
		t.Fatalf("settings: got %+v, want %s=a,d on %s", puts, excl, m.Index)
	}
	if why := res.Outcomes[0].Reason; !strings.Contains(why, "and d, which hold no copy of "+m.Index+" and have no room for its copies there within their goal") {
		t.Errorf("reason: %q", why)
	}
	w.relocate(m.Index, "a", m.ToName)
	w.wait(filterMaxAge)
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	if got, ok := api.settings[m.Index][excl]; ok {
		t.Errorf("after cleanup: %q, want the setting removed", got)
	}
}

// A steering name never keeps OpenSearch from a copy it must assign: once a copy of the index is
// unassigned (its node left), cleanup takes the steering names off and keeps the source's
// exclusion, and later takes that off too.
func TestFilterSteeringDroppedForUnassignedCopy(t *testing.T) {
	const excl = "index.routing.allocation.exclude._name"
	w := newWorld("a", "b", "c", "d").
		index("h0", 0, []float64{4}, nil, []string{"a"}).
		index("h1", 0, []float64{2.5}, nil, []string{"a"}).
		index("h2", 0, []float64{1.5}, nil, []string{"a"}).sized("h2", 2<<30).
		index("h3", 0, []float64{0.02}, nil, []string{"a"}).
		index("other", 0, []float64{1, 0.5}, nil, []string{"b"}, []string{"c"}).
		index("busy", 0, []float64{7}, nil, []string{"d"}).
		queueing("a", 500)
	r := newRig(t, liveConfig("allocation-filter"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	api := r.apis["prod"]
	res, err := r.e.Move(t.Context(), "prod", planKey)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Outcomes[0].Move
	if got := api.settings[m.Index][excl]; got != "a,d" {
		t.Fatalf("%s excludes %q, want a,d", m.Index, got)
	}
	w.mu.Lock()
	w.copies = append(w.copies, cluster.Copy{Index: m.Index, Shard: 0, State: cluster.StateUnassigned})
	w.mu.Unlock()
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	if got := api.settings[m.Index][excl]; got != "a" {
		t.Fatalf("with a copy unassigned, %s excludes %q, want a alone", m.Index, got)
	}
	items, err := r.store.Query(t.Context(), pk("prod"), filterPrefix)
	if err != nil || len(items) != 1 {
		t.Fatalf("filter records: %d (%v), want 1", len(items), err)
	}
	if rec, err := state.DecodeJSON[filterRecord](items[0].Value); err != nil || len(rec.Steer) != 0 {
		t.Fatalf("record: %+v (%v), want no steering names left", rec, err)
	}
	w.relocate(m.Index, "a", m.ToName)
	w.wait(filterMaxAge)
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	if got, ok := api.settings[m.Index][excl]; ok {
		t.Errorf("after cleanup: %q, want the setting removed", got)
	}
}

// A filter that cured the hotspot leaves no moves to plan, so no Move runs again: ingest, which
// runs every cycle with fresh topology, removes it once the copies have left and the hour is over
// (until then it keeps OpenSearch's balancer from bringing them back).
func TestIngestRemovesFilterOnceCopiesLeft(t *testing.T) {
	const excl = "index.routing.allocation.exclude._name"
	w := hotWorld()
	r := newRig(t, liveConfig("allocation-filter"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	api := r.apis["prod"]
	if _, err := r.e.Move(t.Context(), "prod", planKey); err != nil {
		t.Fatal(err)
	}
	if _, puts, _ := api.calls(); len(puts) != 1 || puts[0].Settings[excl] != "a" {
		t.Fatalf("settings: got %+v, want the exclusion of a", puts)
	}
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	if _, puts, _ := api.calls(); len(puts) != 1 {
		t.Fatalf("exclusion removed while the copy is still on a: %+v", puts)
	}
	w.relocate("h1", "a", "c")
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	if _, puts, _ := api.calls(); len(puts) != 1 {
		t.Fatalf("exclusion removed as soon as the copy left a: %+v", puts)
	}
	w.wait(filterMaxAge)
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	_, puts, _ := api.calls()
	if len(puts) != 2 || puts[1].Settings[excl] != nil {
		t.Fatalf("after the copy left: settings %+v, want the exclusion removed (null)", puts)
	}
	if _, ok := api.settings["h1"][excl]; ok {
		t.Errorf("h1 still excludes: %v", api.settings["h1"])
	}
	if items, _ := r.store.Query(t.Context(), pk("prod"), "filter#"); len(items) != 0 {
		t.Errorf("filter records left: %d", len(items))
	}
}

func TestMoveErrors(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	cases := []struct {
		name    string
		cluster string
		plan    string
		is      error
	}{
		{"unknown cluster", "nope", "plan#x", ErrUnknownCluster},
		{"unknown plan", "prod", "plan#snap#20261129T100000.000000000Z", state.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.e.Move(t.Context(), tc.cluster, tc.plan); !errors.Is(err, tc.is) {
				t.Errorf("Move: got %v, want %v", err, tc.is)
			}
		})
	}
}

func TestMoveFreshReadFailing(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	r.apis["prod"].readErr = errors.New("connection reset")
	if _, err := r.e.Move(t.Context(), "prod", planKey); err == nil || !strings.Contains(err.Error(), "fresh read: connection reset") {
		t.Errorf("Move: got %v, want the fresh read's error", err)
	}
	if reroutes, _, _ := r.apis["prod"].calls(); len(reroutes) != 0 {
		t.Errorf("reroutes without fresh state: %+v", reroutes)
	}
}

// The next Detect checks every issued move on its snapshot: arrived when the copy is STARTED on
// the target, not arrived when it is neither there nor on its way, and nothing while it relocates.
func TestDetectVerifiesIssuedMoves(t *testing.T) {
	cases := []struct {
		name    string
		after   func(w *world)
		outcome string
		status  ledgerStatus
	}{
		{"the copy is started on its target", func(w *world) { w.relocate("h1", "a", "c") }, OutcomeArrived, statusArrived},
		{"the copy never left", func(*world) {}, OutcomeNotArrived, statusLost},
		{"the copy went elsewhere", func(w *world) { w.relocate("h1", "a", "b") }, OutcomeNotArrived, statusLost},
		{"the copy is still relocating", func(w *world) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.copies[1].State, w.copies[1].RelocatingNode = cluster.StateRelocating, "id-c"
		}, "", statusIssued},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			planKey := r.planned(t, w)
			if _, err := r.e.Move(t.Context(), "prod", planKey); err != nil {
				t.Fatal(err)
			}
			r.bus.Drain()
			tc.after(w)
			w.tick(30 * time.Second)
			if _, err := r.e.Detect(t.Context(), "prod", r.ingest(t, "prod")); err != nil {
				t.Fatal(err)
			}
			var verdicts []string
			for _, ev := range events[bus.ShardMoveExecuted](t, r.bus.Drain(), bus.TypeShardMoveExecuted) {
				if ev.Strategy == "verify" {
					verdicts = append(verdicts, moveLabel(ev.Move)+" "+ev.Outcome)
				}
			}
			var want []string
			if tc.outcome != "" {
				want = []string{wantMove + " " + tc.outcome}
			}
			if !slices.Equal(verdicts, want) {
				t.Errorf("verification events: got %v want %v", verdicts, want)
			}
			items, err := r.store.Query(t.Context(), pk("prod"), "ledger#")
			if err != nil || len(items) != 1 {
				t.Fatalf("ledger: %d entries, %v", len(items), err)
			}
			if e, err := state.DecodeJSON[ledgerEntry](items[0].Value); err != nil || e.Status != tc.status {
				t.Errorf("ledger status: got %+v (%v), want %s", e, err, tc.status)
			}
		})
	}
}

// What is in flight is held to what it protects against, not to zero: shardwise acts while
// OpenSearch's own balancer relocates within its limits, waits for its own moves to land, and
// keeps each node within node_concurrent_recoveries.
func TestMoveWithRecoveriesInFlight(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, r *rig, w *world)
		outcome string
		// failing is the breaker check that opens, or the budget a skipped move names.
		failing string
		reason  string
	}{
		{
			name:    "OpenSearch's balancer relocating a copy onto the target",
			setup:   func(_ *testing.T, _ *rig, w *world) { w.relocating("other", 0, "c") },
			outcome: OutcomeExecuted,
		},
		{
			name: "OpenSearch's balancer at cluster_concurrent_rebalance",
			setup: func(_ *testing.T, _ *rig, w *world) {
				w.relocating("other", 0, "c")
				w.relocating("other", 1, "b")
			},
			outcome: OutcomeExecuted,
		},
		{
			name: "a larger cluster_concurrent_rebalance read from the cluster",
			setup: func(_ *testing.T, _ *rig, w *world) {
				w.relocating("other", 0, "c")
				w.relocating("other", 1, "b")
				w.relocating("h0", 0, "b")
				w.limits = cluster.RecoveryLimits{NodeIncoming: 4, NodeOutgoing: 4, ClusterRebalance: 4, Known: true}
			},
			outcome: OutcomeExecuted,
		},
		{
			name: "the target already at its incoming recoveries limit",
			setup: func(_ *testing.T, _ *rig, w *world) {
				w.relocating("other", 0, "c")
				w.relocating("h2", 0, "c")
			},
			outcome: OutcomeSkipped,
			failing: "node_concurrent_incoming_recoveries",
			reason:  "budget node_concurrent_incoming_recoveries: c would have 3 incoming recoveries, limit 2",
		},
		{
			name: "one of shardwise's own moves still relocating onto the target",
			setup: func(t *testing.T, r *rig, w *world) {
				w.relocating("other", 0, "c")
				r.issued(t, allocation.Move{Index: "other", Shard: 0, From: "id-b", FromName: "b", To: "id-c", ToName: "c", Phase: allocation.PhaseWriteHotspot})
			},
			outcome: OutcomeSkipped,
			failing: "own_move_in_flight_per_node",
			reason:  "budget own_move_in_flight_per_node: c has one of shardwise's moves still relocating (other[0] b→c)",
		},
		{
			name: "a swap's return still relocating onto the target after its first move landed",
			setup: func(t *testing.T, r *rig, w *world) {
				w.relocating("other", 0, "c")
				r.issuedGroup(t, statusArrived,
					allocation.Move{Index: "other", Shard: 1, From: "id-c", FromName: "c", To: "id-b", ToName: "b", Phase: allocation.PhaseWriteHotspot, SwapGroup: 1},
					allocation.Move{Index: "other", Shard: 0, From: "id-b", FromName: "b", To: "id-c", ToName: "c", Phase: allocation.PhaseSwapReturn, SwapGroup: 1})
			},
			outcome: OutcomeSkipped,
			failing: "own_move_in_flight_per_node",
			reason:  "budget own_move_in_flight_per_node: c has one of shardwise's moves still relocating (other[0] b→c)",
		},
		{
			name: "shardwise's earlier move has landed",
			setup: func(t *testing.T, r *rig, _ *world) {
				r.issued(t, allocation.Move{Index: "other", Shard: 1, From: "id-b", FromName: "b", To: "id-c", ToName: "c", Phase: allocation.PhaseWriteHotspot})
			},
			outcome: OutcomeExecuted,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			planKey := r.planned(t, w)
			tc.setup(t, r, w)
			res, err := r.e.Move(t.Context(), "prod", planKey)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Breaker.Checks {
				if c.Value == "" || c.Limit == "" {
					t.Errorf("check %s: value %q limit %q, want both logged", c.Name, c.Value, c.Limit)
				}
			}
			if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " " + tc.outcome}) {
				t.Fatalf("outcomes: got %v want %s %s (breaker: %s)", got, wantMove, tc.outcome, res.Breaker.Reason())
			}
			reroutes, _, _ := r.apis["prod"].calls()
			if tc.outcome == OutcomeExecuted {
				if !res.Breaker.Closed {
					t.Errorf("breaker open: %s", res.Breaker.Reason())
				}
				if len(reroutes) == 0 || reroutes[len(reroutes)-1].DryRun {
					t.Errorf("reroutes: got %+v, want the move issued", reroutes)
				}
				return
			}
			if len(reroutes) != 0 {
				t.Errorf("reroutes: got %+v, want none", reroutes)
			}
			if got := res.Outcomes[0].Reason; !strings.Contains(got, tc.reason) {
				t.Errorf("reason: got %q, want it to contain %q", got, tc.reason)
			}
			failed := []string{}
			for _, c := range res.Breaker.Failed() {
				failed = append(failed, c.Name)
			}
			if strings.HasPrefix(tc.reason, "budget ") {
				if len(failed) != 0 {
					t.Errorf("breaker failed %v, want closed with the move held by its budget", failed)
				}
			} else if !slices.Equal(failed, []string{tc.failing}) {
				t.Errorf("failed checks: got %v want [%s]", failed, tc.failing)
			}
		})
	}
}

// The move function re-checks with the planner's own admission rule on fresh state: a relocation
// into the target that started after planning fills it, and the move is no longer admitted.
func TestMoveRecheckUsesTheAdmissionRule(t *testing.T) {
	cases := []struct {
		name    string
		change  func(w *world)
		outcome string
		reason  string
	}{
		{"nothing changed: issued", func(*world) {}, "executed", ""},
		{"a relocation into the target started since: the target would saturate", func(w *world) { w.relocating("big", 0, "c") },
			"skipped", "fails the improvement rule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld().index("big", 0, []float64{5}, nil, []string{"b"})
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			planKey := r.planned(t, w)
			tc.change(w)
			res, err := r.e.Move(t.Context(), "prod", planKey)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeLabels(res); !slices.Equal(got, []string{wantMove + " " + tc.outcome}) {
				t.Fatalf("outcomes: got %v want [%s %s]", got, wantMove, tc.outcome)
			}
			if why := res.Outcomes[0].Reason; tc.reason != "" && !strings.Contains(why, tc.reason) {
				t.Errorf("reason: got %q, want it to name %q", why, tc.reason)
			}
		})
	}
}

// Overlapping invocations on a plan of two groups: one invocation issues both in one reroute call;
// the others skip, so no second call starts while the first call's relocations run.
func TestMoveConcurrentInvocationsKeepOneCall(t *testing.T) {
	const racers = 6
	w := twoHotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	var planKey string
	for i := range 3 {
		if i > 0 {
			w.tick(30 * time.Second)
		}
		res, err := r.e.Detect(t.Context(), "prod", r.ingest(t, "prod"))
		if err != nil {
			t.Fatal(err)
		}
		planKey = res.PlanKey
		if i == 2 && len(res.Plan.Moves) != 2 {
			t.Fatalf("plan: got %d moves, want one off each hot node", len(res.Plan.Moves))
		}
	}
	results := make([]MoveResult, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { results[i], errs[i] = r.e.Move(t.Context(), "prod", planKey) })
	}
	wg.Wait()
	executedBy := map[int]int{}
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		for _, o := range results[i].Outcomes {
			if o.Outcome == OutcomeExecuted {
				executedBy[i]++
			}
		}
	}
	if len(executedBy) != 1 {
		t.Errorf("invocations that executed moves: got %v, want exactly one", executedBy)
	}
	for _, n := range executedBy {
		if n != 2 {
			t.Errorf("moves executed: got %d, want both groups", n)
		}
	}
	reroutes, _, _ := r.apis["prod"].calls()
	issued := 0
	for _, c := range reroutes {
		if !c.DryRun {
			issued++
		}
	}
	if issued != 1 {
		t.Errorf("real reroute calls: got %d want exactly 1 (%+v)", issued, reroutes)
	}
}
