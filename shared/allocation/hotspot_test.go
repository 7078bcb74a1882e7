package allocation

import (
	"testing"
	"time"
)

func TestDetectHotspots(t *testing.T) {
	cases := []struct {
		name     string
		load     float64 // WRITE threads from index time
		active   int
		latency  float64
		queue    int
		prevQ    int
		rejected int64
		stalled  bool
		streak   int // earlier samples that met the criteria
		wantHot  bool
		wantSeen bool // reported at all
	}{
		{name: "queueing and busy, sustained", load: 7.5, latency: 5, queue: 500, prevQ: 400, streak: 1, wantHot: true, wantSeen: true},
		{name: "queueing and busy, first sample", load: 7.5, latency: 5, queue: 500, wantSeen: true},
		{name: "busy but no queue", load: 7.9, latency: 0.2, queue: 10, streak: 1},
		{name: "queueing but idle threads", load: 2, latency: 5, queue: 500, streak: 1},
		{name: "index time undercounts: all threads active with a queue", load: 3.5, active: 8, latency: 5, queue: 500, prevQ: 450, streak: 1, wantHot: true, wantSeen: true},
		{name: "rejections count as queueing", load: 7, latency: 1, queue: 100, prevQ: 90, rejected: 20, streak: 1, wantHot: true, wantSeen: true},
		{name: "stalled queue counts as queueing", load: 7, latency: 30, queue: 100, prevQ: 100, stalled: true, streak: 1, wantHot: true, wantSeen: true},
		{name: "draining queue is relief, not a hotspot", load: 7.5, latency: 5, queue: 300, prevQ: 500, streak: 3, wantSeen: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b")
			n := f.node("a")
			n.Write.Load = tc.load
			n.Write.Active = tc.active
			n.Write.QueueLatencySeconds = tc.latency
			n.Write.Queue = tc.queue
			n.Write.Rejected = tc.rejected
			n.Write.Stalled = tc.stalled
			s := f.snap()
			mem := map[string]Streak{}
			if tc.streak > 0 {
				mem["id-a"] = Streak{Count: tc.streak, Since: s.At.Add(-time.Minute), At: s.At.Add(-30 * time.Second), Queue: tc.prevQ}
			}
			hs, next := DetectHotspots(s, mem, DefaultConfig())
			if (len(hs) > 0) != tc.wantSeen {
				t.Fatalf("reported: got %+v, want reported=%v", hs, tc.wantSeen)
			}
			if len(hs) > 0 && hs[0].Hot != tc.wantHot {
				t.Errorf("hot: got %v want %v (%s)", hs[0].Hot, tc.wantHot, hs[0].Reason)
			}
			if !tc.wantSeen {
				if _, ok := next["id-a"]; ok {
					t.Errorf("streak kept for a node that does not meet the criteria: %+v", next["id-a"])
				}
			}
		})
	}
}

// A growing backlog, or a full queue's rejections, tell what a saturated pool is asked for beyond
// what it serves.
func TestHotspotDemand(t *testing.T) {
	cases := []struct {
		name       string
		prevLat    float64
		latency    float64
		rejected   int64 // over the fixture's 30 s interval, against 100 completed per second
		wantDemand float64
	}{
		{"backlog grew 9 s in 30 s: 8 served + 0.3 × 8 queued", 43.5, 52.5, 0, 10.4},
		{"backlog steady: no estimate", 20, 20, 0, 0},
		{"backlog shrinking: no estimate", 30, 20, 0, 0},
		{"no earlier latency: no estimate", 0, 20, 0, 0},
		{"full queue rejecting 20 a second against 100 completed: 8 served × 1.2", 62.5, 62.5, 600, 9.6},
		{"rejecting while the backlog grows: both count", 43.5, 52.5, 600, 12},
		{"rejections without an earlier sample still count", 0, 62.5, 300, 8.8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b")
			n := f.node("a")
			n.Write.Load, n.Write.Active, n.Write.QueueLatencySeconds, n.Write.Queue = 6, 8, tc.latency, 5000
			n.Write.Rejected, n.Write.CompletedPerSecond = tc.rejected, 100
			s := f.snap()
			mem := map[string]Streak{"id-a": {Count: 2, Since: s.At.Add(-time.Minute), At: s.At.Add(-30 * time.Second), Queue: 4000, Latency: tc.prevLat}}
			hs, next := DetectHotspots(s, mem, DefaultConfig())
			if len(hs) != 1 {
				t.Fatalf("hotspots: got %+v", hs)
			}
			if got := hs[0].Demand; got < tc.wantDemand-1e-9 || got > tc.wantDemand+1e-9 {
				t.Errorf("demand: got %v want %v", got, tc.wantDemand)
			}
			if next["id-a"].Latency != tc.latency {
				t.Errorf("stored latency: got %v want %v", next["id-a"].Latency, tc.latency)
			}
		})
	}
}
