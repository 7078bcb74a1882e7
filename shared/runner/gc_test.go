package runner

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the GC percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestCollectLess: overlapping runs keep the raised GC percent until the last one ends, which puts
// back the one before; a GOGC set by the caller stands.
func TestCollectLess(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name, gogc  string
		during, end int
	}{
		{"GOGC unset", "", runGCPercent, 100},
		{"GOGC set", "50", 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			debug.SetGCPercent(100)
			first := collectLess()
			second := collectLess()
			if got := gcPercent(); got != tc.during {
				t.Fatalf("during two runs: GC percent %d, want %d", got, tc.during)
			}
			first()
			if got := gcPercent(); got != tc.during {
				t.Fatalf("after the first run ends, the second still running: GC percent %d, want %d", got, tc.during)
			}
			second()
			if got := gcPercent(); got != tc.end {
				t.Fatalf("after both: GC percent %d, want %d", got, tc.end)
			}
		})
	}
}
