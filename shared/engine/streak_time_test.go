package engine

import (
	"testing"
	"time"
)

// TestStreakNeedsTime: alerts asking for samples 1 s apart do not make a node hot; the same number
// of samples 30 s apart does. A streak is evidence over the cluster's time, not a count of triggers.
func TestStreakNeedsTime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
		hot   bool
	}{
		{name: "1 s apart", every: time.Second, hot: false},
		{name: "30 s apart", every: 30 * time.Second, hot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
			var dr DetectResult
			for i := range 3 {
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
