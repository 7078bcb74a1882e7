package allocation

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

func TestLearnedReplay(t *testing.T) {
	// timed is a relocation of a copy written at w threads whose files took f seconds and that
	// replayed at speed (0: no replay).
	timed := func(w, f, speed float64) RelocationSample {
		s := RelocationSample{FileSeconds: f, WriteLoad: w, Seconds: f}
		if speed > 0 {
			s.Seconds += w * f / speed
		}
		return s
	}
	cases := []struct {
		name      string
		samples   []RelocationSample
		wantOK    bool
		wantSpeed float64
		wantN     int
	}{
		{"none: the configured speed stands", nil, false, 0, 0},
		{"one is not enough", []RelocationSample{timed(2, 200, 0.4)}, false, 0, 1},
		{"lightly written copies tell nothing of the replay", []RelocationSample{timed(0.05, 200, 0.4), timed(0.1, 100, 0.4), timed(0.01, 900, 0.4)}, false, 0, 0},
		{"replaying at 0.4", []RelocationSample{timed(2, 200, 0.4), timed(4, 100, 0.4), timed(0.05, 200, 0)}, true, 0.4, 2},
		{"replaying at 0.12", []RelocationSample{timed(1, 300, 0.12), timed(3, 60, 0.12)}, true, 0.12, 2},
		{"landed with their files: no replay", []RelocationSample{timed(2, 200, 0), timed(4, 100, 0), timed(1, 60, 0)}, true, 0, 3},
		{"a sample's timing error is not a replay", []RelocationSample{{FileSeconds: 200, WriteLoad: 4, Seconds: 230}, {FileSeconds: 100, WriteLoad: 3, Seconds: 70}}, true, 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			speed, n, ok := learnedReplay(tc.samples)
			if ok != tc.wantOK || n != tc.wantN || math.Abs(speed-tc.wantSpeed) > 1e-9 {
				t.Errorf("got speed %v from %d (ok %v), want %v from %d (ok %v)", speed, n, ok, tc.wantSpeed, tc.wantN, tc.wantOK)
			}
		})
	}
}

// The planner times the relocations it planned, from the first sample that shows a copy relocating
// to the first that shows it started on its target, and keeps the latest.
func TestRelocationsTimed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	cfg.TranslogReplaySpeed = 0 // x[1], the heuristic's first, goes (see TestReliefMeasured)
	s1 := churnFixture(false, 2.5, 8, true, 0)
	plan, mem := PlanCycle(s1, Memory{Streaks: streaks(s1, "a")}, cfg)
	if len(plan.Moves) != 1 || len(mem.Projections) != 1 {
		t.Fatalf("first plan: %+v", plan.Moves)
	}
	m := mem.Projections[0].Moves[0]
	if m.FileSeconds <= 0 || m.WriteLoad != 2.5 {
		t.Fatalf("the projection keeps no estimate: %+v", m)
	}
	relocating := func(at time.Duration) *cluster.Snapshot {
		s := churnFixture(false, 2.5, 8, true, at)
		for i := range s.Copies {
			if c := &s.Copies[i]; c.Index == "x" && c.Shard == 1 {
				c.State, c.RelocatingNode = cluster.StateRelocating, "id-b"
			}
		}
		return s
	}
	_, mem = PlanCycle(churnFixture(false, 2.5, 8, true, 30*time.Second), mem, cfg) // issued after this sample
	_, mem = PlanCycle(relocating(60*time.Second), mem, cfg)
	_, mem = PlanCycle(relocating(90*time.Second), mem, cfg)
	if len(mem.Relocations) != 0 {
		t.Fatalf("timed before it landed: %+v", mem.Relocations)
	}
	_, mem = PlanCycle(churnFixture(true, 2.5, 6, false, 150*time.Second), mem, cfg)
	if len(mem.Relocations) != 1 {
		t.Fatalf("relocations: %+v", mem.Relocations)
	}
	if r := mem.Relocations[0]; r.Index != "x" || r.Shard != 1 || r.Seconds != 90 || r.FileSeconds != m.FileSeconds || r.WriteLoad != 2.5 {
		t.Errorf("sample: %+v, want x[1] timed 90s (relocating at 60s, started at 150s)", r)
	}
	_, mem = PlanCycle(churnFixture(true, 2.5, 6, false, 180*time.Second), mem, cfg)
	if len(mem.Relocations) != 1 {
		t.Errorf("timed twice: %+v", mem.Relocations)
	}
	// The latest relocationSamplesKept are kept.
	many := Memory{}
	for i := range relocationSamplesKept + 5 {
		many.Relocations = append(many.Relocations, RelocationSample{Index: "old", Shard: i})
	}
	_, next := PlanCycle(churnFixture(false, 2.5, 2, false, 0), many, cfg)
	if len(next.Relocations) != relocationSamplesKept || next.Relocations[0].Shard != 5 {
		t.Errorf("kept %d relocations from shard %d", len(next.Relocations), next.Relocations[0].Shard)
	}
}

