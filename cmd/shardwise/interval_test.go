package main

import (
	"strings"
	"testing"
)

// TestPlanRefusesIntervalItWouldMerge: plan refuses an --interval under the engine's minimum between
// two samples (it would merge them), a negative one and one over an hour, naming the flag, before
// connecting.
func TestPlanRefusesIntervalItWouldMerge(t *testing.T) {
	for _, tc := range []struct {
		name, interval string
	}{
		{"under 5 s", "2s"},
		{"negative", "-5s"},
		{"zero", "0s"},
		// The interval is the run's refresh_period, at most an hour.
		{"over an hour", "61m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := execute(t, "plan", "--url", "http://127.0.0.1:1", "--interval", tc.interval)
			if err == nil || !strings.Contains(err.Error(), "--interval") {
				t.Fatalf("got %v, want an error naming --interval", err)
			}
		})
	}
}
