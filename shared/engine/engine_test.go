package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/snapshots"
)

func TestIngestDerivesRatesOnTheSecondSample(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})

	first, err := r.e.Ingest(t.Context(), []string{"prod"})
	if err != nil {
		t.Fatal(err)
	}
	s1 := first[0].Snapshot
	if s1.IntervalSeconds != 0 {
		t.Errorf("first sample: interval %v, want 0 (no previous counters)", s1.IntervalSeconds)
	}
	for _, c := range s1.Copies {
		if c.LoadKnown {
			t.Errorf("first sample: %s[%d] load known, want unknown", c.Index, c.Shard)
		}
	}

	w.tick(30 * time.Second)
	second, err := r.e.Ingest(t.Context(), []string{"prod"})
	if err != nil {
		t.Fatal(err)
	}
	s2 := second[0].Snapshot
	if s2.IntervalSeconds != 30 {
		t.Errorf("second sample: interval %v, want 30", s2.IntervalSeconds)
	}
	want := map[string]float64{"h0/0": 4, "h1/0": 2.5, "h2/0": 1.5, "h3/0": 0.02, "other/0": 1, "other/1": 0.5}
	for _, c := range s2.Copies {
		k := fmt.Sprintf("%s/%d", c.Index, c.Shard)
		if !c.LoadKnown || math.Abs(c.WriteLoad-want[k]) > 1e-3 {
			t.Errorf("second sample: %s load %v known %v, want %v known", k, c.WriteLoad, c.LoadKnown, want[k])
		}
	}
	a := s2.NodeByID("id-a")
	if math.Abs(a.Write.QueueLatencySeconds-5) > 1e-9 || math.Abs(a.Write.Utilization-8.02/8) > 1e-3 {
		t.Errorf("node a: latency %v utilization %v, want 5 s and %v", a.Write.QueueLatencySeconds, a.Write.Utilization, 8.02/8)
	}
	// The stored snapshot is what Detect will read: the same rates.
	loaded, _, err := snapshots.Load(t.Context(), r.store, "prod", second[0].SnapshotKey)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.IntervalSeconds != 30 || loaded.Cluster != "prod" {
		t.Errorf("stored snapshot: interval %v cluster %q", loaded.IntervalSeconds, loaded.Cluster)
	}
}

func TestIngestOneClusterFailingDoesNotStopTheOther(t *testing.T) {
	prod, stage := hotWorld(), hotWorld()
	r := newRig(t, testConfig("prod", "stage"), map[string]*world{"prod": prod, "stage": stage})
	r.apis["stage"].readErr = errors.New("503 Service Unavailable")

	res, err := r.e.Ingest(t.Context(), nil) // nil: every configured cluster
	if err != nil {
		// An error would fail the invocation, and with it the tick of every cluster.
		t.Fatalf("Ingest: got %v, want nil while prod succeeded; stage's failure goes in its result", err)
	}
	if len(res) != 2 {
		t.Fatalf("results: got %d want 2", len(res))
	}
	if res[0].Cluster != "prod" || res[0].SnapshotKey == "" || res[0].Error != "" {
		t.Errorf("prod: got %+v, want ingested", res[0])
	}
	if res[1].Cluster != "stage" || res[1].SnapshotKey != "" || !strings.Contains(res[1].Error, "503") {
		t.Errorf("stage: got %+v, want its error", res[1])
	}
	got := events[bus.StatsIngested](t, r.bus.Drain(), bus.TypeStatsIngested)
	if len(got) != 1 || got[0].Cluster != "prod" {
		t.Errorf("Stats Ingested: got %+v, want one for prod", got)
	}
	if _, err := snapshots.Latest(t.Context(), r.store, "stage"); !errors.Is(err, snapshots.ErrNone) {
		t.Errorf("stage latest: got %v, want none stored", err)
	}

	// Every cluster failing is the invocation's failure.
	r.apis["prod"].readErr = errors.New("connection refused")
	if _, err := r.e.Ingest(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "ingest stage") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Ingest with every cluster failing: got %v, want both failures", err)
	}
}