// The fitted speed replaces the configured one in the estimates, and the move's reason says so.
func TestLearnedReplayInReason(t *testing.T) {
	cases := []struct {
		name    string
		samples []RelocationSample
		want    string
	}{
		{"configured", nil, "replaying 1.50 WRITE threads of indexing at 0.23;"},
		{"no replay measured", []RelocationSample{{FileSeconds: 100, WriteLoad: 2, Seconds: 100}, {FileSeconds: 50, WriteLoad: 4, Seconds: 60}},
			"(no replay: the last 2 relocations timed landed with their files)"},
		{"replay fitted", []RelocationSample{{FileSeconds: 100, WriteLoad: 2, Seconds: 100 + 2*100/0.2}, {FileSeconds: 50, WriteLoad: 4, Seconds: 50 + 4*50/0.2}},
			"at 0.20 (the replay speed fitted to the last 2 relocations timed);"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = false
			s := churnFixture(false, 2.5, 8, true, 0)
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a"), Relocations: tc.samples}, cfg)
			if len(plan.Moves) == 0 {
				t.Fatalf("no move: %+v", plan.Notes)
			}
			found := false
			for _, m := range plan.Moves {
				found = found || strings.Contains(m.Reason, tc.want)
			}
			if !found {
				t.Errorf("no reason says %q: %+v", tc.want, plan.Moves)
			}
		})
	}
}

// The file phase a relocation is timed against counts the recoveries the first sample showing it
// relocating shows on its nodes, not those the planner counted: a return OpenSearch's balancer
// might have started at once waits when the cycle's later groups fill the rebalance slots.
func TestRelocationSharersObserved(t *testing.T) {
	cases := []struct {
		name        string
		planned     int
		besideOnB   bool // another recovery into b, x[1]'s target, in the sample
		wantSharers int
		wantFiles   float64
	}{
		{"planned shared by 2, relocating alone", 2, false, 1, 100},
		{"planned shared by 2, shared by 2", 2, true, 2, 200},
		{"planned alone, shared by 2", 1, true, 2, 400},
		{"planned before the count was kept: left as planned", 0, true, 0, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := churnFixture(false, 2.5, 8, true, time.Minute)
			for i := range s.Copies {
				c := &s.Copies[i]
				switch {
				case c.Index == "x" && c.Shard == 1:
					c.State, c.RelocatingNode = cluster.StateRelocating, "id-b"
				case c.Index == "fc" && tc.besideOnB:
					c.State, c.RelocatingNode = cluster.StateRelocating, "id-b"
				}
			}
			mem := Memory{Projections: []ReliefProjection{{Node: "id-a", NodeName: "a", Kind: PlanMove, At: s.At.Add(-30 * time.Second), Threads: 8,
				Target: "id-b", TargetName: "b", Moves: []Moved{{Index: "x", Shard: 1, From: "id-a", To: "id-b", FileSeconds: 200, WriteLoad: 2.5, Sharers: tc.planned}}}}}
			_, next := PlanCycle(s, mem, DefaultConfig())
			var got *Moved
			for i := range next.Projections {
				for j := range next.Projections[i].Moves {
					if m := &next.Projections[i].Moves[j]; m.Index == "x" && m.Shard == 1 {
						got = m
					}
				}
			}
			if got == nil {
				t.Fatalf("projections %+v: x[1]'s move is gone", next.Projections)
			}
			if got.Underway.IsZero() || got.Sharers != tc.wantSharers || math.Abs(got.FileSeconds-tc.wantFiles) > 1e-9 {
				t.Errorf("x[1]: underway %v, shared by %d, files %.0fs; want underway, shared by %d, files %.0fs", got.Underway, got.Sharers, got.FileSeconds, tc.wantSharers, tc.wantFiles)
			}
		})
	}
}
