package sandbox

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "1h", want: time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "2d", want: 48 * time.Hour},
		{in: "7d", want: MaxHistoryRetention},
		{in: "168h", want: MaxHistoryRetention},
		{in: "", wantErr: "empty"},
		{in: "1x", wantErr: "want a duration such as"},
		{in: "1.5d", wantErr: "whole days only"},
		{in: "0s", wantErr: "longer than 0"},
		{in: "-1h", wantErr: "longer than 0"},
		{in: "0d", wantErr: "longer than 0"},
		{in: "8d", wantErr: "kept at most 7d"},
		{in: "169h", wantErr: "kept at most 7d"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSince(tc.in)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want %s", err, tc.want)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %s, %v; want an error saying %q", got, err, tc.wantErr)
			case tc.wantErr == "" && got != tc.want:
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func finding(node, sb string, usage, limit float64) Finding {
	return Finding{Node: node, Sandbox: sb, Resource: CPU, Mode: Hard, Usage: usage, CancelAbove: limit}
}

func cancellation(task, sb, node string, freed float64) Cancellation {
	return Cancellation{Task: task, Sandbox: sb, Node: node, Resource: CPU, Mode: Hard, Kind: KindCancel,
		Figures: Figures{Freed: freed}, Reason: "over " + task}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// A record aggregates the passes of an invocation per node, sandbox and resource, tallies every
// outcome, keeps only the last pass's plan, and stays within its bounds.
func TestRecorder(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		passes    [][]Finding
		outcomes  [][]Cancellation // per pass
		wantRows  int
		wantDrop  int
		wantFirst UsageRow // the row closest to its limit
		wantPlan  int
		wantTotal int
		wantCount map[string]int // "sandbox outcome": n
	}{
		{
			name: "two passes: peak, mean and passes over the limit; the last pass's plan",
			passes: [][]Finding{
				{finding("d1", "flood", 0.6, 0.2), finding("d1", "web", 0.1, 0.4)},
				{finding("d1", "flood", 0.2, 0.2), finding("d1", "web", 0.3, 0.4)},
			},
			outcomes: [][]Cancellation{
				{cancellation("c:1", "flood", "d1", 0.2), cancellation("c:2", "flood", "d1", 0.2)},
				{cancellation("c:3", "flood", "d1", 0.1)},
			},
			wantRows: 2, wantFirst: UsageRow{Node: "node-1", Sandbox: "flood", Resource: CPU, Mode: Hard, Peak: 0.6, Mean: 0.4, Limit: 0.2, Over: 1},
			wantPlan: 1, wantTotal: 1, wantCount: map[string]int{"flood executed": 3},
		},
		{
			name: "a pass without cancellations leaves no plan",
			passes: [][]Finding{
				{finding("d1", "flood", 0.6, 0.2)},
				{finding("d1", "flood", 0.1, 0.2)},
			},
			outcomes: [][]Cancellation{{cancellation("c:1", "flood", "d1", 0.5)}, nil},
			wantRows: 1, wantFirst: UsageRow{Node: "node-1", Sandbox: "flood", Resource: CPU, Mode: Hard, Peak: 0.6, Mean: 0.35, Limit: 0.2, Over: 1},
			wantPlan: 0, wantTotal: 0, wantCount: map[string]int{"flood executed": 1},
		},
		{
			name: "bounded: the rows nearest their limit and the largest planned requests are kept",
			passes: func() [][]Finding {
				var fs []Finding
				for i := range MaxRecordRows + 50 {
					fs = append(fs, finding(fmt.Sprintf("n%03d", i), "web", 0.001*float64(i%100), 0.4))
				}
				return [][]Finding{append(fs, finding("hot", "flood", 0.9, 0.2))}
			}(),
			outcomes: [][]Cancellation{func() []Cancellation {
				var cs []Cancellation
				for i := range MaxRecordPlan + 5 {
					cs = append(cs, cancellation(fmt.Sprintf("c:%d", i), "flood", "hot", 0.01*float64(i)))
				}
				return cs
			}()},
			wantRows: MaxRecordRows, wantDrop: 51, wantFirst: UsageRow{Node: "hot", Sandbox: "flood", Resource: CPU, Mode: Hard, Peak: 0.9, Mean: 0.9, Limit: 0.2, Over: 1},
			wantPlan: MaxRecordPlan, wantTotal: MaxRecordPlan + 5, wantCount: map[string]int{"flood executed": MaxRecordPlan + 5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder(t0, false, EnforcerShardwise)
			for i, p := range tc.passes {
				r.Pass(Report{Findings: p}, []NodeLoad{{Node: "d1", Name: "node-1"}})
				for _, c := range tc.outcomes[i] {
					r.Outcome(c, "executed")
				}
			}
			rec := r.Record(t0.Add(30 * time.Second))
			if rec.Passes != len(tc.passes) || !rec.At.Equal(t0.Add(30*time.Second)) || rec.Enforcer != EnforcerShardwise {
				t.Errorf("record got passes %d at %s by %s", rec.Passes, rec.At, rec.Enforcer)
			}
			if len(rec.Usage) != tc.wantRows || rec.DroppedRows != tc.wantDrop {
				t.Fatalf("rows got %d (dropped %d), want %d (dropped %d)", len(rec.Usage), rec.DroppedRows, tc.wantRows, tc.wantDrop)
			}
			got := rec.Usage[0]
			if got.Node != tc.wantFirst.Node || got.Sandbox != tc.wantFirst.Sandbox || !near(got.Peak, tc.wantFirst.Peak) ||
				!near(got.Mean, tc.wantFirst.Mean) || got.Limit != tc.wantFirst.Limit || got.Over != tc.wantFirst.Over || got.Mode != Hard {
				t.Errorf("first row got %+v, want %+v", got, tc.wantFirst)
			}
			if len(rec.Plan) != tc.wantPlan || rec.PlanTotal != tc.wantTotal {
				t.Errorf("plan got %d of %d, want %d of %d", len(rec.Plan), rec.PlanTotal, tc.wantPlan, tc.wantTotal)
			}
			for i := 1; i < len(rec.Plan); i++ {
				if rec.Plan[i].Freed > rec.Plan[i-1].Freed {
					t.Errorf("plan not largest first: %+v", rec.Plan)
				}
			}
			count := map[string]int{}
			for _, tl := range rec.Cancelled {
				for o, n := range tl.Count {
					count[tl.Sandbox+" "+o] += n
				}
			}
			if fmt.Sprint(count) != fmt.Sprint(tc.wantCount) {
				t.Errorf("tallies got %v, want %v", count, tc.wantCount)
			}
		})
	}
}

