package allocation

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
)

// planCase is one rule of PlanCycle outside the relief search: a cluster, the memory kept from the
// cycles before and the configuration, and the moves, notes and memory the rule promises.
type planCase struct {
	name  string
	build func() *cluster.Snapshot
	mem   func(s *cluster.Snapshot) Memory
	cfg   func(*Config) // edits the configuration (the built-in balancer is off unless turned on)
	moves []string
	notes []string // note kinds, in plan order
	why   []string // in the first move's reason, or else the first note's
	check func(t *testing.T, s *cluster.Snapshot, p Plan, next Memory)
}

func runPlanCase(t *testing.T, tc planCase) {
	t.Helper()
	s := tc.build()
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	if tc.cfg != nil {
		tc.cfg(&cfg)
	}
	mem := Memory{}
	if tc.mem != nil {
		mem = tc.mem(s)
	}
	plan, next := PlanCycle(s, mem, cfg)
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
	if len(tc.why) > 0 {
		reason := ""
		switch {
		case len(plan.Moves) > 0:
			reason = plan.Moves[0].Reason
		case len(plan.Notes) > 0:
			reason = plan.Notes[0].Reason
		}
		for _, w := range tc.why {
			if !strings.Contains(reason, w) {
				t.Errorf("reason %q lacks %q", reason, w)
			}
		}
	}
	if tc.check != nil {
		tc.check(t, s, plan, next)
	}
}

