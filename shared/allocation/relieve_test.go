package allocation

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// reliefCase is one rule of the write-hotspot relief: a cluster (the hot nodes already met the
// criteria once), and the moves, notes and scale-up signal the rule promises for it.
type reliefCase struct {
	name  string
	build func() (*cluster.Snapshot, []string)
	cfg   func(*Config) // edits the configuration (the built-in balancer is off unless turned on)
	moves []string
	notes []string // note kinds, in plan order
	bound string   // ScaleUp bound, "" for none
	why   []string // in the write-hotspot move's reason
	// The scale-up's proof, checked when scaleNodes is set: the nodes named and the bound's numbers.
	scaleNodes   []string
	value, limit float64
	noteWhy      []string // in the notes' reasons
	// unrelieved names the hot nodes no step was found for (Plan.Unrelieved), and unrelievedEvals
	// the decider evaluations the first one's search spent, checked when set.
	unrelieved      []string
	unrelievedEvals int
}

// checkOutcomes holds the plan's hot nodes to what their outcome says (Hotspot.Outcome): every hot
// node has one; every write node hot gives OutcomeAllHot; a node planned has a move off it in the
// plan; a node the search found nothing for (unrelieved) is NoteUnrelieved.
func checkOutcomes(t *testing.T, plan Plan, unrelieved []string) {
	t.Helper()
	for _, h := range plan.Hotspots {
		if !h.Hot {
			continue
		}
		switch allHot := plan.ScaleUp != nil && plan.ScaleUp.Bound == BoundAllHot; {
		case h.Outcome == "":
			t.Errorf("%s: hot with no outcome", h.NodeName)
		case allHot != (h.Outcome == OutcomeAllHot):
			t.Errorf("%s: outcome %q with every write node hot %v", h.NodeName, h.Outcome, allHot)
		case h.Outcome == OutcomePlanned && !slices.ContainsFunc(plan.Moves, func(m Move) bool { return m.From == h.Node }):
			t.Errorf("%s: outcome %q with no move off it: %v", h.NodeName, h.Outcome, moveNames(plan))
		case slices.Contains(unrelieved, h.NodeName) != (h.Outcome == NoteUnrelieved):
			t.Errorf("%s: outcome %q, unrelieved %v", h.NodeName, h.Outcome, unrelieved)
		}
	}
}

func runRelief(t *testing.T, tc reliefCase) Plan {
	t.Helper()
	s, hot := tc.build()
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	if tc.cfg != nil {
		tc.cfg(&cfg)
	}
	plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, hot...)}, cfg)
	if got := moveNames(plan); !slices.Equal(got, tc.moves) {
		t.Errorf("moves: got %v want %v\nnotes: %+v", got, tc.moves, plan.Notes)
	}
	var kinds []string
	for _, n := range plan.Notes {
		kinds = append(kinds, n.Kind)
	}
	if !slices.Equal(kinds, tc.notes) {
		t.Errorf("notes: got %+v want kinds %v", plan.Notes, tc.notes)
	}
	switch {
	case tc.bound == "" && plan.ScaleUp != nil:
		t.Errorf("scale up: got %+v, want none", plan.ScaleUp)
	case tc.bound != "" && (plan.ScaleUp == nil || plan.ScaleUp.Bound != tc.bound):
		t.Errorf("scale up: got %+v, want bound %s", plan.ScaleUp, tc.bound)
	}
	if tc.scaleNodes != nil && plan.ScaleUp != nil {
		su := plan.ScaleUp
		if !slices.Equal(su.Nodes, tc.scaleNodes) || math.Abs(su.Value-tc.value) > 1e-9 || math.Abs(su.Limit-tc.limit) > 1e-9 {
			t.Errorf("scale up proof: got nodes %v value %v limit %v, want %v %v %v", su.Nodes, su.Value, su.Limit, tc.scaleNodes, tc.value, tc.limit)
		}
		if su.Reason == "" {
			t.Error("scale up: no reason")
		}
	}
	var unrelieved []string
	for _, u := range plan.Unrelieved {
		unrelieved = append(unrelieved, u.NodeName)
		if u.Reason == "" {
			t.Errorf("unrelieved %s: no reason", u.NodeName)
		}
	}
	if !slices.Equal(unrelieved, tc.unrelieved) {
		t.Errorf("unrelieved: got %v want %v", unrelieved, tc.unrelieved)
	}
	checkOutcomes(t, plan, unrelieved)
	if tc.unrelievedEvals > 0 && (len(plan.Unrelieved) == 0 || plan.Unrelieved[0].Search.Evaluations != tc.unrelievedEvals) {
		t.Errorf("unrelieved search: got %+v, want %d evaluations", plan.Unrelieved, tc.unrelievedEvals)
	}
	var reasons []string
	for _, n := range plan.Notes {
		reasons = append(reasons, n.Reason)
	}
	for _, w := range tc.noteWhy {
		if !strings.Contains(strings.Join(reasons, "\n"), w) {
			t.Errorf("notes: %q lack %q", reasons, w)
		}
	}
	if len(tc.why) > 0 {
		i := slices.IndexFunc(plan.Moves, func(m Move) bool { return m.Phase == PhaseWriteHotspot })
		if i < 0 {
			t.Fatalf("no write-hotspot move to read the reason of")
		}
		for _, w := range tc.why {
			if !strings.Contains(plan.Moves[i].Reason, w) {
				t.Errorf("reason: %q lacks %q", plan.Moves[i].Reason, w)
			}
		}
	}
	return plan
}