func TestIngestUnknownCluster(t *testing.T) {
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": hotWorld()})
	res, err := r.e.Ingest(t.Context(), []string{"nope"})
	if !errors.Is(err, ErrUnknownCluster) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Ingest: got %v, want ErrUnknownCluster naming nope", err)
	}
	if len(res) != 1 || res[0].Error == "" {
		t.Errorf("results: got %+v, want nope's error", res)
	}
	if n := len(r.bus.Events()); n != 0 {
		t.Errorf("events: got %d want 0", n)
	}
}

// TestUnwiredPortIsAnError: each function gets its port from a factory of the port's own type; a
// composition root that leaves that factory nil gets ErrNotWired naming it, not a panic, and
// nothing is stored or published.
func TestUnwiredPortIsAnError(t *testing.T) {
	tests := []struct {
		name   string
		unwire func(e *Engine)
		run    func(t *testing.T, e *Engine) error
		field  string
	}{
		{name: "ingest", unwire: func(e *Engine) { e.Cluster = nil }, field: "Engine.Cluster",
			run: func(t *testing.T, e *Engine) error { _, err := e.Ingest(t.Context(), []string{"prod"}); return err }},
		{name: "move", unwire: func(e *Engine) { e.Cluster = nil }, field: "Engine.Cluster",
			run: func(t *testing.T, e *Engine) error { _, err := e.Move(t.Context(), "prod", "plan#x"); return err }},
		{name: "replicas", unwire: func(e *Engine) { e.Cluster = nil }, field: "Engine.Cluster",
			run: func(t *testing.T, e *Engine) error { _, err := e.Replicas(t.Context(), "prod", ""); return err }},
		{name: "sandbox", unwire: func(e *Engine) { e.Tenants = nil }, field: "Engine.Tenants",
			run: func(t *testing.T, e *Engine) error { _, err := e.Sandbox(t.Context(), "prod"); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("prod")
			cfg.Replicas.Enabled = true
			cfg.Sandbox.Definitions = []byte(fmt.Sprintf(tenantDefs, "hard"))
			r := newRig(t, cfg, map[string]*world{"prod": hotWorld()})
			api := &tasksAPI{fakeAPI: r.apis["prod"]}
			r.e.Tenants = func(string) (TenantCluster, error) { return api, nil }
			tc.unwire(r.e)
			err := tc.run(t, r.e)
			if !errors.Is(err, ErrNotWired) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), `"prod"`) {
				t.Fatalf("got %v, want ErrNotWired naming %s and the cluster", err, tc.field)
			}
			if items, qerr := r.store.Query(t.Context(), pk("prod"), ""); qerr != nil || len(items) != 0 {
				t.Errorf("stored %d items (%v), want none", len(items), qerr)
			}
			if n := len(r.bus.Events()); n != 0 {
				t.Errorf("published %d events, want none", n)
			}
		})
	}
}

