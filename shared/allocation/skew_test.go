package allocation

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// A calm cluster's most skewed node is listed once, judged at the loads of the cluster's even
// growth to spread_ahead_mean; nothing is listed where a node already meets the hotspot criteria,
// on the first sample, off, under the floor, or when the cluster is busy or even.
func TestDetectSkew(t *testing.T) {
	// loads puts one index copy of each load on the named nodes, in order.
	loads := func(l ...float64) *fixture {
		names := []string{"a", "b", "c", "d"}
		f := newFixture(names...)
		for i, w := range l {
			f.index("i"+names[i], 1<<30, []float64{w}, []string{names[i]})
		}
		return f
	}
	cases := []struct {
		name       string
		snap       func() *cluster.Snapshot
		hotspots   []Hotspot
		cfg        func(*Config)
		wantNode   string // "" when none
		wantFactor float64
		wantWhy    string
	}{
		{name: "a at 50 % against the cluster's 20 %: at a 50 % mean it would be at 125 %",
			snap: func() *cluster.Snapshot { return loads(4, 1.2, 0.8, 0.4).snap() }, wantNode: "a", wantFactor: 2.5,
			wantWhy: "a: WRITE use 50% against the cluster's 20%: at a 50% cluster mean it would be at 125%, saturated; spreading it ahead of the peak, every load judged at that growth (×2.50)"},
		{name: "the most skewed node only", snap: func() *cluster.Snapshot { return loads(2.4, 4, 0.8, 0.8).snap() }, wantNode: "b", wantFactor: 0.5 / (8.0 / 32)},
		{name: "at 1.8 times its share: at a 50 % mean it would be at 90 %, not saturated",
			snap: func() *cluster.Snapshot { return loads(3.4, 1.8, 1.8, 1.8).snap() }},
		{name: "under the floor: 25 % against 5 %", snap: func() *cluster.Snapshot { return loads(2, 0.1, 0.1, 0.1).snap() }},
		{name: "a busy cluster: a mean at 50 % or over is the hotspot criteria's",
			snap: func() *cluster.Snapshot { return loads(8, 6, 1, 1).snap() }},
		{name: "an even cluster", snap: func() *cluster.Snapshot { return loads(3, 3, 3, 3).snap() }},
		{name: "a node meeting the hotspot criteria: not calm",
			snap:     func() *cluster.Snapshot { return loads(4, 1.2, 0.8, 0.4).snap() },
			hotspots: []Hotspot{{Node: "id-b", NodeName: "b", Streak: 1, StreakLimit: 2}}},
		{name: "the first sample: no rates over an interval", snap: func() *cluster.Snapshot {
			s := loads(4, 1.2, 0.8, 0.4).snap()
			s.IntervalSeconds = 0
			return s
		}},
		{name: "a recovery elsewhere: a still goes", snap: func() *cluster.Snapshot {
			s := loads(4, 1.2, 0.8, 0.4).snap()
			s.Copies[3].State, s.Copies[3].RelocatingNode = cluster.StateRelocating, "id-c"
			return s
		}, wantNode: "a", wantFactor: 2.5},
		{name: "off", snap: func() *cluster.Snapshot { return loads(4, 1.2, 0.8, 0.4).snap() },
			cfg: func(c *Config) { c.SpreadAheadMean = 0 }},
		{name: "a node with no rate this sample is left out of the mean and the pick", snap: func() *cluster.Snapshot {
			s := loads(4, 1.2, 0.8, 0.4).snap()
			s.Nodes[0].Write.RateKnown = false
			return s
		}},
		{name: "an excluded node is neither counted nor picked", snap: func() *cluster.Snapshot { return loads(0.4, 6, 3, 0.8).snap() },
			cfg: func(c *Config) { c.ExcludedNodes = []string{"b"} }, wantNode: "c", wantFactor: 0.5 / (4.2 / 24)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			got := detectSkew(tc.snap(), tc.hotspots, cfg)
			var skewed []Hotspot
			for _, h := range got {
				if h.Skew != nil {
					skewed = append(skewed, h)
				}
			}
			if len(got) != len(tc.hotspots)+len(skewed) {
				t.Fatalf("hotspots: got %+v, want the %d given and at most one skewed", got, len(tc.hotspots))
			}
			if tc.wantNode == "" {
				if len(skewed) > 0 {
					t.Fatalf("skewed: got %s (%s), want none", skewed[0].NodeName, skewed[0].Reason)
				}
				return
			}
			if len(skewed) != 1 || skewed[0].NodeName != tc.wantNode {
				t.Fatalf("skewed: got %+v, want %s alone", skewed, tc.wantNode)
			}
			h := skewed[0]
			if h.Hot || h.Rising != nil {
				t.Errorf("a skewed node is neither hot nor rising: %+v", h)
			}
			if math.Abs(h.Skew.Factor-tc.wantFactor) > 1e-9 {
				t.Errorf("factor: got %v want %v", h.Skew.Factor, tc.wantFactor)
			}
			if tc.wantWhy != "" && h.Skew.Reason != tc.wantWhy {
				t.Errorf("reason: got %q want %q", h.Skew.Reason, tc.wantWhy)
			}
			if !strings.HasPrefix(h.Reason, "skew: ") {
				t.Errorf("hotspot reason %q does not say skew", h.Reason)
			}
		})
	}
}

