package allocation

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// zoned puts each named node in a zone (attribute "zone") and turns on awareness by zone, forced
// over the given zones when forced is set.
func zoned(f *fixture, zones map[string]string, forced ...string) *fixture {
	for name, z := range zones {
		n := f.node(name)
		n.Attributes = map[string]string{"zone": z}
	}
	f.s.Settings.AwarenessAttributes = []string{"zone"}
	if len(forced) > 0 {
		f.s.Settings.ForcedAwareness = map[string][]string{"zone": forced}
	}
	return f
}

// unevenZones is forced awareness over zones a (n1, n2), b and c (five nodes each): orders has six
// shards of three copies, one per zone, so zone a's two nodes hold three copies each while the
// cluster-wide average is two per node (18 copies over 12 nodes). n1's three copies are hot (2.8
// threads each: 105 %), n2's cold; every hot copy's other zones already hold its shard, so n2 is
// the only node it may go to.
func unevenZones() *fixture {
	names := []string{"n1", "n2"}
	zones := map[string]string{"n1": "a", "n2": "a"}
	for _, z := range []string{"b", "c"} {
		for i := 1; i <= 5; i++ {
			n := fmt.Sprintf("%s%d", z, i)
			names = append(names, n)
			zones[n] = z
		}
	}
	f := newFixture(names...)
	var placement [][]string
	loads := []float64{2.8, 2.8, 2.8, 0.3, 0.3, 0.3}
	for s := range 6 {
		home := "n1"
		if s >= 3 {
			home = "n2"
		}
		placement = append(placement, []string{home, fmt.Sprintf("b%d", s%5+1), fmt.Sprintf("c%d", s%5+1)})
	}
	f.index("orders", 1<<30, loads, placement...).queueing("n1", 6)
	return zoned(f, zones, "a", "b", "c")
}

