package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
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
// what it serves; a shrinking backlog tells what it is asked for under it (DrainingDemand).
func TestHotspotDemand(t *testing.T) {
	cases := []struct {
		name         string
		prevLat      float64
		latency      float64
		rejected     int64 // over the fixture's 30 s interval, against 100 completed per second
		wantDemand   float64
		wantDraining float64
		// clusterSeconds, when set, is the time between the node's own stats timestamps, which
		// time the backlog's growth in place of the snapshots' 30 s.
		clusterSeconds float64
	}{
		{"backlog grew 9 s in 30 s: 8 served + 0.3 × 8 queued", 43.5, 52.5, 0, 10.4, 0, 0},
		{"backlog steady: no estimate", 20, 20, 0, 0, 0, 0},
		{"backlog shrinking 10 s in 30 s: asked for 8 served − 1/3 × 8", 30, 20, 0, 0, 16.0 / 3, 0},
		{"no earlier latency: no estimate", 0, 20, 0, 0, 0, 0},
		{"full queue rejecting 20 a second against 100 completed: 8 served × 1.2", 62.5, 62.5, 600, 9.6, 0, 0},
		{"rejecting while the backlog grows: both count", 43.5, 52.5, 600, 12, 0, 0},
		{"rejections without an earlier sample still count", 0, 62.5, 300, 8.8, 0, 0},
		// The queue stopped overflowing during the interval: the shrink over the whole of it
		// understates the drain since, so what the node is asked for is overstated, never under.
		{"a full queue that started to shrink: both estimates", 62.5, 57.5, 300, 8.8, 8 - 8.0/6, 0},
		{"the cluster's clock ran 600 s between the samples: the growth is timed by it", 43.5, 52.5, 0, 8 + 9.0/600*8, 0, 600},
		{"a shrink timed by the cluster's clock", 30, 20, 0, 0, 8 - 10.0/600*8, 600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b")
			n := f.node("a")
			n.Write.Load, n.Write.Active, n.Write.QueueLatencySeconds, n.Write.Queue = 6, 8, tc.latency, 5000
			n.Write.Rejected, n.Write.CompletedPerSecond = tc.rejected, 100
			s := f.snap()
			prev := Streak{Count: 2, Since: s.At.Add(-time.Minute), At: s.At.Add(-30 * time.Second), Queue: 4000, Latency: tc.prevLat}
			if tc.clusterSeconds > 0 {
				// The node's clock is an hour ahead of the collector's, and ran clusterSeconds
				// since the last sample while the collector's ran 30 s.
				a := s.NodeByRef("a")
				a.StatsAt, a.IntervalSeconds = s.At.Add(time.Hour), tc.clusterSeconds
				prev.Since = a.StatsAt.Add(-2 * time.Duration(tc.clusterSeconds*float64(time.Second)))
				prev.At = a.StatsAt.Add(-time.Duration(tc.clusterSeconds * float64(time.Second)))
			}
			mem := map[string]Streak{"id-a": prev}
			hs, next := DetectHotspots(s, mem, DefaultConfig())
			if len(hs) != 1 {
				t.Fatalf("hotspots: got %+v", hs)
			}
			if got := hs[0].Demand; got < tc.wantDemand-1e-9 || got > tc.wantDemand+1e-9 {
				t.Errorf("demand: got %v want %v", got, tc.wantDemand)
			}
			if got := hs[0].DrainingDemand; got < tc.wantDraining-1e-9 || got > tc.wantDraining+1e-9 {
				t.Errorf("draining demand: got %v want %v", got, tc.wantDraining)
			}
			if next["id-a"].Latency != tc.latency {
				t.Errorf("stored latency: got %v want %v", next["id-a"].Latency, tc.latency)
			}
			if got, want := next["id-a"].At, nodeTime(s.NodeByRef("a"), s); !got.Equal(want) {
				t.Errorf("stored time: got %v want %v (the node's own clock)", got, want)
			}
		})
	}
}