func TestStatsIngestedCarriesTheKeyNotTheSnapshot(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	key := r.ingest(t, "prod")
	recorded := r.bus.Drain()
	if len(recorded) != 1 || recorded[0].DetailType != bus.TypeStatsIngested || recorded[0].Source != "shardwise" {
		t.Fatalf("events: got %+v, want one Stats Ingested from shardwise", recorded)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(recorded[0].Detail, &fields); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	if want := []string{"at", "cluster", "copies", "nodes", "snapshot_key"}; !slices.Equal(names, want) {
		t.Errorf("detail fields: got %v want %v", names, want)
	}
	d := events[bus.StatsIngested](t, recorded, bus.TypeStatsIngested)[0]
	if d.SnapshotKey != key || d.Nodes != 3 || d.Copies != 6 || !d.At.Equal(t0) {
		t.Errorf("detail: got %+v, want key %s, 3 nodes, 6 copies at %v", d, key, t0)
	}
	if _, _, err := snapshots.Load(t.Context(), r.store, "prod", d.SnapshotKey); err != nil {
		t.Errorf("the event's key does not load: %v", err)
	}
}

func TestIngestReportsStaleNodeStats(t *testing.T) {
	w := hotWorld()
	w.node("b").StatsAt = t0.Add(-5 * time.Minute)
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	// world.stamp refreshes StatsAt on tick; the first read carries b's old stamp.
	r.ingest(t, "prod")
	d := events[bus.StatsIngested](t, r.bus.Drain(), bus.TypeStatsIngested)[0]
	if len(d.Stale) != 1 || !strings.Contains(d.Stale[0], "b stats 5m0s old (limit 1m0s)") {
		t.Errorf("stale: got %v, want node b 5m0s old", d.Stale)
	}
}

func TestDetectSameSnapshotTwice(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	planKey := r.planned(t, w)
	snapKey := strings.TrimPrefix(planKey, "plan#")
	again, err := r.e.Detect(t.Context(), "prod", snapKey)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Repeated || again.PlanKey != planKey || len(again.Plan.Moves) != 1 {
		t.Errorf("second Detect: got repeated %v key %s moves %d, want the stored plan", again.Repeated, again.PlanKey, len(again.Plan.Moves))
	}
	if n := len(r.bus.Drain()); n != 0 {
		t.Errorf("second Detect published %d events, want 0", n)
	}
	// The duplicate did not count its sample again: the next sample is the third.
	w.tick(30 * time.Second)
	next, err := r.e.Detect(t.Context(), "prod", r.ingest(t, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Plan.Hotspots) != 1 || next.Plan.Hotspots[0].Streak != 3 {
		t.Errorf("next sample's hotspots: got %+v, want a with streak 3", next.Plan.Hotspots)
	}
}

func TestDetectStreaksPersistAcrossSnapshots(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	type step struct {
		hotspots int
		streak   int
		hot      bool
		moves    []string
		events   []string
	}
	want := []step{
		{},                       // no rates yet: no evidence
		{hotspots: 1, streak: 1}, // first sustained sample: building
		{hotspots: 1, streak: 2, hot: true, moves: []string{wantMove}, events: []string{bus.TypeMovesPlanned}},
	}
	for i, ws := range want {
		if i > 0 {
			w.tick(30 * time.Second)
		}
		key := r.ingest(t, "prod")
		r.bus.Drain()
		res, err := r.e.Detect(t.Context(), "prod", key)
		if err != nil {
			t.Fatal(err)
		}
		if res.Repeated {
			t.Errorf("sample %d: repeated, want a fresh plan", i+1)
		}
		if len(res.Plan.Hotspots) != ws.hotspots {
			t.Fatalf("sample %d: hotspots %+v, want %d", i+1, res.Plan.Hotspots, ws.hotspots)
		}
		if ws.hotspots > 0 {
			h := res.Plan.Hotspots[0]
			if h.NodeName != "a" || h.Streak != ws.streak || h.Hot != ws.hot {
				t.Errorf("sample %d: hotspot %s streak %d hot %v, want a, %d, %v", i+1, h.NodeName, h.Streak, h.Hot, ws.streak, ws.hot)
			}
		}
		var moves []string
		for _, m := range res.Plan.Moves {
			moves = append(moves, moveLabel(m))
		}
		if !slices.Equal(moves, ws.moves) {
			t.Errorf("sample %d: moves %v want %v", i+1, moves, ws.moves)
		}
		var types []string
		recorded := r.bus.Drain()
		for _, e := range recorded {
			types = append(types, e.DetailType)
		}
		if !slices.Equal(types, ws.events) {
			t.Errorf("sample %d: events %v want %v", i+1, types, ws.events)
		}
		if len(ws.moves) > 0 {
			mp := events[bus.MovesPlanned](t, recorded, bus.TypeMovesPlanned)[0]
			if mp.PlanKey != res.PlanKey || mp.SnapshotKey != key || mp.Cluster != "prod" || len(mp.Moves) != 1 || mp.Moves[0].Reason == "" {
				t.Errorf("Moves Planned: got %+v, want plan %s of snapshot %s with the move's reason", mp, res.PlanKey, key)
			}
		}
	}
}

func TestDetectScaleUpWhenEveryNodeIsHot(t *testing.T) {
	w := newWorld("a", "b").
		index("x", 0, []float64{3, 3, 3, 3, 3, 3}, nil, []string{"a"}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}, []string{"b"}).
		queueing("a", 500).queueing("b", 600)
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
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
	if len(res.Plan.Moves) != 0 || res.Plan.ScaleUp == nil {
		t.Fatalf("plan: moves %+v scale-up %+v, want no move and a scale-up", res.Plan.Moves, res.Plan.ScaleUp)
	}
	recorded := r.bus.Drain()
	su := events[bus.ScaleUpNeeded](t, recorded, bus.TypeScaleUpNeeded)
	if len(su) != 1 {
		t.Fatalf("Scale Up Needed: got %d events want 1", len(su))
	}
	nodes := slices.Clone(su[0].Nodes)
	slices.Sort(nodes)
	// Every node is hot and the load is over the goal × the threads: the capacity bound proves it,
	// and is the one named when both hold.
	if !slices.Equal(nodes, []string{"a", "b"}) || su[0].Bound != "cluster-capacity" || su[0].Value <= su[0].Limit ||
		!strings.Contains(su[0].Reason, "18.00 WRITE threads") {
		t.Errorf("Scale Up Needed: got %+v, want nodes a and b with the cluster-capacity bound and its numbers", su[0])
	}
	if mp := events[bus.MovesPlanned](t, recorded, bus.TypeMovesPlanned); len(mp) != 0 {
		t.Errorf("Moves Planned published with no moves: %+v", mp)
	}
}

func TestDetectErrors(t *testing.T) {
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": hotWorld()})
	cases := []struct {
		name    string
		cluster string
		key     string
		is      error
	}{
		{"unknown cluster", "nope", "", ErrUnknownCluster},
		{"nothing ingested yet", "prod", "", snapshots.ErrNone},
		{"unknown snapshot key", "prod", snapshots.Key(t0.Add(time.Hour)), snapshots.ErrNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.e.Detect(t.Context(), tc.cluster, tc.key); !errors.Is(err, tc.is) {
				t.Errorf("Detect: got %v, want %v", err, tc.is)
			}
		})
	}
}