// A report's window: usage per node and in total with its series, cancellations summed per sandbox
// and outcome, the latest record's plan, and nothing from outside the window.
func TestSummarize(t *testing.T) {
	to := time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)
	from := to.Add(-time.Hour)
	rec := func(at time.Time, usage []UsageRow, cancelled []Tally, plan ...Planned) Record {
		return Record{At: at, Passes: 10, Enforcer: EnforcerShardwise, Usage: usage, Cancelled: cancelled, Plan: plan, PlanTotal: len(plan)}
	}
	row := func(node string, mean, peak float64, over int) UsageRow {
		return UsageRow{Node: node, Sandbox: "flood", Resource: CPU, Mode: Hard, Mean: mean, Peak: peak, Limit: 0.2, Over: over}
	}
	tally := func(executed int, freed float64) []Tally {
		return []Tally{{Sandbox: "flood", Resource: CPU, Count: map[string]int{"executed": executed, "gone": 1},
			Freed: map[string]float64{"executed": freed, "gone": 0.05}}}
	}
	records := []Record{
		rec(from.Add(-time.Minute), []UsageRow{row("d1", 0.9, 0.9, 10)}, tally(100, 9)), // before the window
		rec(from.Add(2*time.Minute), []UsageRow{row("d1", 0.5, 0.7, 3), row("d2", 0.1, 0.1, 0)}, tally(5, 0.5), Planned{Task: "old"}),
		rec(to.Add(-time.Minute), []UsageRow{row("d1", 0.3, 0.4, 1), row("d2", 0.1, 0.2, 0)}, tally(2, 0.25), Planned{Task: "c:9", Sandbox: "flood"}),
	}
	s := Summarize("prod", records, from, to)
	if s.Invocations != 2 || s.Passes != 20 || s.BucketSeconds != 300 {
		t.Fatalf("got %d invocations, %d passes, buckets of %gs; want 2, 20, 300", s.Invocations, s.Passes, s.BucketSeconds)
	}
	tests := []struct {
		node                    string
		mean, peak, limit, over float64
		series                  map[int]float64 // bucket: peak; the rest nil
	}{
		{node: AllNodes, mean: 0.25, peak: 0.4, limit: 0.2, over: 1, series: map[int]float64{0: 0.4, 11: 0.3}},
		{node: "d1", mean: 0.4, peak: 0.7, limit: 0.2, over: 1, series: map[int]float64{0: 0.7, 11: 0.4}},
		{node: "d2", mean: 0.1, peak: 0.2, limit: 0.2, over: 0, series: map[int]float64{0: 0.1, 11: 0.2}},
	}
	if len(s.Usage) != len(tests) {
		t.Fatalf("usage rows got %+v, want %d", s.Usage, len(tests))
	}
	for i, tc := range tests {
		u := s.Usage[i]
		if u.Node != tc.node || !near(u.Mean, tc.mean) || !near(u.Peak, tc.peak) || !near(u.Limit, tc.limit) || !near(u.OverShare, tc.over) {
			t.Errorf("row %d got %+v, want %+v", i, u, tc)
		}
		for b, v := range u.Series {
			want, ok := tc.series[b]
			if ok != (v != nil) || ok && !near(*v, want) {
				t.Errorf("row %s bucket %d got %v, want %v (%v)", u.Node, b, v, want, ok)
			}
		}
	}
	if len(s.Cancellations) != 1 {
		t.Fatalf("cancellations got %+v", s.Cancellations)
	}
	c := s.Cancellations[0]
	if c.Count["executed"] != 7 || c.Count["gone"] != 2 || !near(c.Freed["executed"][CPU], 0.75) || !near(c.Freed["gone"][CPU], 0.1) {
		t.Errorf("flood's cancellations got %+v, want 7 executed freeing 0.75 and 2 gone", c)
	}
	if len(s.Plan) != 1 || s.Plan[0].Task != "c:9" || !s.PlanAt.Equal(to.Add(-time.Minute)) || s.PlanTotal != 1 {
		t.Errorf("plan got %+v at %s, want the latest record's", s.Plan, s.PlanAt)
	}

	empty := Summarize("prod", nil, from, to)
	if empty.Invocations != 0 || empty.Usage == nil || empty.Plan == nil || empty.Cancellations == nil {
		t.Errorf("empty window got %+v, want no invocations and empty (not null) lists", empty)
	}
}