// The shapes a one-group greedy search left hot with room to spare, each on a hand-built snapshot.
func TestReliefShapes(t *testing.T) {
	cases := []reliefCase{
		{
			// With the index-balance limit from the cluster-wide average (ceil(2 × 1.5) = 3), n2 at 3
			// copies refuses every hot copy. Per zone, zone a must hold 6 copies on 2 nodes: the
			// limit is ceil(3 × 1.5) = 5, and the move is all-yes.
			name:  "forced awareness over uneven zones: the index-balance limit is the zone's",
			build: func() (*cluster.Snapshot, []string) { return unevenZones().snap(), []string{"n1"} },
			moves: []string{"orders[0] n1->n2 write-hotspot"},
			why:   []string{"rule all-yes"},
		},
		{
			// With a balance factor of 1 the zone's limit is 3 and n2 is at it: the move alone adds a
			// copy of orders there, but a cold orders copy sent back keeps its count, so the swap is
			// admitted. Today's filter dropped n2 before any swap was tried.
			name:  "forced awareness at the zone's limit: a count-neutral swap",
			build: func() (*cluster.Snapshot, []string) { return unevenZones().snap(), []string{"n1"} },
			cfg:   func(c *Config) { c.IndexBalanceFactor = 1 },
			moves: []string{"orders[0] n1->n2 write-hotspot", "orders[3] n2->n1 swap-return"},
			why:   []string{"as a swap", "rule count-neutral"},
		},
		{
			// a (95 %) can shed load only by trading a 2.0 copy for b's or c's 1.9 ones: 0.1 threads
			// off for two relocations, and the next cycle might trade them back. That is not relief;
			// the cluster is at exactly 90 % of its threads, so there is no proof either.
			name: "a swap of copies of nearly equal load is not relief",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{2, 2, 2}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("y", 1<<30, []float64{1.6}, []string{"a"}).
					index("zb", 1<<30, []float64{1.9, 1.9, 1.9, 1.3}, []string{"b"}, []string{"b"}, []string{"b"}, []string{"b"}).
					index("zc", 1<<30, []float64{1.9, 1.9, 1.9, 1.3}, []string{"c"}, []string{"c"}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			notes:      []string{NoteUnrelieved},
			unrelieved: []string{"a"},
		},
		{
			// 40 copies of 0.21 threads on a (105 %): no one copy is enough, and one a cycle never
			// adds up. Small copies go together, as far as the recovery throttle lets a send
			// (node_concurrent_outgoing_recoveries 2): a ends lower even though it stays hot.
			name: "many small hot copies: several move in one group, within the recovery throttle",
			build: func() (*cluster.Snapshot, []string) {
				return manySmall().snap(), []string{"a"}
			},
			moves: []string{"s[0] a->b write-hotspot", "s[1] a->c write-hotspot"},
			why:   []string{"as a bundle", "a ends at 100% (goal 90%)"},
		},
		{
			name: "many small hot copies: a wider throttle lets more go together",
			build: func() (*cluster.Snapshot, []string) {
				f := manySmall()
				f.s.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: 4, NodeOutgoing: 4, ClusterRebalance: -1, Known: true}
				return f.snap(), []string{"a"}
			},
			moves: []string{"s[0] a->b write-hotspot", "s[1] a->c write-hotspot", "s[2] a->d write-hotspot", "s[3] a->e write-hotspot"},
			why:   []string{"as a bundle", "a ends at 94% (goal 90%)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRelief(t, tc) })
	}
}

func manySmall() *fixture {
	loads := make([]float64, 40)
	placement := make([][]string, 40)
	for i := range loads {
		loads[i], placement[i] = 0.21, []string{"a"}
	}
	return newFixture("a", "b", "c", "d", "e").
		index("s", 1<<20, loads, placement...).
		index("fill", 1<<30, []float64{5, 5, 5, 5}, []string{"b"}, []string{"c"}, []string{"d"}, []string{"e"}).
		queueing("a", 6)
}

// A copy does not go back to a node it left within the hour unless that node's load changed since.
func TestNoReturnWithinTheHour(t *testing.T) {
	build := func() *cluster.Snapshot {
		// x[2] (1.5, the copy reaching the goal whose relocation lands first) goes to b, the least
		// utilized, unless it just left b.
		return newFixture("a", "b", "c").
			index("x", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
			index("fb", 1<<30, []float64{1}, []string{"b"}).
			index("fc", 1<<30, []float64{2}, []string{"c"}).
			queueing("a", 6).snap()
	}
	cases := []struct {
		name     string
		departed []Departure // At is set from ago
		ago      time.Duration
		want     string
	}{
		{"nothing left b: the least utilized takes it", nil, 0, "x[2] a->b write-hotspot"},
		{"x[2] left b ten minutes ago, b's load as it was: c takes it",
			[]Departure{{Index: "x", Shard: 2, Node: "id-b", Utilization: 0.125}}, 10 * time.Minute, "x[2] a->c write-hotspot"},
		{"x[2] left b ten minutes ago, b much busier then: it may go back",
			[]Departure{{Index: "x", Shard: 2, Node: "id-b", Utilization: 0.5}}, 10 * time.Minute, "x[2] a->b write-hotspot"},
		{"x[2] left b over an hour ago: it may go back",
			[]Departure{{Index: "x", Shard: 2, Node: "id-b", Utilization: 0.125}}, 61 * time.Minute, "x[2] a->b write-hotspot"},
		{"another copy left b: no matter",
			[]Departure{{Index: "x", Shard: 1, Node: "id-b", Utilization: 0.125}}, 10 * time.Minute, "x[2] a->b write-hotspot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := build()
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = false
			var departed []Departure
			for _, d := range tc.departed {
				d.At = s.At.Add(-tc.ago)
				departed = append(departed, d)
			}
			plan, next := PlanCycle(s, Memory{Streaks: streaks(s, "a"), Departed: departed}, cfg)
			if got := moveNames(plan); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("moves: got %v want [%s]; notes %+v", got, tc.want, plan.Notes)
			}
			// The move just planned is remembered, and so is every departure within the hour.
			if !slices.ContainsFunc(next.Departed, func(d Departure) bool { return d.Index == "x" && d.Shard == 2 && d.Node == "id-a" && d.At.Equal(s.At) }) {
				t.Errorf("memory: %+v lacks x[2] leaving a", next.Departed)
			}
			for _, d := range next.Departed {
				if s.At.Sub(d.At) >= returnWithin {
					t.Errorf("memory keeps a departure over an hour old: %+v", d)
				}
			}
		})
	}
}
