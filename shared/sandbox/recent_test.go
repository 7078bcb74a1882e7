package sandbox

import (
	"math"
	"testing"
	"time"
)

// A task read in two passes is measured over the time between them: a flood request that waited
// 6 s in the search queue and then ran a whole core for the last second reads 1 core, not the
// 1/7 of a core its life average says. Tasks new in this pass, and figures that did not grow,
// keep their life average.
func TestRecent(t *testing.T) {
	node := NodeLoad{Node: "n", Processors: 2}
	prev := []Task{
		{ID: "n:1", RunningTime: 6 * time.Second, CPUTimeNanos: 0},
		{ID: "n:2", RunningTime: 6 * time.Second, CPUTimeNanos: int64(3 * time.Second)},
		{ID: "n:3", RunningTime: 5 * time.Second, CPUTimeNanos: int64(time.Second)},
	}
	cur := []Task{
		{ID: "n:1", RunningTime: 7 * time.Second, CPUTimeNanos: int64(time.Second)},
		{ID: "n:2", RunningTime: 6 * time.Second, CPUTimeNanos: int64(3 * time.Second)}, // not grown
		{ID: "n:3", RunningTime: 6 * time.Second, CPUTimeNanos: int64(time.Second) / 2}, // cpu went down
		{ID: "n:4", RunningTime: 2 * time.Second, CPUTimeNanos: int64(time.Second)},     // new
	}
	tests := []struct {
		id   string
		want float64 // share of the node's 2 processors
	}{
		{"n:1", 0.5},      // 1 s of CPU in the last 1 s: one core of two
		{"n:2", 0.25},     // its life: 3 s over 6 s
		{"n:3", 1.0 / 24}, // its life: 0.5 s over 6 s
		{"n:4", 0.25},     // new: its life, 1 s over 2 s
	}
	got := Recent(prev, cur)
	for i, tc := range tests {
		if got[i].ID != tc.id {
			t.Fatalf("task %d is %s, want %s", i, got[i].ID, tc.id)
		}
		if u := TaskShare(got[i], node).CPU; math.Abs(u-tc.want) > 1e-9 {
			t.Errorf("%s: cpu share got %.4f, want %.4f", tc.id, u, tc.want)
		}
	}
	if u := TaskShare(cur[0], node).CPU; math.Abs(u-1.0/14) > 1e-9 {
		t.Errorf("Recent changed its input: n:1 reads %.4f, want its life average %.4f", u, 1.0/14)
	}
	if got := Recent(nil, cur); &got[0] != &cur[0] {
		t.Errorf("with no pass before, Recent should return the tasks as read")
	}
}
