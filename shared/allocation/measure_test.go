package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
)

// churnFixture: a is hot with x[0..2] (4, 2.5 and 1.5 WRITE threads); x[1] goes to b as a move.
// moved places x[1] on b instead, bearing x1Load; aLoad then sets a's measured load, and a queues
// when hot.
func churnFixture(moved bool, x1Load, aLoad float64, hot bool, at time.Duration) *cluster.Snapshot {
	x1 := []string{"a"}
	if moved {
		x1 = []string{"b"}
	}
	f := newFixture("a", "b", "c").
		index("x", 1<<30, []float64{4, x1Load, 1.5}, []string{"a"}, x1, []string{"a"}).
		index("fb", 1<<30, []float64{1}, []string{"b"}).
		index("fc", 1<<30, []float64{2}, []string{"c"})
	if hot {
		f.queueing("a", 6)
	}
	f.node("a").Write.Load = aLoad
	f.s.At = f.s.At.Add(at)
	return f.snap()
}

func notesOf(p Plan, kind string) []Note {
	var out []Note
	for _, n := range p.Notes {
		if n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

// A relief group's projection is kept until its moves complete, and the first sample whose interval
// starts after that measures it: relief as projected is noted, relief that did not come is noted
// with the figures and keeps that kind of plan off the node.
func TestReliefMeasured(t *testing.T) {
	cases := []struct {
		name       string
		aAfter     float64 // a's load in the samples after x[1] landed on b
		x1After    float64 // x[1]'s load on b then
		hotAfter   bool
		wantKind   string
		wantMissed bool
	}{
		{"a's load fell by x[1]'s: relieved", 5.5, 2.5, false, NoteReliefMeasured, false},
		{"a's load fell by a little noise less: relieved", 5.9, 2.5, false, NoteReliefMeasured, false},
		{"a's load did not fall, x[1] carries its load on b (more load arrived): relieved", 8, 2.5, true, NoteReliefMeasured, false},
		{"a's load did not fall, x[1] carries a fifth of its load on b: nothing relieved", 8, 0.5, true, NoteReliefMissed, true},
		{"a's load fell by a fifth of x[1]'s, x[1] carries that: nothing relieved", 7.5, 0.5, true, NoteReliefMissed, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = false
			cfg.TranslogReplaySpeed = 0 // x[1], the heuristic's first, goes; not x[2], the quicker to relocate
			s1 := churnFixture(false, 2.5, 8, true, 0)
			plan, mem := PlanCycle(s1, Memory{Streaks: streaks(s1, "a")}, cfg)
			if got := moveNames(plan); !slices.Equal(got, []string{"x[1] a->b write-hotspot"}) {
				t.Fatalf("first plan: %v, notes %+v", got, plan.Notes)
			}
			if len(mem.Projections) != 1 {
				t.Fatalf("projections: %+v", mem.Projections)
			}
			pr := mem.Projections[0]
			if pr.Kind != PlanMove || pr.Node != "id-a" || pr.Target != "id-b" || !pr.At.Equal(s1.At) || pr.SourceBefore < 8 ||
				pr.SourceAfter > pr.SourceBefore-2.5+1e-9 || pr.TargetAfter < 3.5-1e-9 || len(pr.Moves) != 1 {
				t.Fatalf("projection: %+v", pr)
			}
			// Planned again before the move is issued (a dry-run): one projection.
			_, again := PlanCycle(churnFixture(false, 2.5, 8, true, 30*time.Second), mem, cfg)
			if len(again.Projections) != 1 {
				t.Fatalf("the same group planned twice is projected %d times", len(again.Projections))
			}
			// x[1] landed on b: the sample still mixes before and after; nothing is judged.
			s2 := churnFixture(true, tc.x1After, tc.aAfter, tc.hotAfter, 60*time.Second)
			p2, mem2 := PlanCycle(s2, mem, cfg)
			if n := len(notesOf(p2, NoteReliefMeasured)) + len(notesOf(p2, NoteReliefMissed)); n != 0 || len(mem2.Projections) < 1 || !mem2.Projections[0].Completed.Equal(s2.At) {
				t.Fatalf("judged on the sample of the relocation: notes %+v, projections %+v", p2.Notes, mem2.Projections)
			}
			s3 := churnFixture(true, tc.x1After, tc.aAfter, tc.hotAfter, 90*time.Second)
			p3, mem3 := PlanCycle(s3, mem2, cfg)
			got := notesOf(p3, tc.wantKind)
			if len(got) != 1 || got[0].Measurement == nil {
				t.Fatalf("want one %s note with its measurement, notes %+v", tc.wantKind, p3.Notes)
			}
			m := got[0].Measurement
			if m.Kind != PlanMove || m.SourceBefore != pr.SourceBefore || m.ProjectedAfter != pr.SourceAfter || m.MeasuredAfter < tc.aAfter-1e-9 ||
				m.Relieved == tc.wantMissed || m.ProjectedGroup != 2.5 || m.MeasuredGroup != tc.x1After || !strings.Contains(got[0].Reason, "projected") {
				t.Errorf("measurement: %+v (%s)", m, got[0].Reason)
			}
			if slices.ContainsFunc(mem3.Projections, func(p ReliefProjection) bool { return p.key() == pr.key() }) {
				t.Errorf("a measured projection is kept: %+v", mem3.Projections)
			}
			if missed := slices.ContainsFunc(mem3.Missed, func(x Measurement) bool { return x.Node == "id-a" && x.Kind == PlanMove }); missed != tc.wantMissed {
				t.Errorf("missed: got %v want %v (%+v)", missed, tc.wantMissed, mem3.Missed)
			}
		})
	}
}

// A projection whose moves never complete (a dry-run, a refused group) is dropped after an hour,
// unmeasured.
func TestProjectionExpires(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	cfg.TranslogReplaySpeed = 0 // x[1], the heuristic's first, goes; not x[2], the quicker to relocate
	s1 := churnFixture(false, 2.5, 8, true, 0)
	_, mem := PlanCycle(s1, Memory{Streaks: streaks(s1, "a")}, cfg)
	if len(mem.Projections) != 1 {
		t.Fatalf("projections: %+v", mem.Projections)
	}
	p, next := PlanCycle(churnFixture(false, 2.5, 2, false, projectionWait), mem, cfg)
	if len(next.Projections) != 0 || len(notesOf(p, NoteReliefMissed))+len(notesOf(p, NoteReliefMeasured)) != 0 {
		t.Errorf("an hour on: projections %+v, notes %+v", next.Projections, p.Notes)
	}
}

// A kind of plan that relieved nothing on a node is not planned there again within
// ReliefCoolingOff unless the node's load changed: another kind is tried, or the hotspot is
// reported unrelieved with the measured figures, never as a scale-up.
func TestKindCoolingOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	cfg.TranslogReplaySpeed = 0 // x[1], the heuristic's first, goes; not x[2], the quicker to relocate
	s := churnFixture(false, 2.5, 8, true, 0)
	hs, _ := DetectHotspots(s, streaks(s, "a"), cfg)
	now := measuredLoads(s, hs)["id-a"]
	missed := func(ago time.Duration, after float64) []Measurement {
		return []Measurement{{Node: "id-a", NodeName: "a", Kind: PlanMove, TargetName: "b", PlannedAt: s.At.Add(-ago - 2*time.Minute),
			MeasuredAt: s.At.Add(-ago), Threads: 8, SourceBefore: now, ProjectedAfter: now - 2.5, MeasuredAfter: after, Tolerance: 1.25}}
	}
	cases := []struct {
		name     string
		missed   []Measurement
		coolOff  time.Duration
		wantMove bool
	}{
		{"nothing measured: a move", nil, time.Hour, true},
		{"a move relieved nothing ten minutes ago, load as it was: no move", missed(10*time.Minute, now), time.Hour, false},
		{"the load changed by under a fifth of the threads since: no move", missed(10*time.Minute, now-1.5), time.Hour, false},
		{"the load changed by a fifth of the threads since: a move", missed(10*time.Minute, now-1.7), time.Hour, true},
		{"the cooling-off is over: a move", missed(61*time.Minute, now), time.Hour, true},
		{"a shorter cooling-off, over: a move", missed(10*time.Minute, now), 5 * time.Minute, true},
		{"no cooling-off: a move", missed(10*time.Minute, now), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.ReliefCoolingOff = duration.Duration(tc.coolOff)
			plan, next := PlanCycle(s, Memory{Streaks: streaks(s, "a"), Missed: tc.missed}, c)
			moved := slices.ContainsFunc(next.Projections, func(p ReliefProjection) bool { return p.Node == "id-a" && p.Kind == PlanMove })
			if moved != tc.wantMove {
				t.Fatalf("a move off a: got %v want %v; moves %v, notes %+v", moved, tc.wantMove, moveNames(plan), plan.Notes)
			}
			if plan.ScaleUp != nil {
				t.Errorf("scale-up: %+v", plan.ScaleUp)
			}
			if tc.wantMove {
				return
			}
			cooling := notesOf(plan, NoteKindCoolingOff)
			if len(cooling) != 1 || cooling[0].Measurement == nil || cooling[0].Measurement.Kind != PlanMove ||
				!strings.Contains(cooling[0].Reason, "relieved nothing") {
				t.Errorf("want a kind-cooling-off note with the measurement, notes %+v", plan.Notes)
			}
			if len(plan.Moves) == 0 {
				// No other kind fits: an unrelieved hotspot whose reason carries the figures.
				if len(plan.Unrelieved) != 1 || !strings.Contains(plan.Unrelieved[0].Reason, "move (2.50 threads projected off") {
					t.Errorf("unrelieved: %+v", plan.Unrelieved)
				}
			}
			// The cooling-off is kept for the next cycle.
			if len(next.Missed) != 1 {
				t.Errorf("memory's missed: %+v", next.Missed)
			}
		})
	}
}

// TestMeasurementString: a note on a measured group says what it did, and when the node's load did
// not fall as projected while the group's copies took their load elsewhere, that the rest arrived
// from elsewhere.
func TestMeasurementString(t *testing.T) {
	base := Measurement{NodeName: "a", Kind: PlanMove, TargetName: "b", Threads: 8, SourceBefore: 10, ProjectedAfter: 7, Tolerance: 1, ProjectedGroup: 3, MeasuredGroup: 3}
	cases := []struct {
		name     string
		after    float64
		relieved bool
		want     string
	}{
		{"as projected", 7.2, true, "it relieved it as projected"},
		{"more arrived from elsewhere", 9.5, true, "it relieved it as projected, its copies having taken their load elsewhere, while 2.50 threads more than projected reached it from elsewhere"},
		{"nothing", 9.9, false, "it relieved nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			m.MeasuredAfter, m.Relieved = tc.after, tc.relieved
			got := m.String()
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want it to contain %q", got, tc.want)
			}
			if tc.name == "as projected" && strings.Contains(got, "from elsewhere") {
				t.Errorf("got %q: nothing arrived from elsewhere", got)
			}
		})
	}
}
