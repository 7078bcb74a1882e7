package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
)

// trendSamples returns n samples step apart ending at end, sample i (oldest first) at u(i).
func trendSamples(end time.Time, n int, step time.Duration, u func(i int) float64) []TrendSample {
	out := make([]TrendSample, n)
	for i := range out {
		out[i] = TrendSample{At: end.Add(-time.Duration(n-1-i) * step).Unix(), Utilization: u(i)}
	}
	return out
}

// jitter is a fixed draw of noise within ±0.05, so the noisy cases do not depend on a generator.
var jitter = []float64{0.031, -0.044, 0.012, 0.048, -0.027, -0.009, 0.039, -0.05, 0.021, -0.016, 0.044, -0.035, 0.003, 0.027, -0.041}

func TestEstimateTrend(t *testing.T) {
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := 30 * time.Second
	cases := []struct {
		name       string
		samples    []TrendSample
		wantSteady bool
		wantReason string // a part of the reason
		wantSlope  float64
	}{
		{name: "flat", samples: trendSamples(end, 11, s, func(int) float64 { return 0.85 }), wantReason: "flat"},
		{name: "flat 85 % with jitter", samples: trendSamples(end, 11, s, func(i int) float64 { return 0.85 + jitter[i] })},
		{name: "flat 85 % with jitter, 15 samples 20 s apart", samples: trendSamples(end, 15, 20*time.Second, func(i int) float64 { return 0.85 + jitter[i] })},
		{name: "a slow creep of 1 %/min under jitter", samples: trendSamples(end, 11, s, func(i int) float64 { return 0.8 + 0.005*float64(i) + jitter[i] }),
			wantReason: "noise"},
		{name: "steady ramp, 3 %/min", samples: trendSamples(end, 11, s, func(i int) float64 { return 0.6 + 0.015*float64(i) }),
			wantSteady: true, wantReason: "rising 3.00 %/min", wantSlope: 0.03},
		{name: "ramp with jitter of ±0.5 %", samples: trendSamples(end, 11, s, func(i int) float64 { return 0.6 + 0.015*float64(i) + jitter[i]/10 }),
			wantSteady: true, wantReason: "rising"},
		{name: "ramp, then a plateau below saturation", samples: trendSamples(end, 11, s, func(i int) float64 { return 0.6 + 0.03*float64(min(i, 6)) }),
			wantReason: "levelling off"},
		{name: "a step, not a climb", samples: trendSamples(end, 11, s, func(i int) float64 {
			if i < 8 {
				return 0.6
			}
			return 0.85
		}), wantReason: "not a climb"},
		{name: "too few samples", samples: trendSamples(end, 5, s, func(i int) float64 { return 0.6 + 0.015*float64(i) }), wantReason: "fewer than"},
		{name: "too short a span", samples: trendSamples(end, 8, 10*time.Second, func(i int) float64 { return 0.6 + 0.01*float64(i) }),
			wantReason: "under half the trend window"},
		{name: "falling", samples: trendSamples(end, 11, s, func(i int) float64 { return 0.9 - 0.015*float64(i) }), wantReason: "flat or falling"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := EstimateTrend(tc.samples, DefaultConfig())
			if tr.Steady != tc.wantSteady {
				t.Fatalf("steady: got %v want %v (%s)", tr.Steady, tc.wantSteady, tr.Reason)
			}
			if !strings.Contains(tr.Reason, tc.wantReason) {
				t.Errorf("reason %q lacks %q", tr.Reason, tc.wantReason)
			}
			if tc.wantSlope != 0 && (tr.SlopePerMinute < tc.wantSlope-1e-9 || tr.SlopePerMinute > tc.wantSlope+1e-9) {
				t.Errorf("slope: got %v %%/min want %v", tr.SlopePerMinute*100, tc.wantSlope*100)
			}
		})
	}
}

// A steady climb's time to saturation is measured from the line at the last sample.
func TestTrendSaturatesIn(t *testing.T) {
	tr := Trend{Utilization: 0.85, SlopePerMinute: 0.03}
	if got := tr.SaturatesIn(); got != 5*time.Minute {
		t.Errorf("saturates in: got %v want 5m", got)
	}
	if got := (Trend{Utilization: 1.1, SlopePerMinute: 0.03}).SaturatesIn(); got != 0 {
		t.Errorf("saturated already: got %v want 0", got)
	}
}

