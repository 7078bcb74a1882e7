package duration

import (
	"testing"
	"time"
)

func TestInRange(t *testing.T) {
	lo, hi := Duration(5*time.Second), Duration(time.Hour)
	tests := []struct {
		name string
		d    Duration
		ok   bool
	}{
		{"low bound", lo, true},
		{"high bound", hi, true},
		{"inside", Duration(30 * time.Second), true},
		{"one nanosecond", Duration(1), false},
		{"negative", Duration(-time.Second), false},
		{"the longest Duration", Duration(1<<63 - 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := InRange(tt.d, lo, hi)
			if (err == nil) != tt.ok {
				t.Fatalf("InRange(%v) = %v, want ok=%v", tt.d, err, tt.ok)
			}
		})
	}
}