func TestReliefTargets(t *testing.T) {
	cases := []reliefCase{
		{
			name: "the least utilized node takes the copy",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{2, 1}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[2] a->c write-hotspot"},
			why:   []string{"rule all-yes"},
		},
		{
			name: "a target at the index's total_shards_per_node is refused (shards_limit NO): the next node takes the copy",
			build: func() (*cluster.Snapshot, []string) {
				// c, the least utilized, already holds hot[3], and hot allows one copy a node.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5, 0.1}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"c"}).
					index("other", 1<<30, []float64{2, 1}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				f.s.Indices[0].TotalShardsPerNode = 1
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[2] a->b write-hotspot"},
		},
		{
			name: "a target at the cluster's total_shards_per_node takes the hot copy when a copy leaves it first, in the same call",
			build: func() (*cluster.Snapshot, []string) {
				// c, the only other node, holds four copies, the cluster's limit; a holds three. A
				// copy of c back to a first (a to four), then the hot copy to c (back to four).
				f := newFixture("a", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5, 0.1}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"c"}).
					index("other", 1<<30, []float64{0.3, 0.3, 0.4}, []string{"c"}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				f.s.Settings.TotalShardsPerNode = 4
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[3] c->a swap-return", "hot[2] a->c write-hotspot"},
			why:   []string{"as a swap"},
		},
		{
			name: "a target at the cluster's total_shards_per_node is refused (shards_limit NO): the next node takes the copy",
			build: func() (*cluster.Snapshot, []string) {
				// c, the least utilized, holds three copies, the cluster's limit; b holds one.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{2, 0.5, 0.5, 0}, []string{"b"}, []string{"c"}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				f.s.Settings.TotalShardsPerNode = 3
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[2] a->b write-hotspot"},
		},
		{
			name: "equal utilization and copies: the first node by name",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "d", "c", "b").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[2] a->b write-hotspot"},
		},
		{
			name: "a node another hot node's relief already entered comes after the untouched ones",
			build: func() (*cluster.Snapshot, []string) {
				// a's copy (1.5, the one that lands first) goes to c, the emptiest. b's copy then goes
				// to d (3 threads), not to c, which at 1.5 threads is still the least utilized.
				f := newFixture("a", "b", "c", "d").
					index("h1", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("h2", 1<<30, []float64{4, 2.5, 1.5}, []string{"b"}, []string{"b"}, []string{"b"}).
					index("filler", 1<<30, []float64{3}, []string{"d"}).
					queueing("a", 6).queueing("b", 5)
				return f.snap(), []string{"a", "b"}
			},
			moves: []string{"h1[2] a->c write-hotspot", "h2[2] b->d write-hotspot"},
		},
		{
			name: "replicas initializing on a node take its incoming recovery slots: the next node takes the copy",
			build: func() (*cluster.Snapshot, []string) {
				// c, the least utilized, is building two replicas (node_concurrent_incoming_recoveries 2).
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("other", 1<<30, []float64{2, 1}, []string{"b"}, []string{"c"}).
					index("new", 1<<20, []float64{0, 0}, []string{"b", "c"}, []string{"b", "c"})
				f.queueing("a", 6)
				s := f.snap()
				for i := range s.Copies {
					if c := &s.Copies[i]; c.Index == "new" && !c.Primary {
						c.State = cluster.StateInitializing
					}
				}
				return s, []string{"a"}
			},
			moves: []string{"hot[2] a->b write-hotspot"},
		},
		{
			name: "a target another decider prefers not is never taken, even over one only the improvement rule accepts",
			build: func() (*cluster.Snapshot, []string) {
				// c is idle but holds 3 copies of x, its index-balance limit; b ends at 94 % with x[1].
				// x[2] fits b under the goal but leaves a over it, so it is not the better plan.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4.8, 2.5, 0.7, 0, 0, 0}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"c"}, []string{"c"}, []string{"c"}).
					index("other", 1<<30, []float64{5}, []string{"b"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"x[1] a->b write-hotspot"},
			why:   []string{"rule improves-excess"},
		},
		{
			name: "a plan whose target stays within the allocation threshold beats the heuristic's first, which only the improvement rule accepts",
			build: func() (*cluster.Snapshot, []string) {
				// a carries 8 threads (100 %). x[1] (2.5, the heuristic's first) brings a to its
				// goal but leaves b at 94 %, over it; x[2] (1.5) does too and leaves b at 81 %.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4, 2.5, 1.5, 0, 0, 0}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"c"}, []string{"c"}, []string{"c"}).
					index("other", 1<<30, []float64{5}, []string{"b"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"x[2] a->b write-hotspot"},
			why:   []string{"rule all-yes", "a ends at 81% (goal 90%), b at 81%"},
		},
		{
			name: "of two copies that each bring the node to its goal, the one copying fewer bytes goes",
			build: func() (*cluster.Snapshot, []string) {
				// a carries 8.8 threads (110 %): 1.6 must leave. p[0] (2.2, 16 GiB) is closest to ½
				// of the hottest, but q[0] (2.6, 1 GiB) relieves a as well and its relocation, the
				// time a stays hot, is a sixteenth as long.
				f := newFixture("a", "b", "c").
					index("h", 1<<30, []float64{4}, []string{"a"}).
					index("p", 16<<30, []float64{2.2}, []string{"a"}).
					index("q", 1<<30, []float64{2.6}, []string{"a"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"q[0] a->b write-hotspot"},
		},
		{
			name: "a copy that alone brings the node to its goal goes before the heuristic's favourite",
			build: func() (*cluster.Snapshot, []string) {
				// a carries 10 threads (125 %): 2.8 must leave to reach 90 %. The heuristic ranks
				// x[2] (2.0, closest to ½ of the hottest) first, but only x[0] (4) is enough.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4, 2.1, 2.0, 1.9}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"x[0] a->b write-hotspot"},
			why:   []string{"a ends at 75% (goal 90%)", "tier 3 of the ½-of-hottest heuristic"},
		},
		{
			name: "a later candidate whose plan reaches the goal beats an earlier one whose plan does not",
			build: func() (*cluster.Snapshot, []string) {
				// a carries 9 threads: 1.8 must leave. p[0] (2) comes first in the heuristic's order
				// but may only go to b in a swap returning 1 thread: a would end at 100 %. q[0] (4)
				// goes to c alone and a ends at 62.5 %.
				f := newFixture("a", "b", "c").
					index("p", 1<<30, []float64{2}, []string{"a"}).
					index("q", 1<<30, []float64{4}, []string{"a"}).
					index("r", 1<<30, []float64{1, 1, 1}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("back", 1<<30, []float64{1}, []string{"b"}).
					index("fill", 1<<30, []float64{5}, []string{"b"}).
					queueing("a", 6)
				exclude(f, "c", "p")
				return f.snap(), []string{"a"}
			},
			moves: []string{"q[0] a->c write-hotspot"},
		},
		{
			name: "no copy alone reaches the goal: the heuristic's first copy leads a bundle that does",
			build: func() (*cluster.Snapshot, []string) {
				// a carries 12 threads (150 %): 4.8 must leave and no copy carries that much. x[2]
				// (2.5, closest to ½ of 4) moves to b and x[3] to c in the same group; a ends at 88 %.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4, 3, 2.5, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"x[2] a->b write-hotspot", "x[3] a->c write-hotspot"},
			why:   []string{"as a bundle: a ends at 88% (goal 90%)", "tier 1 of the ½-of-hottest heuristic"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRelief(t, tc) })
	}
}

// exclude keeps the named indices off nodes (a comma-separated list of names) by an index-level
// exclude filter.
func exclude(f *fixture, nodes string, indices ...string) *fixture {
	for i := range f.s.Indices {
		if slices.Contains(indices, f.s.Indices[i].Name) {
			f.s.Indices[i].Filters.Exclude = map[string]string{"_name": nodes}
		}
	}
	return f
}

func TestReliefSwapsAndChains(t *testing.T) {
	cases := []reliefCase{
		{
			name: "swap: the lightest copy of the target that is enough comes back",
			build: func() (*cluster.Snapshot, []string) {
				// hot[0] (3.5) takes b from 4 to 7.5 threads, 0.3 over its goal: warm[0] (0.6) is the
				// lightest copy enough to come back; warm[1] (1.2) and filler[0] (2.2) are too.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{0.6, 1.2}, []string{"b"}, []string{"b"}).
					index("filler", 1<<30, []float64{2.2, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[0] a->b write-hotspot", "warm[0] b->a swap-return"},
			why:   []string{"as a swap", "rule fits-after-group", "; with warm[0] b→a (0.60 threads)"},
		},
		{
			name: "swap: no copy of a shard another queueing node holds comes back",
			build: func() (*cluster.Snapshot, []string) {
				// As above, with warm[0] also on c, whose queue is over the limit though not yet for
				// long enough to be hot: moving warm[0] would keep c from shedding its own copy while
				// it relocates (random seed 24 of 200), so warm[1] comes back.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{0.6, 1.2}, []string{"b", "c"}, []string{"b"}).
					index("filler", 1<<30, []float64{2.2, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6).queueing("c", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[0] a->b write-hotspot", "warm[1] b->a swap-return"},
		},
		{
			name: "swap: a segment replica of a queueing node's primary may come back",
			build: func() (*cluster.Snapshot, []string) {
				// warm[0]'s primary (4.6 threads) is on c, queueing, and its replica on b bears its
				// segment-replication share (0.60): a replica copies segments and replays little, so
				// its relocation holds the shard only briefly, and it comes back as warm[0] did.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					segment("warm", 1<<30, []float64{4.6, 1.2}, []string{"c", "b"}, []string{"b"}).
					index("filler", 1<<30, []float64{2.2, 1.0}, []string{"b"}, []string{"c"}).
					queueing("a", 6).queueing("c", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[0] a->b write-hotspot", "warm[0] b->a swap-return"},
		},
		{
			name: "swap: a copy of the same index comes back before a lighter one of another",
			build: func() (*cluster.Snapshot, []string) {
				// As above, with hot[2] (1.2) on b in warm[1]'s place: it is enough and keeps hot's
				// counts level, so it comes back though warm[0] is lighter.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5, 1.2}, []string{"a"}, []string{"a"}, []string{"b"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{0.6}, []string{"b"}).
					index("filler", 1<<30, []float64{2.2, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[0] a->b write-hotspot", "hot[2] b->a swap-return"},
		},
		{
			name: "swap: no single copy is enough, the heaviest few together come back",
			build: func() (*cluster.Snapshot, []string) {
				// hot[0] (3.5) takes b from 5.3 to 8.8 threads, 1.6 over its goal. No copy of b
				// lighter than the hot copy carries that much; three of 0.6 do.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("l1", 1<<30, []float64{0.6}, []string{"b"}).
					index("l2", 1<<30, []float64{0.6}, []string{"b"}).
					index("l3", 1<<30, []float64{0.6}, []string{"b"}).
					index("filler", 1<<30, []float64{3.5, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				// The small copies would take a off saturation far sooner than a swap sharing a's
				// recovery rate four ways (soonerStep): here they may not leave.
				exclude(f, "b,c", "small")
				return f.snap(), []string{"a"}
			},
			// Three returns would take a to three incoming recoveries, past its two: the move
			// function would refuse the swap whole. The hot copy goes alone, and the returns wait
			// for its files and for a slot (staged returns, returnsBlocked).
			moves: []string{"hot[0] a->b write-hotspot"},
			why:   []string{"b at 88%", "with l3[0] b→a (0.60 threads), l2[0] b→a (0.60 threads), l1[0] b→a (0.60 threads)", "its return waits until the hot copy's files are copied", "and for a recovery slot: sent with it now, a would have 3 incoming recoveries, limit 2"},
		},
		{
			name: "swap: never more than three copies come back",
			build: func() (*cluster.Snapshot, []string) {
				// As above with four copies of 0.5 (b at 5.5, 1.8 over): three bring back 1.5, not
				// enough; the fourth would exceed the bound. The small copies and b's may go nowhere
				// else, c has no room: no plan, and the search says so.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("l1", 1<<30, []float64{0.5}, []string{"b"}).
					index("l2", 1<<30, []float64{0.5}, []string{"b"}).
					index("l3", 1<<30, []float64{0.5}, []string{"b"}).
					index("l4", 1<<30, []float64{0.5}, []string{"b"}).
					index("filler", 1<<30, []float64{3.5, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				exclude(f, "c", "l1", "l2", "l3", "l4")
				exclude(f, "b,c", "small")
				return f.snap(), []string{"a"}
			},
			notes:      []string{NoteUnrelieved},
			unrelieved: []string{"a"},
		},
		{
			name: "a swap that makes the target fit beats a move the improvement rule alone accepts",
			build: func() (*cluster.Snapshot, []string) {
				// hot[0] alone takes b to 94 %: under a's 100 % and under saturation, so the
				// improvement rule would take it; the swap with warm[0] ends b at its goal and wins.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{0.6}, []string{"b"}).
					index("filler", 1<<30, []float64{3.4, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			moves: []string{"hot[0] a->b write-hotspot", "warm[0] b->a swap-return"},
			why:   []string{"rule fits-after-group"},
		},
		{
			name: "a lone move OpenSearch's balancer would undo becomes a count-swap with a cold copy",
			build: func() (*cluster.Snapshot, []string) {
				// hot[2] fits b alone, but a 2, b 4, c 3 copies spreads the counts past the
				// threshold: cold[0] comes back.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("cold", 1<<20, []float64{0, 0, 0}, []string{"b"}, []string{"b"}, []string{"b"}).
					index("mid", 1<<30, []float64{1, 1, 1}, []string{"c"}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			cfg:   func(c *Config) { c.BuiltinBalancer.Enabled = true },
			moves: []string{"hot[2] a->b write-hotspot", "cold[0] b->a swap-return"},
			why:   []string{"to b as a count-swap", "rule all-yes", "with cold[0] b→a (0.00 threads)"},
		},
		{
			name: "chain: one cool copy of the target goes back to the hot node, another makes room elsewhere",
			build: func() (*cluster.Snapshot, []string) {
				// hot[0] (3.5) takes b from 6 to 9.5 threads, 2.3 over its goal. No swap fits: mover
				// (1.5) may not go to a. The chain sends mover to c and warm (1) back to a, which
				// stays within its goal (69 %); b ends at 87.5 %.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{1}, []string{"b"}).
					index("mover", 1<<30, []float64{1.5}, []string{"b"}).
					index("filler", 1<<30, []float64{3.5, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				exclude(f, "b,c", "small")
				exclude(f, "a", "mover", "filler")
				return f.snap(), []string{"a"}
			},
			moves: []string{"mover[0] b->c make-room", "hot[0] a->b write-hotspot", "warm[0] b->a swap-return"},
			why:   []string{"as a chain", "b at 88%", "with mover[0] b→c (1.50 threads), warm[0] b→a (1.00 threads)"},
		},
		{
			name: "chain: never more than three room-making moves",
			build: func() (*cluster.Snapshot, []string) {
				// hot[0] needs 2.3 threads of room on b; b's copies that may leave carry 0.5 each
				// and may only go to c, which has nothing colder to send back: five would be needed.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("l1", 1<<30, []float64{0.5}, []string{"b"}).
					index("l2", 1<<30, []float64{0.5}, []string{"b"}).
					index("l3", 1<<30, []float64{0.5}, []string{"b"}).
					index("l4", 1<<30, []float64{0.5}, []string{"b"}).
					index("l5", 1<<30, []float64{0.5}, []string{"b"}).
					index("filler", 1<<30, []float64{3.5, 4.5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				exclude(f, "b,c", "small")
				exclude(f, "a", "l1", "l2", "l3", "l4", "l5", "filler")
				return f.snap(), []string{"a"}
			},
			notes:      []string{NoteUnrelieved},
			unrelieved: []string{"a"},
		},
		{
			name: "chain: a cool copy moves off the target alone when its new node has nothing colder to send",
			build: func() (*cluster.Snapshot, []string) {
				// As in the short chain of TestPlanCycle but c holds nothing colder than warm[0]:
				// warm[0] goes to c (87.5 %) with no copy coming back, then hot[0] fits on b.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
					index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
					index("warm", 1<<30, []float64{2}, []string{"b"}).
					index("filler", 1<<30, []float64{2.5, 5}, []string{"b"}, []string{"c"}).
					queueing("a", 6)
				exclude(f, "a", "warm", "filler")
				return f.snap(), []string{"a"}
			},
			moves: []string{"warm[0] b->c make-room", "hot[0] a->b write-hotspot"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRelief(t, tc) })
	}
}

// better orders relief options: reaching the goal first, then the gentler admission rule, then the
// larger drop in excess, then the preferred target.
func TestReliefOptionOrder(t *testing.T) {
	opt := func(srcAfter float64, rule string, drop float64, rank int) *option {
		return &option{group: []Move{{Phase: PhaseWriteHotspot}}, judged: []Judged{{Admission: Admission{Rule: rule}}},
			srcAfter: srcAfter, drop: drop, rank: rank}
	}
	const goal = 0.9
	cases := []struct {
		name string
		a, b *option
	}{
		{"reaching the goal beats a gentler rule", opt(0.9, RuleImprovesExcess, 0.1, 3), opt(0.95, RuleAllYes, 0.2, 0)},
		{"every decider's yes beats fitting after the group", opt(0.7, RuleAllYes, 0.1, 3), opt(0.6, RuleFitsAfterGroup, 0.2, 0)},
		{"fitting after the group beats the improvement rule", opt(0.7, RuleFitsAfterGroup, 0.1, 3), opt(0.6, RuleImprovesExcess, 0.2, 0)},
		{"the larger drop in excess wins under the same rule", opt(0.8, RuleImprovesExcess, 0.2, 3), opt(0.7, RuleImprovesExcess, 0.1, 0)},
		{"the preferred target breaks a tie", opt(0.8, RuleAllYes, 0.1, 0), opt(0.8, RuleAllYes, 0.1, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !better(tc.a, tc.b, goal) {
				t.Errorf("better(a, b): got false, want true")
			}
			if better(tc.b, tc.a, goal) {
				t.Errorf("better(b, a): got true, want false")
			}
		})
	}
}

// The notes a hot node gets instead of a move, and the scale-up signal only a proof may raise.
func TestReliefNotes(t *testing.T) {
	cases := []reliefCase{
		{
			name: "relief in flight short of the goal with no further plan: a note, no scale-up",
			build: func() (*cluster.Snapshot, []string) {
				// a carries 10.5 threads; gone[0] (2) relocating to b leaves it at 106 %. x may go
				// nowhere else: without the relocation this would be an exhausted search.
				f := newFixture("a", "b", "c").
					index("gone", 1<<30, []float64{2}, []string{"a"}).
					index("x", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				exclude(f, "b,c", "x")
				return relocatingShard(f.snap(), "gone", 0, "id-b"), []string{"a"}
			},
			notes:   []string{"relief-in-flight"},
			noteWhy: []string{"a: copies relocating off it leave it at 106% (goal 90%)"},
		},
		{
			name: "a hot node whose candidates' shards already move this cycle waits: deferred, no scale-up",
			build: func() (*cluster.Snapshot, []string) {
				// x[0]'s primary leaves a for c; b's only copy is its replica, which must wait.
				f := newFixture("a", "b", "c", "d").
					index("x", 1<<30, []float64{4}, []string{"a", "b"}).
					index("y", 1<<30, []float64{4}, []string{"a"}).
					queueing("a", 6).queueing("b", 5)
				return f.snap(), []string{"a", "b"}
			},
			moves:   []string{"x[0] a->c write-hotspot"},
			notes:   []string{"deferred"},
			noteWhy: []string{"b: no step fits among its other copies, and x[0] (4.00 WRITE threads) waits while another copy of its shard moves a→c this cycle"},
		},
		{
			name: "a hot node whose candidate's shard relocates elsewhere waits, and the note names that relocation",
			build: func() (*cluster.Snapshot, []string) {
				// x[0]'s replica relocates b→d (OpenSearch's balancer, or a move of an earlier
				// cycle); y may go nowhere else.
				f := newFixture("a", "b", "c", "d").
					index("x", 1<<30, []float64{4}, []string{"a", "b"}).
					index("y", 1<<30, []float64{4.5}, []string{"a"}).
					queueing("a", 6)
				exclude(f, "b,c,d", "y")
				s := f.snap()
				for i := range s.Copies {
					if c := &s.Copies[i]; c.Index == "x" && c.Node == "id-b" {
						c.State, c.RelocatingNode = cluster.StateRelocating, "id-d"
					}
				}
				return s, []string{"a"}
			},
			notes:   []string{"deferred"},
			noteWhy: []string{"a: no step fits among its other copies, and x[0] (4.00 WRITE threads) waits while another copy of its shard relocates b→d; never two copies of a shard in flight at once"},
		},
		{
			name: "the nodes with room have no incoming recovery slot free: throttled, named, no scale-up",
			build: func() (*cluster.Snapshot, []string) {
				// b and c each receive two copies already (node_concurrent_incoming_recoveries 2).
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("tob", 1<<20, []float64{0, 0}, []string{"c"}, []string{"c"}).
					index("toc", 1<<20, []float64{0, 0}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				return relocating(relocating(f.snap(), "tob", "id-b"), "toc", "id-c"), []string{"a"}
			},
			notes:   []string{"throttled"},
			noteWhy: []string{"a: no move, swap or chain fits the nodes with an incoming recovery slot free; b, c have none (node_concurrent_incoming_recoveries 2)"},
		},
		{
			name: "the one node with room has no incoming recovery slot free: throttled, named in the singular",
			build: func() (*cluster.Snapshot, []string) {
				// b receives two copies already; c is as busy as a and takes nothing.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("busy", 1<<30, []float64{7.5}, []string{"c"}).
					index("tob", 1<<20, []float64{0, 0}, []string{"c"}, []string{"c"}).
					queueing("a", 6)
				return relocating(f.snap(), "tob", "id-b"), []string{"a"}
			},
			notes:   []string{"throttled"},
			noteWhy: []string{"a: no move, swap or chain fits the nodes with an incoming recovery slot free; b has none (node_concurrent_incoming_recoveries 2)"},
		},
		{
			name: "no plan within the bounds: the note names the first candidate's blockers, the signal the search",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{3, 3, 3}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("fill", 1<<30, []float64{5}, []string{"b"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			notes:      []string{NoteUnrelieved},
			unrelieved: []string{"a"},
			// Three candidates, each judged against b and then admitted (refused) once.
			unrelievedEvals: 6,
			noteWhy:         []string{"its first candidate x[0] (3.00 WRITE threads): b NOT_PREFERRED (b WRITE utilization would be 100% with 3.00 threads more, over 90%)"},
		},
		{
			name: "a target every decider accepts but OpenSearch's balancer would undo: the note names the balancer",
			build: func() (*cluster.Snapshot, []string) {
				// A hot key in s[0] (hot-key-moves): a and b hold its copies, each beside another
				// copy of s and two of u, 8.28 threads on 8. s[3] leaving a for c, which every
				// decider accepts, leaves a with 1 copy of s (3 in all) and c with 3 (5 in all): s
				// spreads past OpenSearch's balancer threshold, and the only returns that keep it
				// within, copies of s, carry as much as s[3]. Every placement of these 16 copies
				// that the balancer's weights (0.45, 0.55, threshold 1) leave alone puts 8.28
				// threads or more on a node: no relief exists without the balancer undoing it.
				f := newFixture("a", "b", "c", "d").
					index("s", 8<<30, []float64{6.67, 1.11, 1.11, 1.11}, []string{"a", "b"}, []string{"b", "c"}, []string{"c", "d"}, []string{"d", "a"}).
					index("u", 2<<30, []float64{0.25, 0.25, 0.25, 0.25}, []string{"a", "b"}, []string{"c", "d"}, []string{"a", "c"}, []string{"b", "d"}).
					queueing("a", 6).queueing("b", 6)
				return f.snap(), []string{"a", "b"}
			},
			cfg:        func(c *Config) { c.BuiltinBalancer.Enabled = true },
			notes:      []string{NoteUnrelieved, NoteUnrelieved},
			unrelieved: []string{"a", "b"},
			noteWhy: []string{
				"its first candidate s[3] (1.11 WRITE threads): b NOT_PREFERRED (b is a write hotspot); c YES, but alone the move spreads s past OpenSearch's balancer threshold (2.00 over 1.00), and no return that keeps it within was found",
				"its first candidate s[1] (1.11 WRITE threads): a NOT_PREFERRED (a is a write hotspot); c NO (c already holds a copy of s[1]); d YES, but alone the move spreads s past OpenSearch's balancer threshold (2.00 over 1.00), and no return that keeps it within was found",
			},
		},
		{
			name: "every node in service hot: all-nodes-hot, with the nodes and counts",
			build: func() (*cluster.Snapshot, []string) {
				// c is drained: it is not a place to move load to. 12 of 14.4 threads: not over
				// capacity, so the weaker proof is named.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{3, 3, 3, 3}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}).
					queueing("a", 6).queueing("b", 5)
				return f.snap(), []string{"a", "b"}
			},
			cfg:        func(c *Config) { c.ExcludedNodes = []string{"c"} },
			bound:      BoundAllHot,
			scaleNodes: []string{"a", "b"}, value: 2, limit: 2,
		},
		{
			name: "over capacity counts only the nodes in service",
			build: func() (*cluster.Snapshot, []string) {
				// 14.8 threads on a and b; with c, 24 threads (90 %: 21.6) would hold it, but c is
				// drained: 14.8 over 14.4.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4, 3.6, 3.6, 3.6}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			cfg: func(c *Config) { c.ExcludedNodes = []string{"c"} },
			// The search found nothing for a, but the capacity proof, not the planner, explains it.
			notes:      []string{NoteUnrelieved},
			bound:      BoundCapacity,
			scaleNodes: []string{"a"}, value: 14.8, limit: 14.4,
		},
		{
			name: "a copy at exactly 90 % of the largest node it may go to is proof: unfixable, no move",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{7.2}, []string{"a"}).
					index("small", 1<<30, []float64{1}, []string{"a"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			notes:      []string{"unfixable-hotspot"},
			bound:      BoundCopy,
			scaleNodes: []string{"a"}, value: 7.2, limit: 7.2,
		},
		{
			name: "a copy served at 90 % while its node drains a backlog is no proof: part of what it served had queued before",
			build: func() (*cluster.Snapshot, []string) {
				// a served 8.2 threads, 0.8 of them from its backlog: big[0] arrived at 7.2 × 7.4/8.2
				// = 6.5, under 90 % of any node (7.2).
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{7.2}, []string{"a"}).
					index("small", 1<<30, []float64{1}, []string{"a"}).
					queueing("a", 6)
				f.node("a").Write.BacklogServed = 0.8
				return f.snap(), []string{"a"}
			},
			// No proof, so the planner takes what relief there is.
			moves: []string{"small[0] a->b write-hotspot"},
		},
		{
			name: "the copy proof counts only the nodes the copy's filters allow",
			build: func() (*cluster.Snapshot, []string) {
				// c has 16 threads, room for big[0] (7.5) at 47 %, but big may not go there: the
				// largest node it may go to has 8 (90 %: 7.2).
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{7.5}, []string{"a"}).
					index("small", 1<<30, []float64{1}, []string{"a"}).
					queueing("a", 6)
				f.node("c").Write.Threads = 16
				exclude(f, "c", "big")
				return f.snap(), []string{"a"}
			},
			notes:      []string{"unfixable-hotspot"},
			bound:      BoundCopy,
			scaleNodes: []string{"a"}, value: 7.5, limit: 7.2,
		},
		{
			name: "the copy proof counts only the nodes the cluster's filters allow",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{7.5}, []string{"a"}).
					index("small", 1<<30, []float64{1}, []string{"a"}).
					queueing("a", 6)
				f.node("c").Write.Threads = 16
				f.s.Settings.Filters.Exclude = map[string]string{"_name": "c"}
				return f.snap(), []string{"a"}
			},
			notes:      []string{"unfixable-hotspot"},
			bound:      BoundCopy,
			scaleNodes: []string{"a"}, value: 7.5, limit: 7.2,
		},
		{
			name: "the copy proof is no proof when a larger node may take the copy",
			build: func() (*cluster.Snapshot, []string) {
				// small at 8 GiB takes a off saturation, but not twice sooner than big (soonerStep).
				f := newFixture("a", "b", "c").
					index("big", 1<<30, []float64{7.5}, []string{"a"}).
					index("small", 8<<30, []float64{1}, []string{"a"}).
					queueing("a", 6)
				f.node("c").Write.Threads = 16
				return f.snap(), []string{"a"}
			},
			moves: []string{"big[0] a->c write-hotspot"},
		},
		{
			name: "the capacity proof outranks a copy proof",
			build: func() (*cluster.Snapshot, []string) {
				f := newFixture("a", "b").
					index("big", 1<<30, []float64{7.5}, []string{"a"}).
					index("small", 1<<30, []float64{1}, []string{"a"}).
					index("fill", 1<<30, []float64{6.5}, []string{"b"}).
					queueing("a", 6)
				return f.snap(), []string{"a"}
			},
			notes:      []string{"unfixable-hotspot"},
			bound:      BoundCapacity,
			scaleNodes: []string{"a"}, value: 15, limit: 14.4,
		},
		{
			name: "a copy proof is the signal; the node no step was found for is unrelieved",
			build: func() (*cluster.Snapshot, []string) {
				// a's big copy proves it; b (6 threads of small copies) finds no room on c or d.
				f := newFixture("a", "b", "c", "d").
					index("big", 1<<30, []float64{7.5}, []string{"a"}).
					index("x", 1<<30, []float64{2, 2, 2}, []string{"b"}, []string{"b"}, []string{"b"}).
					index("fill", 1<<30, []float64{6.5, 6.5}, []string{"c"}, []string{"d"}).
					queueing("a", 6).queueing("b", 5)
				f.node("b").Write.Threads = 6
				return f.snap(), []string{"a", "b"}
			},
			notes:      []string{"unfixable-hotspot", NoteUnrelieved},
			unrelieved: []string{"b"},
			bound:      BoundCopy,
			scaleNodes: []string{"a"}, value: 7.5, limit: 7.2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRelief(t, tc) })
	}
}

// relocatingShard marks the copies of index[shard] as relocating to the node with id to.
func relocatingShard(s *cluster.Snapshot, index string, shard int, to string) *cluster.Snapshot {
	for i := range s.Copies {
		if c := &s.Copies[i]; c.Index == index && c.Shard == shard {
			c.State, c.RelocatingNode = cluster.StateRelocating, to
		}
	}
	return s
}

// A group is issued as one: its moves share a swap group no other group has, and each carries its
// own reason and verdicts; the hot copy's reason lists the others.
func TestReliefGroupReasons(t *testing.T) {
	// a's relief is a swap with b; d's a lone move to c.
	s := swapAndLone()
	// A rebalance slot stays free for OpenSearch's balancer: the swap's return goes with it
	// (TestStagedReturns has it wait).
	s.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 3, Known: true}
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a", "d")}, cfg)
	want := []string{"hot[0] a->b write-hotspot", "warm[0] b->a swap-return", "h2[1] d->c write-hotspot"}
	if got := moveNames(plan); !slices.Equal(got, want) {
		t.Fatalf("moves: got %v want %v\nnotes %+v", got, want, plan.Notes)
	}
	hot, back, lone := plan.Moves[0], plan.Moves[1], plan.Moves[2]
	if hot.SwapGroup == 0 || back.SwapGroup != hot.SwapGroup {
		t.Errorf("swap groups: hot %d, return %d: want the same, not 0", hot.SwapGroup, back.SwapGroup)
	}
	if lone.SwapGroup != 0 {
		t.Errorf("a lone move: got swap group %d, want 0", lone.SwapGroup)
	}
	if got := len(Groups(plan.Moves)); got != 2 {
		t.Errorf("groups: got %d, want 2 (the swap, the lone move)", got)
	}
	for _, w := range []string{"a: estimated WRITE queue latency 6.0s ≥ 3.0s", "moving hot[0] (3.50 WRITE threads, tier 3", "to b as a swap",
		"a ends at 64% (goal 90%), b at 86%", "rule fits-after-group", "with warm[0] b→a (0.60 threads)"} {
		if !strings.Contains(hot.Reason, w) {
			t.Errorf("hot move reason %q lacks %q", hot.Reason, w)
		}
	}
	if w := "swap-return for hot[0] leaving a: rule swap-return: the swap lowers excess"; !strings.HasPrefix(back.Reason, w) {
		t.Errorf("return reason: got %q, want it to start %q", back.Reason, w)
	}
	for _, m := range plan.Moves {
		if len(m.Verdicts) == 0 {
			t.Errorf("%s[%d]: no verdicts", m.Index, m.Shard)
		}
		for _, vd := range m.Verdicts {
			if vd.Reason == "" {
				t.Errorf("%s[%d]: verdict of %s without its reason", m.Index, m.Shard, vd.Decider)
			}
		}
	}
}

// The relief search is bounded by counts, so the same snapshot always gives the same plan; the
// unrelieved hotspot carries the bounds and what was used of them, and no scale-up is signalled.
func TestReliefSearchBounds(t *testing.T) {
	cases := []struct {
		name       string
		nodes      int // in the cluster, the hot one included
		copies     int // of 0.2 threads each on the hot node, none of which may leave it
		candidates int
		evals      int
	}{
		{"at most 48 candidate copies are tried", 2, 60, searchCandidates, searchCandidates},
		// 89 other nodes: each candidate costs 89 evaluations, and 4096 end the search in the 47th.
		{"at most 4096 decider evaluations are spent", 90, 60, 47, searchEvaluations},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{"a"}
			for i := 1; i < tc.nodes; i++ {
				names = append(names, fmt.Sprintf("n%02d", i))
			}
			f := newFixture(names...)
			loads := make([]float64, tc.copies)
			placement := make([][]string, tc.copies)
			for i := range loads {
				loads[i], placement[i] = 0.2, []string{"a"}
			}
			f.index("pinned", 1<<20, loads, placement...).queueing("a", 6)
			f.s.Indices[0].Filters.Require = map[string]string{"_name": "a"}
			s := f.snap()
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = false
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a")}, cfg)
			if plan.ScaleUp != nil {
				t.Errorf("scale up: got %+v, want none: a search that found nothing proves nothing", plan.ScaleUp)
			}
			if len(plan.Unrelieved) != 1 {
				t.Fatalf("unrelieved: got %+v, want a with its search bounds", plan.Unrelieved)
			}
			u := plan.Unrelieved[0]
			want := SearchBounds{Evaluations: tc.evals, MaxEvaluations: searchEvaluations, MaxWeighings: searchWeighings, Candidates: tc.candidates,
				MaxCandidates: searchCandidates, MaxReturns: swapReturns, MaxChainDepth: chainDepth}
			if u.Search != want {
				t.Errorf("bounds: got %+v want %+v", u.Search, want)
			}
			if !strings.Contains(u.Reason, want.String()) {
				t.Errorf("reason %q lacks the bounds %q", u.Reason, want.String())
			}
		})
	}
}

// A relocation takes its files at the recovery rate, then the translog replay of what the copy was
// indexed meanwhile (EstimateRelocation). Of two copies that each relieve the hot node with every
// decider's yes, the one whose relocation ends first goes: without the replay, the smaller; with
// it, a cooler copy twice the size can land well before a hot one. A copy that only takes the node
// off saturation goes instead when its queue empties more than reliefSpeedup times sooner.
func TestReliefWeighsRelocationTime(t *testing.T) {
	// a is at 8.4 of 8 threads and must shed 1.2 to reach 90 %. burst[0] (3.5 threads, 2 GiB) and
	// bulk[0] (1.25 threads, 4 GiB) each do; the filler copies (0.9125, 4 GiB unless said) do not,
	// though each takes a to 94 %, off saturation.
	fillerSized := func(size int64) func() (*cluster.Snapshot, []string) {
		return func() (*cluster.Snapshot, []string) {
			f := newFixture("a", "b", "c").
				index("burst", 2<<30, []float64{3.5}, []string{"a"}).
				index("bulk", 4<<30, []float64{1.25}, []string{"a"}).
				index("filler", size, []float64{0.9125, 0.9125, 0.9125, 0.9125}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
				queueing("a", 6)
			return f.snap(), []string{"a"}
		}
	}
	build := fillerSized(4 << 30)
	cases := []reliefCase{
		{
			// 2 GiB at 40 MiB/s is 51 s of files, then 3.5 threads replayed at 0.23: 779 s, 13 min 50 s
			// in all; bulk[0]'s 4 GiB take 102 s, then 1.25 threads replayed: 557 s, 10 min 59 s.
			name:  "the replay makes the hot small copy slower than the cool big one",
			build: build,
			moves: []string{"bulk[0] a->b write-hotspot"},
			why: []string{"relocation est. 10m59s: files in 1m42s at 40 MiB/s shared by 1, then 9m17s replaying 1.25 WRITE threads of indexing at 0.23",
				"rule all-yes"},
		},
		{
			name: "a cluster recovering at 400 MiB/s: the same order, ten times sooner",
			build: func() (*cluster.Snapshot, []string) {
				s, hot := build()
				s.Settings.RecoveryBytesPerSecond = 400 << 20
				return s, hot
			},
			moves: []string{"bulk[0] a->b write-hotspot"},
			why:   []string{"relocation est. 1m6s: files in 10s at 400 MiB/s shared by 1, then 56s replaying 1.25 WRITE threads"},
		},
		{
			name:  "without the replay estimate the smaller copy goes",
			build: build,
			cfg:   func(c *Config) { c.TranslogReplaySpeed = 0 },
			moves: []string{"burst[0] a->b write-hotspot"},
			why:   []string{"relocation est. 51s: files in 51s at 40 MiB/s shared by 1; rule all-yes"},
		},
		{
			// filler[0] at 1 GiB: 26 s of files, then 0.91 threads replayed: 2 min 7 s, and 25 s
			// overhead; a's queue (6 s) then drains at the 6 % of its threads left: 1 min 34 s more.
			// bulk[0] lands in 11 min 25 s and its queue drains in 56 s: three times as long.
			name:  "a cool small copy takes the node off saturation over twice sooner than the cheapest that reaches the goal",
			build: fillerSized(1 << 30),
			moves: []string{"filler[0] a->b write-hotspot"},
			why: []string{"a ends at 94% (goal 90%)", "relocation est. 2m7s",
				"short of the goal, but it takes a off saturation and empties its queue in about 4m6s, over 2× sooner than bulk[0] (1.25 threads) to b as a move, which would reach the goal (its relocations land in about 11m25s, the queue empty in about 12m21s)"},
		},
	}
	// spreadAhead is a's loads before its queue forms, recovering at rate bytes a second.
	spreadAhead := func(rate int64) func() (*cluster.Snapshot, []string) {
		return func() (*cluster.Snapshot, []string) {
			f := newFixture("a", "b", "c", "d").
				index("burst", 2<<30, []float64{3.5}, []string{"a"}).
				index("bulk", 4<<30, []float64{1.25}, []string{"a"}).
				index("filler", 1<<30, []float64{0.9125}, []string{"a"}).
				index("rest", 32<<30, []float64{2.7375}, []string{"a"})
			for _, n := range []string{"b", "c", "d"} {
				f.index("base-"+n, 1<<30, []float64{2.5}, []string{n})
			}
			s := f.snap()
			s.Settings.RecoveryBytesPerSecond = rate
			return s, nil
		}
	}
	cases = append(cases, reliefCase{
		// The same loads before a's queue forms, with a's last three filler copies as one copy
		// of 32 GiB: a carries twice the cluster's share (b, c and d hold 2.1 threads each), so
		// it is spread ahead of the peak. filler[0] still lands over twice sooner than bulk[0],
		// but there is no queue to empty: a step short of the goal leaves a short at the peak.
		name:  "a node spread ahead of its peak takes what reaches the goal, not the quick step",
		build: spreadAhead(40 << 20),
		moves: []string{"bulk[0] a->b write-hotspot"},
		why:   []string{"skew: a:", "a ends at"},
	}, reliefCase{
		// The same cluster recovering at 6 MiB/s: bulk[0]'s 4 GiB take 11 minutes, and its replay
		// an hour more, past earlyHorizon: a would stay held through the peak it is spread ahead
		// of. filler[0] lands in about 17 minutes.
		name:  "a node spread ahead of its peak takes the quick step when what reaches the goal lands past the horizon",
		build: spreadAhead(6 << 20),
		moves: []string{"filler[0] a->b write-hotspot"},
		why:   []string{"skew: a:", "short of the goal"},
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := runRelief(t, tc)
			for _, m := range plan.Moves {
				if m.EstimatedSeconds <= 0 {
					t.Errorf("%s[%d]: no estimated duration", m.Index, m.Shard)
				}
			}
		})
	}
}

func TestEstimateRelocation(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name          string
		settings      cluster.Settings
		size          int64
		load          float64
		sharers       int
		files, replay float64
	}{
		{"an idle copy: its files alone", cluster.Settings{}, 4 << 30, 0, 1, 102.4, 0},
		{"a written copy replays w × files / speed", cluster.Settings{}, 4 << 30, 2, 1, 102.4, 890.4},
		{"two recoveries share the node's rate: twice the files, twice the replay", cluster.Settings{}, 4 << 30, 2, 2, 204.8, 1780.9},
		{"the cluster's own rate", cluster.Settings{RecoveryBytesPerSecond: 80 << 20}, 4 << 30, 2, 1, 51.2, 445.2},
		// The published relocation: 2.90 GB at 40 MB/s is 72 s of files and 861.5 s in all, so
		// replay/files ≈ 10.9 = w / 0.23 at about 2.5 threads.
		{"the published hot primary", cluster.Settings{RecoveryBytesPerSecond: 40e6}, 2.9e9, 2.503, 1, 72.5, 789},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := EstimateRelocation(tc.settings, cfg, tc.size, tc.load, tc.sharers)
			if math.Abs(e.FileSeconds-tc.files) > 0.5 || math.Abs(e.ReplaySeconds-tc.replay) > 0.5 {
				t.Errorf("got files %.1f s, replay %.1f s; want %.1f, %.1f", e.FileSeconds, e.ReplaySeconds, tc.files, tc.replay)
			}
		})
	}
}

func TestReliefQuicker(t *testing.T) {
	// burst[0] (3.5 threads, 8 GiB) reaches a's goal alone: 3 min 25 s of files, then 52 min
	// replaying 3.5 threads at 0.23. A cool copy (1 GiB) relocates in about a minute. rest[0]
	// (32 GiB) is slower still. cool copies relocate at most two at a time off a node
	// (node_concurrent_outgoing_recoveries).
	build := func(cool int, load, rest float64, size int64, coolOn ...string) func() (*cluster.Snapshot, []string) {
		return func() (*cluster.Snapshot, []string) {
			loads := make([]float64, cool)
			placement := make([][]string, cool)
			for i := range cool {
				loads[i], placement[i] = load, append([]string{"a"}, coolOn...)
			}
			f := newFixture("a", "b", "c", "d", "e").
				index("burst", 8<<30, []float64{3.5}, []string{"a"}).
				index("cool", size, loads, placement...).
				index("rest", 32<<30, []float64{rest}, []string{"a"}).
				queueing("a", 6)
			hot := []string{"a"}
			for _, n := range coolOn {
				f.index("more-"+n, 1<<30, []float64{2, 2, 2, 2}, []string{n}, []string{n}, []string{n}, []string{n}).queueing(n, 6)
				hot = append(hot, n)
			}
			return f.snap(), hot
		}
	}
	cases := []reliefCase{
		{
			// a at 8.4 of 8 threads: two cool copies of 0.25 take it to 99 %.
			name:  "two cool copies take a off saturation long before its hot copy reaches the goal",
			build: build(2, 0.25, 4.4, 1<<30),
			moves: []string{"cool[0] a->b write-hotspot", "cool[1] a->c write-hotspot"},
			why:   []string{"a ends at 99% (goal 90%)", "short of the goal, but it takes a off saturation", "than burst[0] (3.50 threads)"},
		},
		{
			// a at 9.2: two cool copies of 0.3 (as many as may leave it at once) take it to 107 %,
			// and four more, in turn, to 92 %.
			name:  "the first of quick steps that take a off saturation in turn",
			build: build(10, 0.3, 2.7, 1<<30),
			moves: []string{"cool[0] a->b write-hotspot", "cool[1] a->c write-hotspot"},
			why:   []string{"a ends at 108% (goal 90%)", "it is the first of quick steps that, with 4 more of the copies that relocate quickly"},
		},
		{
			// The same cool copies are on d, hot too: they are d's relief as well (never two
			// copies of a shard in flight), so a takes its own.
			name:  "quick copies of shards another hot node holds are left to it",
			build: build(2, 0.25, 4.4, 1<<30, "d"),
			moves: []string{"burst[0] a->b write-hotspot", "more-d[0] d->c write-hotspot"},
		},
		{
			// At 8 GiB a cool copy takes 7 min 30 s alone, the two together about 24 min with the
			// queue drained: still over twice sooner than burst[0]'s 56 min.
			name:  "slower cool copies still go",
			build: build(2, 0.25, 4.4, 8<<30),
			moves: []string{"cool[0] a->b write-hotspot", "cool[1] a->c write-hotspot"},
		},
	}
	// big[0] (1.2 threads, 8 GiB) is a's best alone, and b, c and d, at 75 %, take no more: it
	// leaves a at 94 %, short of the goal, in about 22 minutes. Five cool copies (0.3 threads,
	// 1 GiB) relocate in about a minute each, and in turn take a off saturation within 8 minutes
	// (segment-replication seed 59 of 200: node-0 at 110 % moved a primary for 39 minutes).
	shortOfGoal := func() (*cluster.Snapshot, []string) {
		loads := []float64{0.3, 0.3, 0.3, 0.3, 0.3}
		on := [][]string{{"a"}, {"a"}, {"a"}, {"a"}, {"a"}}
		f := newFixture("a", "b", "c", "d").
			index("big", 8<<30, []float64{1.2}, []string{"a"}).
			index("base", 32<<30, []float64{2, 2, 2}, []string{"a"}, []string{"a"}, []string{"a"}).
			index("cool", 1<<30, loads, on...).
			index("rest", 1<<30, []float64{6, 6, 6}, []string{"b"}, []string{"c"}, []string{"d"}).
			queueing("a", 6)
		return f.snap(), []string{"a"}
	}
	cases = append(cases, reliefCase{
		name:  "quick steps over a slow best that stops short of the goal",
		build: shortOfGoal,
		moves: []string{"cool[0] a->b write-hotspot", "cool[1] a->c write-hotspot"},
		why:   []string{"a ends at 101% (goal 90%)", "with 2 more of the copies that relocate quickly", "than big[0] (1.20 threads) to b as a move, which would leave it at 94%"},
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRelief(t, tc) })
	}
}

func TestReliefStepOverBundle(t *testing.T) {
	// a is at 8.6 of 8 threads: it must shed 1.4 to reach 90 %, and no copy carries that alone,
	// so copies go together (a bundle). mid[0] (1.0 thread, 1 GiB) takes a to 95 % alone, and its
	// queue empties in about 4 min 45 s; the bundle that reaches the goal adds a big copy (1.086
	// threads, 2 GiB), and the two share a's recovery rate: about 11 min. (Here quicker finds the
	// step, as mid[0] relocates faster than the big copies; where the step's copy is the slowest
	// of the quick ones, as random seed 142's, the bundle is weighed against the step directly.)
	build := func() (*cluster.Snapshot, []string) {
		big := []float64{1.086, 1.086, 1.086, 1.086, 1.086, 1.086, 1.086}
		on := [][]string{{"a"}, {"a"}, {"a"}, {"a"}, {"a"}, {"a"}, {"a"}}
		f := newFixture("a", "b", "c", "d").
			index("mid", 1<<30, []float64{1.0}, []string{"a"}).
			index("big", 2<<30, big, on...).
			queueing("a", 6)
		return f.snap(), []string{"a"}
	}
	runRelief(t, reliefCase{
		name:  "a single step that takes the node off saturation over twice sooner than the bundle",
		build: build,
		moves: []string{"mid[0] a->b write-hotspot"},
		why:   []string{"a ends at 95% (goal 90%)", "short of the goal, but it takes a off saturation", "as a bundle, which would reach the goal"},
	})
}

// TestReliefWaitsForDrain: a hot node whose WRITE queue shrinks (by under a tenth of its tasks, so
// not draining) is asked for less than its threads (Hotspot.DrainingDemand); when its backlog
// drains before the best plan's relocation could land, the plan would only cost bytes, and the
// node waits (random seed 165 of 200). A backlog that drains slowly still gets the move.
func TestReliefWaitsForDrain(t *testing.T) {
	cases := []struct {
		name      string
		prevLat   float64 // the queue's latency 30 s before, now 20 s
		wantMoves int
		why       string
	}{
		// 10 s of latency drained in 30 s: asked for 8 − 8/3 threads (67 %); the 20 s left drain in
		// a minute, and a 2-thread copy's relocation takes minutes (its files, then its replay).
		{"the backlog drains in a minute: no move", 30, 0, "drains in about 1m0s with no move, before the best plan found"},
		// 1 s in 30 s: asked for 97 % of its threads; the backlog takes 10 minutes to drain.
		{"the backlog drains in ten minutes: the move goes", 21, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c").
				index("x", 1<<30, []float64{2, 2, 2, 2}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
				queueing("a", 20)
			s := f.snap()
			cfg := DefaultConfig()
			cfg.BuiltinBalancer.Enabled = false
			mem := Memory{Streaks: map[string]Streak{"id-a": {Count: 3, Since: s.At.Add(-2 * time.Minute), At: s.At.Add(-30 * time.Second), Queue: 520, Latency: tc.prevLat}}}
			plan, _ := PlanCycle(s, mem, cfg)
			if len(plan.Hotspots) == 0 || !plan.Hotspots[0].Hot {
				t.Fatalf("a is not hot: %+v", plan.Hotspots)
			}
			var moves []Move
			for _, m := range plan.Moves {
				if m.Phase == PhaseWriteHotspot {
					moves = append(moves, m)
				}
			}
			if len(moves) != tc.wantMoves {
				t.Fatalf("moves: got %v want %d\nnotes: %+v", moveNames(plan), tc.wantMoves, plan.Notes)
			}
			if tc.why == "" {
				return
			}
			for _, n := range plan.Notes {
				if n.Kind == NoteReliefInFlight && strings.Contains(n.Reason, tc.why) {
					return
				}
			}
			t.Errorf("no note says %q: %+v", tc.why, plan.Notes)
		})
	}
}

// The move function refuses a group through a node the cycle's earlier groups have used up
// (safety.max_moves_per_node, a swap counting once): the planner plans the next hot node's relief
// through other nodes, or has it wait, rather than plan a group that would be refused whole.
func TestReliefWithinNodeBudget(t *testing.T) {
	cases := []struct {
		name    string
		perNode int
		idle    bool // d is as cool as c: the second hot node has another target
		moves   []string
		notes   []string
	}{
		{"no node budget: both hot nodes' moves go to the coolest node", 0, false,
			[]string{"x[0] a->c write-hotspot", "y[0] b->c write-hotspot"}, nil},
		{"one group per node: the second hot node's move goes to the next target", 1, true,
			[]string{"x[0] a->c write-hotspot", "y[0] b->d write-hotspot"}, nil},
		{"one group per node and no other target: the second hot node waits", 1, false,
			[]string{"x[0] a->c write-hotspot"}, []string{NoteThrottled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// a and b are hot at 9 threads of 8, each with one copy of 2 threads to shed and
			// filler; c is idle and d carries 6 threads unless idle, so that only c takes 2.
			dLoad := 6.0
			if tc.idle {
				dLoad = 0.5
			}
			f := newFixture("a", "b", "c", "d").
				index("x", 1<<30, []float64{2}, []string{"a"}).
				index("y", 1<<30, []float64{2}, []string{"b"}).
				index("fa", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
				index("fb", 1<<30, []float64{3.5, 3.5}, []string{"b"}, []string{"b"}).
				index("fd", 1<<30, []float64{dLoad}, []string{"d"}).
				queueing("a", 6).queueing("b", 5)
			s := f.snap()
			cfg := DefaultConfig().WithMoveBudget(0, tc.perNode)
			cfg.BuiltinBalancer.Enabled = false
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a", "b")}, cfg)
			if got := moveNames(plan); !slices.Equal(got, tc.moves) {
				t.Errorf("moves: got %v want %v\nnotes: %+v", got, tc.moves, plan.Notes)
			}
			var kinds []string
			for _, n := range plan.Notes {
				kinds = append(kinds, n.Kind)
			}
			if !slices.Equal(kinds, tc.notes) {
				t.Errorf("notes: got %+v want kinds %v", plan.Notes, tc.notes)
			}
		})
	}
}

// The relief search weighs at most searchWeighings groups against OpenSearch's balancer per hot
// node, past the evaluation that reaches the bound (one group and a target's swap returns): at 750
// nodes a search that found nothing weighed about 26,500, and 20 hot nodes took 46 s to plan. On 150
// nodes and 20,000 copies the second hot node's search reaches the bound with 638 of its 4,096
// decider evaluations.
func TestReliefSearchWeighingsBound(t *testing.T) {
	s := benchSnapshot(benchShape{nodes: 150, indices: 3000, copies: 20000, copyLoad: 4.0 * 150 / 20000}, 3)
	cfg := DefaultConfig()
	hs, st := DetectHotspots(s, streaks(s, s.Nodes[0].Name, s.Nodes[1].Name, s.Nodes[2].Name), cfg)
	_, _, _, pl := planOn(s, Memory{}, cfg, false, hs, st, nil, nil, "")
	if len(pl.searched) == 0 {
		t.Fatal("no relief search ran")
	}
	reached := false
	for i, b := range pl.searched {
		if b.MaxWeighings != searchWeighings {
			t.Errorf("search %d: bound %d, want %d", i, b.MaxWeighings, searchWeighings)
		}
		if b.Weighings > b.MaxWeighings+1+roomCandidates {
			t.Errorf("search %d: %s, past the bound by more than one evaluation's groups", i, b)
		}
		reached = reached || b.Weighings >= b.MaxWeighings
	}
	if !reached {
		t.Errorf("no search reached the bound of %d weighings: %+v", searchWeighings, pl.searched)
	}
}
