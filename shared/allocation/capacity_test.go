package allocation

import (
	"math"
	"testing"
)

// The capacity proof counts the write load that arrived, not what was served: a node draining a
// backlog queued before the interval serves more than arrives, and that surplus is not load the
// cluster must keep carrying. a serves 8 threads, b 7.2 and c 7.1: 22.3 served against a limit of
// 90 % of 24 threads, 21.6.
func TestCapacityProofCountsArrivals(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	cases := []struct {
		name    string
		backlog float64 // threads of a's load served from its backlog
		// wantBound is the Scale Up Needed's bound, and wantValue its load when it is the capacity
		// bound.
		wantBound string
		wantValue float64
	}{
		{name: "no backlog served: 22.3 threads arrived, over the limit", wantBound: BoundCapacity, wantValue: 22.3},
		{name: "0.5 of a's 8 threads were backlog: 21.8 arrived, still over", backlog: 0.5, wantBound: BoundCapacity, wantValue: 21.8},
		// Moves may relieve a, so the proof is not there: no signal, whatever the search finds.
		{name: "1.5 of a's 8 threads were backlog: 20.8 arrived, under the limit", backlog: 1.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c").
				index("x", 1<<30, []float64{4, 4, 3.6, 3.6, 3.55, 3.55}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}, []string{"c"}, []string{"c"}).
				queueing("a", 6)
			f.node("a").Write.BacklogServed = tc.backlog
			s := f.snap()
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a")}, cfg)
			if tc.wantBound == "" {
				if plan.ScaleUp != nil {
					t.Fatalf("Scale Up Needed %+v, want none without a proof", plan.ScaleUp)
				}
				return
			}
			if plan.ScaleUp == nil {
				t.Fatalf("no Scale Up Needed, want bound %s; notes %+v", tc.wantBound, plan.Notes)
			}
			if plan.ScaleUp.Bound != tc.wantBound {
				t.Fatalf("bound %s (%s), want %s", plan.ScaleUp.Bound, plan.ScaleUp.Reason, tc.wantBound)
			}
			if tc.wantBound == BoundCapacity && math.Abs(plan.ScaleUp.Value-tc.wantValue) > 1e-9 {
				t.Errorf("capacity bound's load %v, want %v", plan.ScaleUp.Value, tc.wantValue)
			}
		})
	}
}