func TestDetectLatestWhenNoKeyIsGiven(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	r.ingest(t, "prod")
	w.tick(30 * time.Second)
	key := r.ingest(t, "prod")
	res, err := r.e.Detect(t.Context(), "prod", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.PlanKey != "plan#"+key {
		t.Errorf("plan key: got %s, want the latest snapshot's plan#%s", res.PlanKey, key)
	}
}

// The engine reads counters only from the snapshot stored last: a copy that moved between two
// samples is new on its node and has no rate, never a negative or huge one.
func TestIngestMovedCopyHasNoRateForOneSample(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	r.ingest(t, "prod")
	w.tick(30 * time.Second)
	r.ingest(t, "prod")
	w.relocate("h1", "a", "c")
	w.tick(30 * time.Second)
	res, err := r.e.Ingest(t.Context(), []string{"prod"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res[0].Snapshot.Copies {
		moved := c.Index == "h1"
		if moved && (c.LoadKnown || c.Node != "id-c") {
			t.Errorf("moved copy: node %s load known %v, want on c with no rate", c.Node, c.LoadKnown)
		}
		if !moved && !c.LoadKnown {
			t.Errorf("%s[%d]: load unknown, want known", c.Index, c.Shard)
		}
	}
	if c := res[0].Snapshot.NodeByID("id-c"); c.Write.LoadKnown {
		t.Error("node c: load known, want a lower bound while its new copy has no rate")
	}
}