// trendFixture is one node, a, at util with 8 WRITE threads, holding copies of "clicks" of 1 GiB,
// and three nodes b, c, d at 25 %.
func trendFixture(util float64) *fixture { return trendFixtureWith(util, 0.25) }

// trendFixtureWith is trendFixture with b, c and d at others.
func trendFixtureWith(util, others float64) *fixture {
	each := util * 8 / 4
	o := others * 8
	f := newFixture("a", "b", "c", "d").
		index("clicks", 1<<30, []float64{each * 1.25, each * 0.92, each * 0.92, each * 0.91}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
		index("other", 1<<30, []float64{o, o, o}, []string{"b"}, []string{"c"}, []string{"d"})
	return f
}

func TestRecordTrends(t *testing.T) {
	snap := trendFixture(0.85).snap()
	at := snap.At
	fp := copiesFingerprints(snap)["id-a"]
	ramp := func(n int, step time.Duration, end time.Time) []TrendSample {
		return trendSamples(end, n, step, func(i int) float64 { return 0.85 - 0.015*float64(n-i) })
	}
	cases := []struct {
		name   string
		cfg    func(*Config)
		snap   func(*cluster.Snapshot)
		prev   TrendHistory
		want   int // samples kept for a
		wantAt int64
	}{
		{name: "the sample is added", prev: TrendHistory{Copies: fp, Samples: ramp(5, 30*time.Second, at.Add(-30*time.Second))}, want: 6},
		{name: "samples older than the window go", prev: TrendHistory{Copies: fp, Samples: ramp(12, 30*time.Second, at.Add(-30*time.Second))}, want: 11},
		{name: "a gap of more than 2.5 intervals starts again", prev: TrendHistory{Copies: fp, Samples: ramp(8, 30*time.Second, at.Add(-90*time.Second))}, want: 1},
		{name: "the copies changed: starts again", prev: TrendHistory{Copies: fp + 1, Samples: ramp(8, 30*time.Second, at.Add(-30*time.Second))}, want: 1},
		{name: "the same snapshot twice counts once", prev: TrendHistory{Copies: fp, Samples: ramp(5, 30*time.Second, at)}, want: 5},
		{name: "at most 40 samples, whatever the window", cfg: func(c *Config) { c.TrendWindow = duration.Duration(time.Hour) },
			prev: TrendHistory{Copies: fp, Samples: ramp(60, 30*time.Second, at.Add(-30*time.Second))}, want: trendMaxSamples},
		{name: "under hot_utilization: no history", snap: func(s *cluster.Snapshot) { s.Nodes[0].Write.Utilization = 0.4 },
			prev: TrendHistory{Copies: fp, Samples: ramp(5, 30*time.Second, at.Add(-30*time.Second))}, want: 0},
		{name: "rate unknown: no history", snap: func(s *cluster.Snapshot) { s.Nodes[0].Write.RateKnown = false },
			prev: TrendHistory{Copies: fp, Samples: ramp(5, 30*time.Second, at.Add(-30*time.Second))}, want: 0},
		{name: "trend_window 0: nothing kept", cfg: func(c *Config) { c.TrendWindow = 0 },
			prev: TrendHistory{Copies: fp, Samples: ramp(5, 30*time.Second, at.Add(-30*time.Second))}, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			s := trendFixture(0.85).snap()
			if tc.snap != nil {
				tc.snap(s)
			}
			next := RecordTrends(s, map[string]TrendHistory{"id-a": tc.prev}, cfg)
			h := next["id-a"]
			if len(h.Samples) != tc.want {
				t.Fatalf("samples kept: got %d want %d: %+v", len(h.Samples), tc.want, h.Samples)
			}
			if tc.want > 0 && h.Samples[len(h.Samples)-1].At != at.Unix() {
				t.Errorf("last sample at %d, want this snapshot's %d", h.Samples[len(h.Samples)-1].At, at.Unix())
			}
			if _, ok := next["id-b"]; ok {
				t.Errorf("node b at 25 %% keeps a history: %+v", next["id-b"])
			}
		})
	}
}