// A node a recovery leaves or enters is passed over until it lands: the next skewed node goes.
func TestDetectSkewWhileRecovering(t *testing.T) {
	snap := func(ib float64) *cluster.Snapshot {
		f := newFixture("a", "b", "c", "d", "e", "f").
			index("ia", 1<<30, []float64{4}, []string{"a"}).
			index("ib", 1<<30, []float64{ib}, []string{"b"})
		for _, n := range []string{"c", "d", "e", "f"} {
			f.index("i"+n, 1<<30, []float64{0.1}, []string{n})
		}
		s := f.snap()
		s.Copies[0].State, s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-c"
		return s
	}
	cases := []struct {
		name string
		ib   float64
		want string
	}{
		{"a relocating: b, at 45 % against the cluster's 17 %, goes", 3.6, "b"},
		{"a relocating, and no other node skewed: none", 0.1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := detectSkew(snap(tc.ib), nil, DefaultConfig())
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("got %s (%s), want none", got[0].NodeName, got[0].Reason)
			case tc.want != "" && (len(got) != 1 || got[0].NodeName != tc.want):
				t.Errorf("got %+v, want %s alone", got, tc.want)
			}
		})
	}
}

// The planned view of a skewed node is the cluster at the loads of its even growth: the copies and
// the nodes multiplied alike, the skewed node marked for relief; the snapshot is not changed.
func TestPlannedViewSkew(t *testing.T) {
	s := newFixture("a", "b").index("x", 1<<30, []float64{3, 1}, []string{"a"}, []string{"b"}).snap()
	s.Nodes[0].Write.Utilization, s.Nodes[1].Write.Utilization = 0.375, 0.125
	hs := []Hotspot{{Node: "id-a", NodeName: "a", Skew: &Skew{Factor: 2}}}
	v := PlannedView(s, hs, DefaultConfig())
	if got := v.WriteLoad("id-a"); math.Abs(got-6) > 1e-9 {
		t.Errorf("a's load: got %v want 6", got)
	}
	if got := v.Utilization("id-b"); math.Abs(got-0.25) > 1e-9 {
		t.Errorf("b's utilization: got %v want 0.25", got)
	}
	if !v.hot["id-a"] || v.hot["id-b"] {
		t.Errorf("marked for relief: %v, want a alone", v.hot)
	}
	if s.Copies[0].WriteLoad != 3 || s.Nodes[0].Write.Load != 3 {
		t.Errorf("the snapshot changed: copy %v, node %v", s.Copies[0].WriteLoad, s.Nodes[0].Write.Load)
	}
}

// A spread is planned at the loads of the cluster's growth, but measured and timed at the loads of
// now: its projection, and the copy load its relocation is timed with, are the snapshot's.
func TestSkewProjectionAtLoadsOfNow(t *testing.T) {
	s := newFixture("a", "b", "c").
		index("x", 1<<30, []float64{3}, []string{"a"}).
		index("y", 1<<30, []float64{3}, []string{"a"}).
		index("z", 1<<30, []float64{1}, []string{"a"}).snap()
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	plan, next := PlanCycle(s, Memory{}, cfg)
	if len(plan.Moves) != 1 || len(plan.Hotspots) != 1 || plan.Hotspots[0].Skew == nil {
		t.Fatalf("want one spread of a skewed a: moves %v, hotspots %+v", moveNames(plan), plan.Hotspots)
	}
	if w := plan.Moves[0].WriteLoad; math.Abs(w-3*plan.Hotspots[0].Skew.Factor) > 1e-9 {
		t.Errorf("the planned move's load: got %v, want 3 at the growth ×%v", w, plan.Hotspots[0].Skew.Factor)
	}
	if len(next.Projections) != 1 {
		t.Fatalf("projections: got %+v, want one", next.Projections)
	}
	pr := next.Projections[0]
	if math.Abs(pr.GroupRelief-3) > 1e-9 || math.Abs(pr.SourceBefore-7) > 1e-9 || math.Abs(pr.SourceAfter-4) > 1e-9 {
		t.Errorf("projection: relief %v, source %v → %v, want 3, 7 → 4", pr.GroupRelief, pr.SourceBefore, pr.SourceAfter)
	}
	if math.Abs(pr.Moves[0].WriteLoad-3) > 1e-9 {
		t.Errorf("the load its relocation is timed with: got %v want 3", pr.Moves[0].WriteLoad)
	}
}

// A spread waits while OpenSearch's balancer has moves of its own to make: it would race them.
func TestSkewWaitsForBuiltin(t *testing.T) {
	skewed := func(settled bool) *cluster.Snapshot {
		f := newFixture("a", "b", "c").
			index("x", 1<<30, []float64{3}, []string{"a"}).
			index("y", 1<<30, []float64{3}, []string{"a"}).
			index("z", 1<<30, []float64{1}, []string{"a"})
		if settled {
			// Three cold copies on b and on c: every node holds three, the counts are level.
			for _, n := range []string{"b", "c"} {
				for i := range 3 {
					f.index(fmt.Sprintf("cold-%s%d", n, i), 1<<20, []float64{0}, []string{n})
				}
			}
		}
		return f.snap()
	}
	cases := []struct {
		name    string
		settled bool
		spread  bool
	}{
		{"a holds all 3 copies, b and c none: the balancer would move some first", false, false},
		{"counts level: a is spread", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, _ := PlanCycle(skewed(tc.settled), Memory{}, DefaultConfig())
			spread := len(plan.Moves) > 0 && len(plan.Hotspots) == 1 && plan.Hotspots[0].Skew != nil
			if spread != tc.spread {
				t.Errorf("spread: got %v want %v; moves %v, hotspots %+v", spread, tc.spread, moveNames(plan), plan.Hotspots)
			}
		})
	}
}