// The detection's edges: thresholds from the configuration and at their exact values, samples
// without rates, a snapshot seen twice, the draining ratio, and what is stored for the next sample.
func TestDetectHotspotEdges(t *testing.T) {
	type prev struct {
		count int
		ago   time.Duration // how long before the snapshot the last counted sample was
		queue int
	}
	cases := []struct {
		name      string
		cfg       func(*Config)
		node      func(n *cluster.Node) // node a: 8 threads, 6 busy (75 %), 5 s latency, 500 queued
		prev      *prev
		seen, hot bool
		draining  bool
		streak    int    // reported and stored
		stored    *bool  // whether a streak is stored, when it differs from seen
		fresh     bool   // the stored streak starts at this sample
		why       string // in the reason
	}{
		{name: "latency exactly at the threshold is queueing", node: func(n *cluster.Node) { n.Write.QueueLatencySeconds = 3 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2, why: "estimated WRITE queue latency 3.0s ≥ 3.0s"},
		{name: "latency just under the threshold is not", node: func(n *cluster.Node) { n.Write.QueueLatencySeconds = 2.999 },
			prev: &prev{1, 30 * time.Second, 500}},
		{name: "utilization exactly at the threshold is busy", node: func(n *cluster.Node) { n.Write.Load = 4 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2, why: "utilization 50% ≥ 50%"},
		{name: "utilization just under the threshold is not", node: func(n *cluster.Node) { n.Write.Load = 3.99 },
			prev: &prev{1, 30 * time.Second, 500}},
		{name: "the latency threshold comes from the configuration", cfg: func(c *Config) { c.QueueLatencyThreshold = duration.Duration(10 * time.Second) },
			prev: &prev{1, 30 * time.Second, 500}},
		{name: "the utilization threshold comes from the configuration", cfg: func(c *Config) { c.HotUtilization = 0.8 },
			prev: &prev{1, 30 * time.Second, 500}},
		{name: "the samples needed come from the configuration", cfg: func(c *Config) { c.SustainedSamples = 3 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, streak: 2, why: "2 of 3 samples (building)"},
		{name: "the last sample needed makes it hot", cfg: func(c *Config) { c.SustainedSamples = 3 },
			prev: &prev{2, 30 * time.Second, 500}, seen: true, hot: true, streak: 3, why: "3 of 3 samples (hot)"},
		{name: "one sample is enough when the configuration says so", cfg: func(c *Config) { c.SustainedSamples = 1 },
			seen: true, hot: true, streak: 1},
		{name: "a sample without rates is neither evidence nor relief: the streak is kept", node: func(n *cluster.Node) { n.Write.RateKnown = false },
			prev: &prev{1, 30 * time.Second, 500}, streak: 1, stored: ptr(true)},
		{name: "a sample without rates starts no streak", node: func(n *cluster.Node) { n.Write.RateKnown = false }},
		{name: "one sample lost between two still continues the streak", prev: &prev{1, 60 * time.Second, 500}, seen: true, hot: true, streak: 2},
		{name: "a streak last counted an hour ago starts again", prev: &prev{1, time.Hour, 500}, seen: true, streak: 1, fresh: true, why: "1 of 2 samples (building)"},
		{name: "a stale streak gives no drain either", node: func(n *cluster.Node) { n.Write.Queue = 100 },
			prev: &prev{3, time.Hour, 500}, seen: true, streak: 1, fresh: true},
		{name: "the same snapshot again counts once", prev: &prev{1, 0, 500}, seen: true, streak: 1, why: "1 of 2 samples (building)"},
		{name: "a node that stops meeting the criteria loses its streak", node: func(n *cluster.Node) { n.Write.QueueLatencySeconds = 1 },
			prev: &prev{5, 30 * time.Second, 500}},
		{name: "a queue a tenth shorter is not yet draining", node: func(n *cluster.Node) { n.Write.Queue = 450 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2},
		{name: "a queue more than a tenth shorter is draining: the count holds, not hot", node: func(n *cluster.Node) { n.Write.Queue = 449 },
			prev: &prev{3, 30 * time.Second, 500}, seen: true, draining: true, streak: 3, why: "(draining: relief under way)"},
		{name: "a shorter queue that still rejects writes is not draining", node: func(n *cluster.Node) { n.Write.Queue = 100; n.Write.Rejected = 5 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2},
		{name: "a stalled queue is named in the reason", node: func(n *cluster.Node) { n.Write.Stalled = true; n.Write.QueueLatencySeconds = 0 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2, why: "WRITE queue of 500 tasks stalled (no completions)"},
		{name: "rejections under the latency threshold are named in the reason", node: func(n *cluster.Node) { n.Write.Rejected = 7; n.Write.QueueLatencySeconds = 1 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2, why: "7 WRITE rejections"},
		{name: "every thread active is a busy pool however little index time shows", node: func(n *cluster.Node) { n.Write.Load = 2; n.Write.Active = 8 },
			prev: &prev{1, 30 * time.Second, 500}, seen: true, hot: true, streak: 2, why: "utilization 100% ≥ 50%"},
		{name: "a node that is not a data node is not looked at", node: func(n *cluster.Node) { n.Roles = []string{"cluster_manager"} },
			prev: &prev{1, 30 * time.Second, 500}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b")
			n := f.node("a")
			n.Write.Load, n.Write.QueueLatencySeconds, n.Write.Queue = 6, 5, 500
			if tc.node != nil {
				tc.node(n)
			}
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			s := f.snap()
			mem := map[string]Streak{}
			if tc.prev != nil {
				mem["id-a"] = Streak{Count: tc.prev.count, Since: s.At.Add(-time.Hour), At: s.At.Add(-tc.prev.ago), Queue: tc.prev.queue}
			}
			hs, next := DetectHotspots(s, mem, cfg)
			if (len(hs) == 1) != tc.seen || len(hs) > 1 {
				t.Fatalf("reported: got %+v, want a reported: %v", hs, tc.seen)
			}
			stored, ok := next["id-a"]
			if want := tc.seen || (tc.stored != nil && *tc.stored); ok != want {
				t.Errorf("stored streak: got %+v (%v), want stored: %v", stored, ok, want)
			}
			if ok && stored.Count != tc.streak {
				t.Errorf("stored count: got %d want %d", stored.Count, tc.streak)
			}
			if !tc.seen {
				return
			}
			h := hs[0]
			if h.Hot != tc.hot || h.Draining != tc.draining || h.Streak != tc.streak {
				t.Errorf("got hot %v draining %v streak %d, want %v %v %d (%s)", h.Hot, h.Draining, h.Streak, tc.hot, tc.draining, tc.streak, h.Reason)
			}
			if h.LatencyLimit != cfg.QueueLatencyThreshold.Std().Seconds() || h.UtilizationLimit != cfg.HotUtilization || h.StreakLimit != cfg.SustainedSamples {
				t.Errorf("limits: got %v s, %v, %d samples: want the configuration's", h.LatencyLimit, h.UtilizationLimit, h.StreakLimit)
			}
			if !strings.Contains(h.Reason, tc.why) || !strings.HasPrefix(h.Reason, "a: ") {
				t.Errorf("reason: got %q, want it to name a and say %q", h.Reason, tc.why)
			}
			if stored.At != s.At || stored.Queue != n.Write.Queue {
				t.Errorf("stored: got at %v queue %d, want this sample's (%v, %d)", stored.At, stored.Queue, s.At, n.Write.Queue)
			}
			if wantSince := s.At; (tc.prev == nil || tc.fresh) && stored.Since != wantSince {
				t.Errorf("a new streak: since %v, want %v", stored.Since, wantSince)
			}
			if tc.prev != nil && !tc.fresh && stored.Since != s.At.Add(-time.Hour) {
				t.Errorf("a streak going on: since %v, want it kept (%v)", stored.Since, s.At.Add(-time.Hour))
			}
		})
	}
}

// Hot nodes are reported by queue latency, the longest first, then by name.
func TestDetectHotspotsOrder(t *testing.T) {
	f := newFixture("d", "c", "b", "a")
	for name, lat := range map[string]float64{"a": 4, "b": 9, "c": 4, "d": 6} {
		f.node(name).Write.Load = 6
		f.queueing(name, lat)
	}
	hs, _ := DetectHotspots(f.snap(), nil, DefaultConfig())
	var got []string
	for _, h := range hs {
		got = append(got, h.NodeName)
	}
	if want := []string{"b", "d", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("order: got %v want %v", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

// A saturated node still building its streak is hot with a node hot in the same sample
// (Config.SaturatedWithHot); a node short of saturation, a draining one, or one in a sample with
// no hot node waits its samples.
func TestHotWith(t *testing.T) {
	cases := []struct {
		name     string
		bLoad    float64 // b's WRITE threads from index time, of 8
		bActive  int
		bPrevQ   int // b's queue at its previous sample; 0: b has no streak yet
		aStreak  int // a's earlier samples meeting the criteria; 0: a is building too
		off      bool
		wantHot  bool
		wantWith string
	}{
		{name: "saturated beside a hot node", bLoad: 8, aStreak: 1, wantHot: true, wantWith: "a"},
		{name: "every thread active beside a hot node", bLoad: 5, bActive: 8, aStreak: 1, wantHot: true, wantWith: "a"},
		{name: "queueing under saturation", bLoad: 7.5, bActive: 7, aStreak: 1},
		{name: "no node hot yet", bLoad: 8},
		{name: "draining", bLoad: 8, bPrevQ: 900, aStreak: 1},
		{name: "turned off", bLoad: 8, aStreak: 1, off: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c")
			a, b := f.node("a"), f.node("b")
			a.Write.Load, a.Write.QueueLatencySeconds, a.Write.Queue = 8, 9, 700
			b.Write.Load, b.Write.Active, b.Write.QueueLatencySeconds, b.Write.Queue = tc.bLoad, tc.bActive, 4, 300
			s := f.snap()
			mem := map[string]Streak{}
			if tc.aStreak > 0 {
				mem["id-a"] = Streak{Count: tc.aStreak, Since: s.At.Add(-30 * time.Second), At: s.At.Add(-30 * time.Second), Queue: 400}
			}
			if tc.bPrevQ > 0 {
				mem["id-b"] = Streak{Count: 1, Since: s.At.Add(-30 * time.Second), At: s.At.Add(-30 * time.Second), Queue: tc.bPrevQ}
			}
			cfg := DefaultConfig()
			cfg.SaturatedWithHot = !tc.off
			hs, next := DetectHotspots(s, mem, cfg)
			i := slices.IndexFunc(hs, func(h Hotspot) bool { return h.NodeName == "b" })
			if i < 0 {
				t.Fatalf("b not reported: %+v", hs)
			}
			h := hs[i]
			if h.Hot != tc.wantHot || h.With != tc.wantWith {
				t.Errorf("b: hot %v with %q, want %v with %q (%s)", h.Hot, h.With, tc.wantHot, tc.wantWith, h.Reason)
			}
			if tc.wantWith != "" && !strings.Contains(h.Reason, "saturated in the sample in which a is hot") {
				t.Errorf("reason %q does not say which hot node it is hot with", h.Reason)
			}
			if got := next["id-b"].Count; tc.bPrevQ == 0 && got != 1 {
				t.Errorf("b's streak: got %d samples, want 1: being hot with another node counts no sample", got)
			}
		})
	}
}

// A streak's first sample has no earlier latency, yet the queue was under the limit at the last
// sample: the backlog grew by the latency over the limit at least, within the interval, which
// bounds the demand from below.
func TestHotspotFirstSampleDemand(t *testing.T) {
	cases := []struct {
		name       string
		latency    float64
		clusterSec float64 // the node's own interval; 0: the snapshot's 30 s
		wantDemand float64
	}{
		{"17 s over the limit in 30 s: 8 served + 17/30 × 8", 20, 0, 8 + 17.0/30*8},
		{"timed by the cluster's clock", 20, 600, 8 + 17.0/600*8},
		{"at the limit: no growth known", 3, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b")
			n := f.node("a")
			n.Write.Load, n.Write.Active, n.Write.QueueLatencySeconds, n.Write.Queue = 6, 8, tc.latency, 5000
			s := f.snap()
			if tc.clusterSec > 0 {
				a := s.NodeByRef("a")
				a.StatsAt, a.IntervalSeconds = s.At.Add(time.Hour), tc.clusterSec
			}
			hs, _ := DetectHotspots(s, map[string]Streak{}, DefaultConfig())
			if len(hs) != 1 {
				t.Fatalf("hotspots: got %+v", hs)
			}
			if got := hs[0].Demand; got < tc.wantDemand-1e-9 || got > tc.wantDemand+1e-9 {
				t.Errorf("demand: got %v want %v", got, tc.wantDemand)
			}
		})
	}
}
