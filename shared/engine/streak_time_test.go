package engine

import (
	"testing"
	"time"
)

// TestStreakNeedsTime: alerts asking for samples 1 s apart do not make a node hot; the same number
// of samples 30 s apart does. Pushes 6 s apart, over the 5 s minimum step, count as samples, but
// the streak's samples must still span the sustain window (one 30 s refresh_period, less a fifth):
// three of them span 12 s, six span 30 s. A streak is evidence over the cluster's time, not a
// count of triggers.
func TestStreakNeedsTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		every   time.Duration
		samples int
		hot     bool
	}{
		{name: "1 s apart", every: time.Second, samples: 3, hot: false},
		{name: "6 s apart, 12 s spanned", every: 6 * time.Second, samples: 3, hot: false},
		{name: "6 s apart, 30 s spanned", every: 6 * time.Second, samples: 6, hot: true},
		{name: "30 s apart", every: 30 * time.Second, samples: 3, hot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			var dr DetectResult
			for i := range tc.samples {
				if i > 0 {
					w.tick(tc.every)
				}
				var err error
				if _, dr, err = r.e.IngestAndDetect(t.Context(), "prod"); err != nil {
					t.Fatal(err)
				}
			}
			hot := false
			for _, h := range dr.Plan.Hotspots {
				hot = hot || h.Hot
			}
			if hot != tc.hot {
				t.Fatalf("hot %v, want %v: %+v", hot, tc.hot, dr.Plan.Hotspots)
			}
		})
	}
}
