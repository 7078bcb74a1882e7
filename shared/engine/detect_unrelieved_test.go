package engine

import (
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
)

// A hot node the planner finds no step for, where no bound proves the cluster short of room (14 of
// 16 threads busy, no copy near a node's goal), is "Hotspot Unrelieved" with the search's bounds,
// never "Scale Up Needed".
func TestDetectHotspotUnrelieved(t *testing.T) {
	w := newWorld("a", "b").
		index("x", 0, []float64{3, 3, 3, 5}, nil, []string{"a"}, []string{"a"}, []string{"a"}, []string{"b"}).
		queueing("a", 500)
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
	if len(res.Plan.Moves) != 0 || res.Plan.ScaleUp != nil || len(res.Plan.Unrelieved) != 1 {
		t.Fatalf("plan: moves %+v scale-up %+v unrelieved %+v, want a unrelieved and nothing else", res.Plan.Moves, res.Plan.ScaleUp, res.Plan.Unrelieved)
	}
	recorded := r.bus.Drain()
	if su := events[bus.ScaleUpNeeded](t, recorded, bus.TypeScaleUpNeeded); len(su) != 0 {
		t.Errorf("Scale Up Needed without a proof: %+v", su)
	}
	hu := events[bus.HotspotUnrelieved](t, recorded, bus.TypeHotspotUnrelieved)
	if len(hu) != 1 {
		t.Fatalf("Hotspot Unrelieved: got %d events want 1", len(hu))
	}
	u := hu[0]
	if u.Cluster != "prod" || u.PlanKey != res.PlanKey || len(u.Unrelieved) != 1 || u.Unrelieved[0].NodeName != "a" ||
		u.Unrelieved[0].Search.Evaluations == 0 || u.Unrelieved[0].Reason == "" {
		t.Errorf("Hotspot Unrelieved: got %+v, want node a of plan %s with its search's bounds and reason", u, res.PlanKey)
	}
}
