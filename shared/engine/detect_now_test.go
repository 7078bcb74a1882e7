package engine

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// metricRecorder is a MetricSink keeping what was added, as "Name{Dim=Value,…} value".
type metricRecorder struct {
	mu     sync.Mutex
	adds   []string
	values []float64
}

func (m *metricRecorder) Add(name string, _ telemetry.Unit, value float64, dims ...telemetry.Dimension) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ds []string
	for _, d := range dims {
		ds = append(ds, d.Name+"="+d.Value)
	}
	m.adds = append(m.adds, name+"{"+strings.Join(ds, ",")+"}")
	m.values = append(m.values, value)
}

// valuesOf are the values added under exactly this name and dimensions, in order.
func (m *metricRecorder) valuesOf(series string) []float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []float64
	for i, a := range m.adds {
		if a == series {
			out = append(out, m.values[i])
		}
	}
	return out
}

func (m *metricRecorder) named(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, a := range m.adds {
		if strings.HasPrefix(a, name+"{") {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

const testTrigger = "CloudWatch alarm shardwise-prod-write-queue-shardwise entered ALARM"

// An alarm's fresh sample is planned at once: a new snapshot, a plan noting the alarm, "Moves
// Planned" before "Stats Ingested", so the detect that event wakes finds the plan and repeats it.
func TestDetectNowPlansAFreshSample(t *testing.T) {
	w := hotWorld()
	r := newRig(t, testConfig("prod"), map[string]*world{"prod": w})
	metrics := &metricRecorder{}
	r.e.Metrics = metrics
	// Two samples: the second starts a's streak; the latest snapshot is planned already.
	var last DetectResult
	for i := range 2 {
		if i > 0 {
			w.tick(30 * time.Second)
		}
		var err error
		if last, err = r.e.Detect(t.Context(), "prod", r.ingest(t, "prod")); err != nil {
			t.Fatal(err)
		}
	}
	if len(last.Plan.Moves) != 0 {
		t.Fatalf("second sample: got moves %+v, want none yet (one hot sample)", last.Plan.Moves)
	}
	r.bus.Drain()
	// The first sample has no rates, hence no estimate; the second has one for the cluster: its
	// busiest node's, a's (the alarm's one hot node among idle ones), not one series per node.
	if got, want := metrics.named(telemetry.MetricWriteQueueLatency), []string{"WriteQueueLatency{Cluster=prod}"}; !slices.Equal(got, want) {
		t.Errorf("queue latency metrics: got %v, want one for the cluster of the sample with rates: %v", got, want)
	}
	if v := last.Plan.Hotspots[0]; v.NodeName != "a" || v.QueueLatencySeconds < 3 {
		t.Fatalf("second sample: hotspot %+v, want a queueing over 3 s", v)
	}
	if got := metrics.valuesOf("WriteQueueLatency{Cluster=prod}"); len(got) != 1 || got[0] != last.Plan.Hotspots[0].QueueLatencySeconds {
		t.Errorf("queue latency metric: got %v, want a's %v (the highest of the nodes)", got, last.Plan.Hotspots[0].QueueLatencySeconds)
	}

	// The alarm fires 30 s later.
	w.tick(30 * time.Second)
	ir, dr, err := r.e.DetectNow(t.Context(), "prod", testTrigger)
	if err != nil {
		t.Fatal(err)
	}
	if ir.SnapshotKey == "" || "plan#"+ir.SnapshotKey == last.PlanKey || dr.PlanKey != "plan#"+ir.SnapshotKey || dr.Repeated || ir.Duplicate {
		t.Fatalf("DetectNow: snapshot %q plan %q repeated %v duplicate %v, want a new snapshot planned (the last plan was %s)",
			ir.SnapshotKey, dr.PlanKey, dr.Repeated, ir.Duplicate, last.PlanKey)
	}
	if len(dr.Plan.Moves) != 1 || moveLabel(dr.Plan.Moves[0]) != wantMove || dr.Trigger != testTrigger {
		t.Errorf("DetectNow plan: moves %+v trigger %q, want %s and the alarm", dr.Plan.Moves, dr.Trigger, wantMove)
	}
	note := func(p allocation.Plan) string {
		for _, n := range p.Notes {
			if n.Kind == NoteTriggered {
				return n.Reason
			}
		}
		return ""
	}
	if got := note(dr.Plan); !strings.HasPrefix(got, testTrigger+": ") {
		t.Errorf("plan note: got %q, want the alarm's trigger", got)
	}
	stored, _, err := state.GetJSON[allocation.Plan](t.Context(), r.store, state.Key{PK: pk("prod"), SK: dr.PlanKey})
	if err != nil || note(stored) != note(dr.Plan) {
		t.Errorf("stored plan: note %q (err %v), want %q", note(stored), err, note(dr.Plan))
	}
	recorded := r.bus.Drain()
	var types []string
	for _, ev := range recorded {
		types = append(types, ev.DetailType)
	}
	if want := []string{bus.TypeMovesPlanned, bus.TypeStatsIngested}; !slices.Equal(types, want) {
		t.Fatalf("events: got %v, want %v (the plan stored and published before its snapshot is announced)", types, want)
	}
	planned := events[bus.MovesPlanned](t, recorded, bus.TypeMovesPlanned)[0]
	if note(allocation.Plan{Notes: planned.Notes}) != note(dr.Plan) || planned.SnapshotKey != ir.SnapshotKey {
		t.Errorf("Moves Planned: notes %+v snapshot %s, want the trigger note and %s", planned.Notes, planned.SnapshotKey, ir.SnapshotKey)
	}
	if ingested := events[bus.StatsIngested](t, recorded, bus.TypeStatsIngested)[0]; ingested.SnapshotKey != ir.SnapshotKey {
		t.Errorf("Stats Ingested: snapshot %s, want %s", ingested.SnapshotKey, ir.SnapshotKey)
	}

	// The detect that "Stats Ingested" wakes finds the plan and publishes nothing twice.
	again, err := r.e.Detect(t.Context(), "prod", ir.SnapshotKey)
	if err != nil || !again.Repeated || note(again.Plan) != note(dr.Plan) {
		t.Errorf("Detect on the announced snapshot: repeated %v note %q (err %v), want the alarm's plan repeated", again.Repeated, note(again.Plan), err)
	}
	// A second alarm of the cluster a moment later (its rejections alarm) takes no second sample:
	// rates over a second would be noise.
	w.tick(time.Second)
	ir2, dr2, err := r.e.DetectNow(t.Context(), "prod", "CloudWatch alarm shardwise-prod-write-rejected-shardwise entered ALARM")
	if err != nil || !ir2.Duplicate || ir2.SnapshotKey != ir.SnapshotKey || !dr2.Repeated || dr2.PlanKey != dr.PlanKey {
		t.Errorf("second alarm: duplicate %v snapshot %s repeated %v plan %s (err %v), want the first alarm's sample and plan",
			ir2.Duplicate, ir2.SnapshotKey, dr2.Repeated, dr2.PlanKey, err)
	}
	if n := len(r.bus.Drain()); n != 0 {
		t.Errorf("repeats published %d events, want none", n)
	}
}

func TestDetectNowRefuses(t *testing.T) {
	tests := []struct {
		name, cluster, trigger string
		want                   error
		wantMsg                string
	}{
		{name: "unknown cluster", cluster: "dev", trigger: testTrigger, want: ErrUnknownCluster},
		{name: "no trigger", cluster: "prod", wantMsg: "needs the trigger"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, testConfig("prod"), map[string]*world{"prod": hotWorld()})
			ir, _, err := r.e.DetectNow(t.Context(), tc.cluster, tc.trigger)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got %v, want %v %q", err, tc.want, tc.wantMsg)
			}
			if ir.SnapshotKey != "" || len(r.bus.Events()) != 0 {
				t.Errorf("got snapshot %q and %d events, want nothing done", ir.SnapshotKey, len(r.bus.Events()))
			}
			if items, err := r.store.Query(t.Context(), pk(tc.cluster), ""); err != nil || len(items) != 0 {
				t.Errorf("stored %d items (%v), want none", len(items), err)
			}
		})
	}
}