// Copies a decider says may not stay where they are move first, to the best home that is not a NO.
func TestPlanCannotRemain(t *testing.T) {
	cases := []planCase{
		{
			name: "a node over the heap limit sheds copies until it is back under",
			build: func() *cluster.Snapshot {
				// a's heap is at 94 %; each of its two copies costs half of it. One leaving brings it
				// to 47 %: the other stays.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{1, 1}, []string{"a"}, []string{"a"}).
					index("y", 1<<30, []float64{1}, []string{"b"})
				f.node("a").HeapUsedBytes = 7680 << 20
				return f.snap()
			},
			moves: []string{"x[0] a->c cannot-remain"},
			why:   []string{"may not remain on a: a heap is 94%, over 85% [heap]; c takes it"},
		},
		{
			name: "a home every decider accepts beats a less utilized one the write-load decider prefers not",
			build: func() *cluster.Snapshot {
				// c (2 threads, 25 %) would be at 125 % with x[0]; b (50 %) at 75 %.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{2}, []string{"a"}).
					index("y", 1<<30, []float64{4}, []string{"b"}).
					index("z", 1<<30, []float64{0.5}, []string{"c"})
				f.node("c").Write.Threads = 2
				return f.snap()
			},
			cfg:   func(c *Config) { c.ExcludedNodes = []string{"a"} },
			moves: []string{"x[0] a->b cannot-remain"},
			why:   []string{"[node_exclusion]; b takes it"},
		},
		{
			name: "no node can take it: a note with the decider's reason, no move",
			build: func() *cluster.Snapshot {
				// b already holds x[0]'s other copy.
				return newFixture("a", "b").index("x", 1<<30, []float64{1}, []string{"a", "b"}).snap()
			},
			cfg:   func(c *Config) { c.ExcludedNodes = []string{"a"} },
			notes: []string{"cannot-remain"},
			why:   []string{"x[0] may not remain on a (", "but no node can take it"},
		},
		{
			name: "a cluster-wide exclude filter moves the copies off the node it names",
			build: func() *cluster.Snapshot {
				f := newFixture("a", "b").index("x", 1<<30, []float64{1}, []string{"a"})
				f.s.Settings.Filters.Exclude = map[string]string{"_name": "a"}
				return f.snap()
			},
			moves: []string{"x[0] a->b cannot-remain"},
			why:   []string{"[filter]"},
		},
		{
			name: "an index's require filter moves its own copies only",
			build: func() *cluster.Snapshot {
				f := newFixture("a", "b").
					index("x", 1<<30, []float64{1}, []string{"a"}).
					index("y", 1<<30, []float64{1}, []string{"a"})
				f.s.Indices[0].Filters.Require = map[string]string{"_name": "b"}
				return f.snap()
			},
			moves: []string{"x[0] a->b cannot-remain"},
		},
		{
			name: "a copy not started stays: only started copies move",
			build: func() *cluster.Snapshot {
				s := newFixture("a", "b").index("x", 1<<30, []float64{1}, []string{"a"}).snap()
				s.Copies[0].State = cluster.StateInitializing
				return s
			},
			cfg: func(c *Config) { c.ExcludedNodes = []string{"a"} },
		},
		{
			name: "a hot drained node: its copies leave for cannot-remain two at a time and relief moves none of them",
			build: func() *cluster.Snapshot {
				// a is drained and hot: its copies leave it for cannot-remain, as many as its outgoing
				// recoveries allow (2); the third waits for a slot, and the relief that follows finds
				// the slots taken and waits too.
				f := newFixture("a", "b", "c").
					index("x", 1<<30, []float64{4, 2.5, 1.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				return f.snap()
			},
			mem:   func(s *cluster.Snapshot) Memory { return Memory{Streaks: streaks(s, "a")} },
			cfg:   func(c *Config) { c.ExcludedNodes = []string{"a"} },
			moves: []string{"x[0] a->b cannot-remain", "x[1] a->c cannot-remain"},
			notes: []string{"cannot-remain", "throttled"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// crowded is a cluster where nothing is hot and index crowd has 4 copies on a, over its limit of 3.
func crowded() *fixture {
	return newFixture("a", "b", "c").
		index("crowd", 1<<30, []float64{3, 2, 1, 0.5}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"})
}

// The planner's notes and the memory it keeps between cycles: index colocation's cooldown, relief
// in flight or settling, unassigned copies.
func TestPlanNotesAndMemory(t *testing.T) {
	lastAgo := func(d time.Duration) func(s *cluster.Snapshot) Memory {
		return func(s *cluster.Snapshot) Memory { return Memory{LastColocation: s.At.Add(-d)} }
	}
	lastColocation := func(want func(s *cluster.Snapshot) time.Time) func(t *testing.T, s *cluster.Snapshot, p Plan, next Memory) {
		return func(t *testing.T, s *cluster.Snapshot, _ Plan, next Memory) {
			if w := want(s); !next.LastColocation.Equal(w) {
				t.Errorf("last colocation: got %v want %v", next.LastColocation, w)
			}
		}
	}
	cases := []planCase{
		{
			// Spreading ahead off: a, carrying all of crowd, is skewed too, and the spread would
			// take the cycle the fix waits in.
			name:  "colocation waits ColocationEvery after the last fix",
			build: func() *cluster.Snapshot { return crowded().snap() },
			cfg:   func(c *Config) { c.SpreadAheadMean = 0 },
			mem:   lastAgo(9 * time.Minute),
			check: lastColocation(func(s *cluster.Snapshot) time.Time { return s.At.Add(-9 * time.Minute) }),
		},
		{
			name:  "ColocationEvery after the last fix: one fix, and the memory records when",
			build: func() *cluster.Snapshot { return crowded().snap() },
			mem:   lastAgo(10 * time.Minute),
			moves: []string{"crowd[3] a->b index-balance"},
			why:   []string{"a holds 4 copies of crowd, over the index-balance limit 3; b holds 0; the coolest such copy (0.50 WRITE threads) moves"},
			check: lastColocation(func(s *cluster.Snapshot) time.Time { return s.At }),
		},
		{
			name:  "the cooldown follows the configuration",
			build: func() *cluster.Snapshot { return crowded().snap() },
			mem:   lastAgo(2 * time.Minute),
			cfg:   func(c *Config) { c.ColocationEvery = duration.Duration(time.Minute) },
			moves: []string{"crowd[3] a->b index-balance"},
		},
		{
			name: "nothing to spread: the memory keeps the last fix's time",
			build: func() *cluster.Snapshot {
				return newFixture("a", "b").index("x", 1<<30, []float64{1, 1}, []string{"a"}, []string{"b"}).snap()
			},
			mem:   lastAgo(time.Hour),
			check: lastColocation(func(s *cluster.Snapshot) time.Time { return s.At.Add(-time.Hour) }),
		},
		{
			name: "a node meeting the hotspot criteria, even before it is hot, holds colocation back",
			build: func() *cluster.Snapshot {
				return crowded().index("busy", 1<<30, []float64{5}, []string{"b"}).queueing("b", 6).snap()
			},
			mem: lastAgo(time.Hour),
		},
		{
			name: "a move planned earlier in the cycle holds colocation back",
			build: func() *cluster.Snapshot {
				return crowded().index("x", 1<<30, []float64{1}, []string{"b"}).snap()
			},
			mem:   lastAgo(time.Hour),
			cfg:   func(c *Config) { c.ExcludedNodes = []string{"b"} },
			moves: []string{"x[0] b->c cannot-remain"},
		},
		{
			name: "a colocation fix OpenSearch's balancer would undo, with no copy to send back: a note, no move",
			build: func() *cluster.Snapshot {
				// crowd[3] to b would leave b with 4 copies against a's 3 and c's 3, spreading o
				// over the threshold; no copy on b is cool enough to come back.
				return newFixture("a", "b", "c").
					index("crowd", 1<<30, []float64{0, 0, 0, 0}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
					index("o", 1<<30, []float64{0, 0, 0, 0, 0, 0}, []string{"b"}, []string{"b"}, []string{"b"}, []string{"c"}, []string{"c"}, []string{"c"}).
					snap()
			},
			mem:   lastAgo(time.Hour),
			cfg:   func(c *Config) { c.BuiltinBalancer.Enabled = true },
			notes: []string{"builtin-conflict", "builtin-conflict", "builtin-conflict", "builtin-conflict"},
			why:   []string{"moving crowd[0] a→b would spread", "over OpenSearch's balance threshold 1.00, and no cooler copy on b can go back"},
			check: lastColocation(func(s *cluster.Snapshot) time.Time { return s.At.Add(-time.Hour) }),
		},
		{
			name: "unassigned copies are reported, not moved",
			build: func() *cluster.Snapshot {
				s := newFixture("a", "b").index("x", 1<<30, []float64{1, 1}, []string{"a", "b"}, []string{"a", "b"}).snap()
				s.Copies[1].State, s.Copies[1].Node = cluster.StateUnassigned, ""
				s.Copies[3].State, s.Copies[3].Node = cluster.StateUnassigned, ""
				return s
			},
			notes: []string{"unassigned"},
			why:   []string{"2 unassigned copies: OpenSearch's allocator assigns them"},
		},
		{
			name: "a node copies are relocating off is remembered with the snapshot's time",
			build: func() *cluster.Snapshot {
				f := newFixture("a", "b").index("x", 1<<30, []float64{1, 1}, []string{"a"}, []string{"a"})
				return relocatingShard(f.snap(), "x", 0, "id-b")
			},
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Relocating: map[string]time.Time{"id-b": s.At.Add(-time.Minute)}}
			},
			check: func(t *testing.T, s *cluster.Snapshot, _ Plan, next Memory) {
				want := map[string]time.Time{"id-a": s.At}
				if len(next.Relocating) != 1 || !next.Relocating["id-a"].Equal(s.At) {
					t.Errorf("relocating: got %v want %v (b's ended relocation is forgotten)", next.Relocating, want)
				}
			},
		},
		{
			name: "relief settling: a relocation off the hot node ended since the last sample",
			build: func() *cluster.Snapshot {
				return newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6).snap()
			},
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Streaks: streaks(s, "a"), Relocating: map[string]time.Time{"id-a": s.At.Add(-30 * time.Second)}}
			},
			notes: []string{"relief-settling"},
			why:   []string{"a: a relocation off it ended during the last interval; the next sample shows its effect"},
		},
		{
			name: "the same snapshot again is not a relocation that ended: relief goes on",
			build: func() *cluster.Snapshot {
				return newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6).snap()
			},
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Streaks: streaks(s, "a"), Relocating: map[string]time.Time{"id-a": s.At}}
			},
			moves: []string{"hot[2] a->b write-hotspot"},
		},
		{
			name: "relief in flight that reaches the goal: the note gives where the node lands",
			build: func() *cluster.Snapshot {
				// a carries 8.5 threads; hot[0] (3) relocating off leaves 5.5: 69 %.
				f := newFixture("a", "b", "c").
					index("hot", 1<<30, []float64{3, 3, 2.5}, []string{"a"}, []string{"a"}, []string{"a"}).
					queueing("a", 6)
				return relocatingShard(f.snap(), "hot", 0, "id-b")
			},
			mem:   func(s *cluster.Snapshot) Memory { return Memory{Streaks: streaks(s, "a")} },
			notes: []string{"relief-in-flight"},
			why:   []string{"a: copies relocating off it bring it to 69% (goal 90%)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

func TestMoveHelpers(t *testing.T) {
	m := Move{Index: "x", Shard: 2, From: "id-a", FromName: "a", To: "id-b", ToName: "b", WriteLoad: 1.5, Phase: PhaseWriteHotspot}
	r := m.Reverse()
	if r.From != "id-b" || r.FromName != "b" || r.To != "id-a" || r.ToName != "a" || r.WriteLoad != 1.5 || r.Index != "x" || r.Shard != 2 {
		t.Errorf("reverse: got %+v", r)
	}
	if m.Key() != "x/2/id-a/id-b" || r.Key() == m.Key() {
		t.Errorf("keys: got %q and %q, want x/2/id-a/id-b and another", m.Key(), r.Key())
	}
	moves := []Move{{Index: "p", SwapGroup: 1}, {Index: "q"}, {Index: "r", SwapGroup: 2}, {Index: "s", SwapGroup: 1}, {Index: "t", SwapGroup: 2}}
	var got []string
	for _, g := range Groups(moves) {
		var names []string
		for _, m := range g {
			names = append(names, m.Index)
		}
		got = append(got, strings.Join(names, "+"))
	}
	if want := []string{"p+s", "q", "r+t"}; !slices.Equal(got, want) {
		t.Errorf("groups: got %v want %v", got, want)
	}
}

// crowdedWithOthers is crowd's 4 copies on a (load each) and 3 copies of o on each of b and c (oLoad
// each): moving a crowd copy to b alone spreads o past OpenSearch's balance threshold.
func crowdedWithOthers(load, oLoad float64) *fixture {
	return newFixture("a", "b", "c").
		index("crowd", 1<<30, []float64{load, load, load, load}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}).
		index("o", 1<<30, []float64{oLoad, oLoad, oLoad, oLoad, oLoad, oLoad}, []string{"b"}, []string{"b"}, []string{"b"}, []string{"c"}, []string{"c"}, []string{"c"})
}

// A colocation fix OpenSearch's balancer would undo goes with a count-neutral return, chosen by the
// rules of swapReturn, or not at all.
func TestPlanColocationSwap(t *testing.T) {
	builtin := func(c *Config) { c.BuiltinBalancer.Enabled = true }
	conflict := []string{"builtin-conflict", "builtin-conflict", "builtin-conflict", "builtin-conflict"}
	hourAgo := func(s *cluster.Snapshot) Memory { return Memory{LastColocation: s.At.Add(-time.Hour)} }
	cases := []planCase{
		{
			name:  "a cooler copy of the target comes back in the same call",
			build: func() *cluster.Snapshot { return crowdedWithOthers(1, 0).snap() },
			mem:   hourAgo,
			cfg:   builtin,
			moves: []string{"crowd[0] a->b index-balance", "o[0] b->a swap-return"},
			why:   []string{"; swapped with o[0] so shard counts stay level (alone it would spread o to"},
			check: func(t *testing.T, _ *cluster.Snapshot, p Plan, _ Memory) {
				if g := p.Moves[0].SwapGroup; g == 0 || p.Moves[1].SwapGroup != g {
					t.Errorf("swap groups: got %d and %d, want the same, not 0", g, p.Moves[1].SwapGroup)
				}
				if w := "count-neutral return for crowd[0]: o[0] carries 0.00 WRITE threads (under half of 1.00), leaving a at 38%"; p.Moves[1].Reason != w {
					t.Errorf("return reason: got %q want %q", p.Moves[1].Reason, w)
				}
			},
		},
		{
			name:  "a copy carrying half the moved load is not cooler enough to come back",
			build: func() *cluster.Snapshot { return crowdedWithOthers(1, 0.5).snap() },
			mem:   hourAgo,
			cfg:   builtin,
			notes: conflict,
		},
		{
			name: "no return while the source has no incoming recovery slot free",
			build: func() *cluster.Snapshot {
				// Two copies of in are relocating from c to a: a runs its 2 incoming recoveries.
				s := crowdedWithOthers(1, 0).index("in", 1<<20, []float64{0, 0}, []string{"c"}, []string{"c"}).snap()
				return relocating(s, "in", "id-a")
			},
			mem:   hourAgo,
			cfg:   builtin,
			notes: conflict,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// A plan is written as JSON for events and the CLI: verdicts keep their decision and sentence.
func TestPlanJSON(t *testing.T) {
	s := newFixture("a", "b").index("x", 1<<30, []float64{1}, []string{"a"}).snap()
	cfg := drained("a")
	plan, _ := PlanCycle(s, Memory{}, cfg)
	if len(plan.Moves) != 1 || len(plan.Moves[0].Verdicts) == 0 {
		t.Fatalf("plan: got %+v, want one move with verdicts", plan.Moves)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("reading the plan back: %v", err)
	}
	for i, vd := range plan.Moves[0].Verdicts {
		got := back.Moves[0].Verdicts[i]
		if got.Decider != vd.Decider || got.Decision != vd.Decision || got.Reason != vd.Why() || got.Reason == "" {
			t.Errorf("verdict %d: got %+v want %s %s %q", i, got, vd.Decider, vd.Decision, vd.Why())
		}
	}
	for _, tc := range []struct {
		in   string
		want Decision
		err  string
	}{{`"YES"`, Yes, ""}, {`"NOT_PREFERRED"`, NotPreferred, ""}, {`"NO"`, No, ""}, {`"MAYBE"`, 0, `unknown decision "MAYBE"`}, {`1`, 0, "cannot unmarshal"}} {
		var d Decision
		err := json.Unmarshal([]byte(tc.in), &d)
		switch {
		case tc.err == "" && (err != nil || d != tc.want):
			t.Errorf("%s: got %v, %v want %v", tc.in, d, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got error %v, want one saying %q", tc.in, err, tc.err)
		}
	}
}

// A drained node with many copies: the drain is paced by the recovery limits, and the copies held back are told in one note per node and cause, naming the first few, not one note each.
func TestCannotRemainPacedAndSummed(t *testing.T) {
	cases := []struct {
		name      string
		limits    cluster.RecoveryLimits
		nodes     []string // nodes beside the full a
		wantMoves int
		wantNote  []string // in the one cannot-remain note
	}{
		{
			name: "OpenSearch's default limits: two leave, the rest wait", nodes: []string{"b", "c"},
			wantMoves: 2,
			wantNote:  []string{"10 copies may not remain on a (a is excluded", "wait for recovery slots", "node_concurrent_outgoing_recoveries 2", "x[2], x[3], x[4], x[5], x[6] and 5 more"},
		},
		{
			name: "one new node, incoming 1: one leaves", nodes: []string{"b"},
			limits:    cluster.RecoveryLimits{NodeIncoming: 1, NodeOutgoing: 4, ClusterRebalance: -1, Known: true},
			wantMoves: 1,
			wantNote:  []string{"11 copies may not remain on a (", "wait for recovery slots", "node_concurrent_incoming_recoveries 1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(append([]string{"a"}, tc.nodes...)...)
			var placement [][]string
			var loads []float64
			for range 12 {
				placement = append(placement, []string{"a"})
				loads = append(loads, 0.1)
			}
			f.index("x", 1<<30, loads, placement...)
			s := f.snap()
			s.Settings.Recoveries = tc.limits
			cfg := DefaultConfig()
			cfg.ExcludedNodes = []string{"a"}
			plan, _ := PlanCycle(s, Memory{}, cfg)
			if len(plan.Moves) != tc.wantMoves {
				t.Fatalf("%d moves, want %d: %+v", len(plan.Moves), tc.wantMoves, plan.Moves)
			}
			var held []Note
			for _, n := range plan.Notes {
				if n.Kind == NoteCannotRemain {
					held = append(held, n)
				}
			}
			if len(held) != 1 {
				t.Fatalf("%d cannot-remain notes, want one for the node: %+v", len(held), held)
			}
			for _, w := range tc.wantNote {
				if !strings.Contains(held[0].Reason, w) {
					t.Errorf("note %q lacks %q", held[0].Reason, w)
				}
			}
		})
	}
}
