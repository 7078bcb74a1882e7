package allocation

import (
	"math"
	"slices"
	"testing"
)

// The zone proof: under allocation awareness over zones a, b and c, a shard with three copies keeps
// one in each zone whatever the planner does, so zone c's nodes carry c's copy of every shard.
// Index x has four shards of 2 WRITE threads a copy; zone c's one node holds four copies (8 threads
// of 8), while the cluster as a whole is at 60 %.
func TestZoneCapacityProof(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	cases := []struct {
		name      string
		nodes     []string
		zones     map[string]string
		replicas  int      // replicas of x: 2 (three copies) unless set
		aware     []string // awareness attributes
		forced    []string // forced zone values
		backlog   float64  // threads of c1's load served from its backlog
		wantBound string
		wantValue float64
		wantNodes []string
	}{
		{name: "forced awareness, zone c one node: proven", aware: []string{"zone"}, forced: []string{"a", "b", "c"},
			wantBound: BoundZone, wantValue: 8, wantNodes: []string{"c1"}},
		{name: "awareness without forcing, every zone has nodes: proven", aware: []string{"zone"},
			wantBound: BoundZone, wantValue: 8, wantNodes: []string{"c1"}},
		// Without awareness x's copies may leave c1 for a or b: the search relieves it, no signal.
		{name: "no awareness: no proof"},
		// Two copies over three zones: a zone need hold none of them.
		{name: "two copies over three zones: no proof", aware: []string{"zone"}, forced: []string{"a", "b", "c"}, replicas: 1},
		// A second node in zone c has room for half of c's copies.
		{name: "zone c has two nodes: no proof", aware: []string{"zone"}, forced: []string{"a", "b", "c"},
			nodes: []string{"a1", "a2", "b1", "b2", "c1", "c2"}},
		// 1.5 of c1's 8 served threads drained an earlier backlog: 6.5 arrived, under 7.2.
		{name: "backlog served: what arrived is under the zone's limit", aware: []string{"zone"}, forced: []string{"a", "b", "c"},
			backlog: 1.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = []string{"a1", "a2", "b1", "b2", "c1"}
			}
			f := newFixture(nodes...)
			for _, n := range nodes {
				f.node(n).Attributes = map[string]string{"zone": n[:1]}
			}
			placement := [][]string{{"a1", "b1", "c1"}, {"a2", "b2", "c1"}, {"b1", "a1", "c1"}, {"b2", "a2", "c1"}}
			if tc.replicas == 1 {
				placement = [][]string{{"a1", "c1"}, {"a2", "c1"}, {"b1", "c1"}, {"b2", "c1"}}
			}
			f.index("x", 1<<30, []float64{2, 2, 2, 2}, placement...).queueing("c1", 6)
			f.node("c1").Write.BacklogServed = tc.backlog
			f.s.Settings.AwarenessAttributes = tc.aware
			if tc.forced != nil {
				f.s.Settings.ForcedAwareness = map[string][]string{"zone": tc.forced}
			}
			s := f.snap()
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "c1")}, cfg)
			if tc.wantBound == "" {
				if plan.ScaleUp != nil {
					t.Fatalf("Scale Up Needed %+v, want none without a proof", plan.ScaleUp)
				}
				return
			}
			if plan.ScaleUp == nil {
				t.Fatalf("no Scale Up Needed, want bound %s; notes %+v", tc.wantBound, plan.Notes)
			}
			if plan.ScaleUp.Bound != tc.wantBound || math.Abs(plan.ScaleUp.Value-tc.wantValue) > 1e-9 ||
				!slices.Equal(plan.ScaleUp.Nodes, tc.wantNodes) {
				t.Fatalf("Scale Up Needed %s %v on %v (%s), want %s %v on %v",
					plan.ScaleUp.Bound, plan.ScaleUp.Value, plan.ScaleUp.Nodes, plan.ScaleUp.Reason, tc.wantBound, tc.wantValue, tc.wantNodes)
			}
			for _, u := range plan.Unrelieved {
				if slices.Contains(tc.wantNodes, u.NodeName) {
					t.Errorf("%s is listed as unrelieved (the planner's shortfall) under a zone proof", u.NodeName)
				}
			}
		})
	}
}