// A node climbing toward saturation sooner than relief would land is relieved before its queue
// forms, and the move says why; a node far from saturation, a flat one and one with jitter are not,
// nor any node with trend_window 0.
func TestRisingNodeRelievedEarly(t *testing.T) {
	cases := []struct {
		name string
		util float64             // node a now
		u    func(i int) float64 // its 10 earlier samples, 30 s apart, oldest first
		cfg  func(*Config)
		// others, when set, puts b, c and d at 55 % and climbing 2 %/min too.
		others bool
		wantN  int // moves off a
	}{
		// 3 %/min at 85 %: saturates in 5 min; relocating a 1 GiB copy written at 1.6 threads with a
		// count-neutral return sharing the rate takes about 5 min, plus 1 min of detection.
		{name: "climbing 3 %/min at 85 %", util: 0.85, u: func(i int) float64 { return 0.85 - 0.015*float64(10-i) }, wantN: 1},
		{name: "the same with trend_window 0", util: 0.85, u: func(i int) float64 { return 0.85 - 0.015*float64(10-i) },
			cfg: func(c *Config) { c.TrendWindow = 0 }},
		{name: "climbing 3 %/min at 60 %: 13 min from saturation", util: 0.6, u: func(i int) float64 { return 0.6 - 0.015*float64(10-i) }},
		{name: "the whole cluster climbing: no node to take the load", util: 0.85, u: func(i int) float64 { return 0.85 - 0.015*float64(10-i) },
			others: true},
		{name: "flat at 85 %", util: 0.85, u: func(int) float64 { return 0.85 }},
		{name: "flat at 85 % with jitter", util: 0.85, u: func(i int) float64 { return 0.85 + jitter[i] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			others := 0.25
			if tc.others {
				others = 0.55
			}
			snap := trendFixtureWith(tc.util, others).snap()
			fps := copiesFingerprints(snap)
			trends := map[string]TrendHistory{"id-a": {Copies: fps["id-a"], Samples: trendSamples(snap.At.Add(-30*time.Second), 10, 30*time.Second, tc.u)}}
			if tc.others {
				for _, id := range []string{"id-b", "id-c", "id-d"} {
					trends[id] = TrendHistory{Copies: fps[id], Samples: trendSamples(snap.At.Add(-30*time.Second), 10, 30*time.Second,
						func(i int) float64 { return 0.55 - 0.01*float64(10-i) })}
				}
			}
			plan, next := PlanCycle(snap, Memory{Trends: trends}, cfg)
			var off []Move
			for _, m := range plan.Moves {
				if m.From == "id-a" && m.Phase == PhaseWriteHotspot {
					off = append(off, m)
				}
			}
			if len(off) != tc.wantN {
				t.Fatalf("moves off a: got %v, want %d; hotspots %+v; notes %+v", moveNames(plan), tc.wantN, plan.Hotspots, plan.Notes)
			}
			if plan.ScaleUp != nil || len(plan.Unrelieved) > 0 {
				t.Errorf("a prediction signals nothing: scale-up %+v, unrelieved %+v", plan.ScaleUp, plan.Unrelieved)
			}
			if tc.others {
				if !slices.ContainsFunc(plan.Notes, func(n Note) bool { return n.Kind == NoteRising && n.Node == "a" }) {
					t.Errorf("no %s note for a: %+v", NoteRising, plan.Notes)
				}
			}
			if tc.wantN == 0 {
				return
			}
			if !strings.Contains(off[0].Reason, "rising") || !strings.Contains(off[0].Reason, "saturates in") {
				t.Errorf("reason does not say the node is rising: %s", off[0].Reason)
			}
			var h *Hotspot
			for i := range plan.Hotspots {
				if plan.Hotspots[i].Node == "id-a" {
					h = &plan.Hotspots[i]
				}
			}
			if h == nil || h.Hot || h.Rising == nil || h.Rising.Growth <= 0 {
				t.Fatalf("hotspot for a: got %+v, want rising, not hot, with growth", h)
			}
			// The move function re-checks on the same view: the climb's growth is in it.
			if v := PlannedView(snap, plan.Hotspots, cfg); v.WriteLoad("id-a") < snap.Nodes[0].Write.Load+h.Rising.Growth-1e-9 {
				t.Errorf("planned view: a carries %.2f, want %.2f + %.2f growth", v.WriteLoad("id-a"), snap.Nodes[0].Write.Load, h.Rising.Growth)
			}
			if len(next.Trends["id-a"].Samples) != 11 {
				t.Errorf("memory keeps %d samples for a, want 11", len(next.Trends["id-a"].Samples))
			}
		})
	}
}
