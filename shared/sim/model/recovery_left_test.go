package model

import (
	"math"
	"testing"
)

// TestLeastSecondsLeft checks the seconds a recovery has left from its progress: files at the rate,
// then the replay of what was indexed over the whole file copy, and once copied the replay left.
// progress, run to the end from the same state, takes exactly as long when the load holds.
func TestLeastSecondsLeft(t *testing.T) {
	const rate, speed = 100.0, 0.25
	tests := []struct {
		name  string
		rec   Recovery
		load  float64
		speed float64
		want  float64
	}{
		{"idle copy, half its files copied", Recovery{Bytes: 10_000, done: 5_000}, 0, speed, 50},
		// 50 s of files left at 1 thread, after 50 s already indexed at 1 thread: 100 thread-seconds
		// to replay at 0.25.
		{"written copy, half its files copied", Recovery{Bytes: 10_000, done: 5_000, copySeconds: 50, replayWork: 50}, 1, speed, 50 + 400},
		{"files copied: the replay left", Recovery{Bytes: 10_000, done: 10_000, copied: true, replayLeft: 120}, 1, speed, 120},
		{"no replay modelled", Recovery{Bytes: 10_000, done: 2_000, replayWork: 30}, 1, 0, 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rec
			r.copy = &ShardCopy{WriteDemand: tc.load}
			got := r.LeastSecondsLeft(rate, tc.speed, tc.load)
			if math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("LeastSecondsLeft = %v, want %v", got, tc.want)
			}
			// One-second steps of progress end within a second of it.
			steps := 0
			for !r.progress(rate, tc.speed, 1) {
				steps++
				if steps > 10_000 {
					t.Fatal("progress never ended")
				}
			}
			if math.Abs(float64(steps+1)-got) > 1 {
				t.Errorf("progress ended after %d s, LeastSecondsLeft said %v", steps+1, got)
			}
		})
	}
}
