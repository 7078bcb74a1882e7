package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// swapAndLone: a's relief is a swap of hot[0] (3.5 threads) with warm[0] from b, d's a lone move
// of h2[1] to c; the two relocations fill cluster_concurrent_rebalance (2) past the hot copy's
// file phase, so the swap's return waits for it.
func swapAndLone() *cluster.Snapshot {
	f := newFixture("a", "b", "c", "d").
		index("hot", 1<<30, []float64{3.5, 3.5}, []string{"a"}, []string{"a"}).
		// small's copies take a off saturation but not to its goal; at 8 GiB they are not twice
		// sooner than the swap (soonerStep).
		index("small", 8<<30, []float64{0.5, 0.5}, []string{"a"}, []string{"a"}).
		index("warm", 1<<30, []float64{0.6}, []string{"b"}).
		index("filler", 1<<30, []float64{3.4, 4.5}, []string{"b"}, []string{"c"}).
		index("h2", 1<<30, []float64{4, 2, 2}, []string{"d"}, []string{"d"}, []string{"d"}).
		queueing("a", 6).queueing("d", 5)
	exclude(f, "c", "hot")
	return f.snap()
}

// later is s a while on, with the copies named (index, shard, from, to) relocating.
func later(s *cluster.Snapshot, after time.Duration, relocating ...[4]string) *cluster.Snapshot {
	n := *s
	n.At = s.At.Add(after)
	n.Copies = slices.Clone(s.Copies)
	for _, r := range relocating {
		for i := range n.Copies {
			c := &n.Copies[i]
			if c.Index == r[0] && c.Node == "id-"+r[2] && r[1] == string(rune('0'+c.Shard)) {
				c.State, c.RelocatingNode = cluster.StateRelocating, "id-"+r[3]
			}
		}
	}
	return &n
}

// TestStagedReturns: a swap's return waits until its hot copy's files are copied when the plan's
// relocations fill cluster_concurrent_rebalance until then; the hot move carries it (judged with
// it), the memory keeps it, the next plans count it and issue it once due as a staged return the
// move function's in-flight hold lets through; it is dropped when its hot move no longer
// relocates. With a rebalance slot free, or for a chain, the return goes with its hot copy.
func TestStagedReturns(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	s := swapAndLone()
	plan, mem := PlanCycle(s, Memory{Streaks: streaks(s, "a", "d")}, cfg)
	if got, want := moveNames(plan), []string{"hot[0] a->b write-hotspot", "h2[1] d->c write-hotspot"}; !slices.Equal(got, want) {
		t.Fatalf("moves: got %v want %v\nnotes %+v", got, want, plan.Notes)
	}
	hot := plan.Moves[0]
	if len(hot.StagedReturns) != 1 || hot.StagedReturns[0].Key() != "warm/0/id-b/id-a" || hot.SwapGroup != 0 {
		t.Fatalf("hot move: staged returns %+v, swap group %d: want warm[0] b→a alone and no group", hot.StagedReturns, hot.SwapGroup)
	}
	if !strings.Contains(hot.Reason, "its return waits until the hot copy's files are copied (est. 26s") {
		t.Errorf("hot move reason lacks the staged return: %s", hot.Reason)
	}
	// Timed without its return sharing the hot copy's recovery rate: the reason, the estimate
	// and the file phase its projection keeps (which the replay speed is fitted against) say so.
	alone := EstimateRelocation(s.Settings, cfg, hot.SizeBytes, hot.WriteLoad, 1)
	shared := EstimateRelocation(s.Settings, cfg, hot.SizeBytes, hot.WriteLoad, 2)
	if hot.EstimatedSeconds != alone.Seconds() || !strings.Contains(hot.Reason, alone.String()+";") || strings.Contains(hot.Reason, shared.String()) {
		t.Errorf("hot move: estimated %v s, want %v (%s, not %s); reason %s", hot.EstimatedSeconds, alone.Seconds(), alone, shared, hot.Reason)
	}
	for _, pr := range mem.Projections {
		for _, m := range pr.Moves {
			if m.Index == "hot" && m.FileSeconds != alone.FileSeconds {
				t.Errorf("projection of hot[0]: file phase %v s, want %v", m.FileSeconds, alone.FileSeconds)
			}
		}
	}
	if got := WithStaged([]Move{hot}); len(got) != 2 || got[1].Key() != "warm/0/id-b/id-a" {
		t.Errorf("WithStaged: got %v, want the hot move then its return", got)
	}
	if len(mem.Staged) != 1 || mem.Staged[0].For != (Moved{Index: "hot", Shard: 0, From: "id-a", To: "id-b"}) || !mem.Staged[0].Due.Equal(s.At.Add(25600*time.Millisecond)) {
		t.Fatalf("memory: got %+v, want warm[0]'s return for hot[0] a→b due 25.6 s on", mem.Staged)
	}

	under := [][4]string{{"hot", "0", "a", "b"}, {"h2", "1", "d", "c"}}
	cases := []struct {
		name     string
		snap     *cluster.Snapshot
		issued   bool
		kept     bool
		noteHas  string
		reasonIn string
		// own are shardwise's moves in flight besides the plan's (Config.WithOwnInFlight).
		own []Move
	}{
		{"before its due time it waits, counted", later(s, 20*time.Second, under...), false, true, "the return of hot[0], waits until 00:00:25 so as not to share its recovery rate", "", nil},
		{"once due it goes as a staged return", later(s, 30*time.Second, under...), true, true, "", "staged return for hot[0] a→b: its due time has come", nil},
		{"its hot move never ran: dropped", later(s, 30*time.Second, under[1]), false, false, "hot[0] no longer relocates a→b nor has landed", "", nil},
		{
			// The move function would hold it back (own_move_in_flight_per_node): it waits, counted.
			"once due, with another of shardwise's moves in flight on its node, it waits", later(s, 30*time.Second, append(under, [4]string{"filler", "0", "b", "c"})...), false, true,
			"the return of hot[0], is due and waits: b has another of shardwise's moves still relocating (filler[0] b→c)", "",
			[]Move{{Index: "hot", Shard: 0, From: "id-a", To: "id-b"}, {Index: "filler", Shard: 0, From: "id-b", To: "id-c"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfg
			if tc.own != nil {
				cfg = cfg.WithOwnInFlight(tc.own)
			}
			next, nm := PlanCycle(tc.snap, mem, cfg)
			var ret *Move
			for i, m := range next.Moves {
				if m.Key() == "warm/0/id-b/id-a" {
					ret = &next.Moves[i]
				}
			}
			if (ret != nil) != tc.issued {
				t.Fatalf("return issued %v, want %v; moves %v notes %+v", ret != nil, tc.issued, moveNames(next), next.Notes)
			}
			if ret != nil {
				if ret.Phase != PhaseStagedReturn || ret.Completes == nil || *ret.Completes != mem.Staged[0].For || !strings.HasPrefix(ret.Reason, tc.reasonIn) {
					t.Errorf("issued return: phase %s, completes %+v, reason %q", ret.Phase, ret.Completes, ret.Reason)
				}
			}
			// Dropped, the same swap may be planned again, with a return staged anew.
			kept := slices.ContainsFunc(nm.Staged, func(st StagedReturn) bool { return st.At.Equal(s.At) })
			if kept != tc.kept {
				t.Errorf("kept in memory: got %+v, want kept %v", nm.Staged, tc.kept)
			}
			if tc.noteHas != "" && !slices.ContainsFunc(next.Notes, func(n Note) bool { return n.Kind == NoteStaged && strings.Contains(n.Reason, tc.noteHas) }) {
				t.Errorf("no %s note with %q: %+v", NoteStaged, tc.noteHas, next.Notes)
			}
		})
	}

	t.Run("a rebalance slot free: the return goes with its hot copy", func(t *testing.T) {
		free := swapAndLone()
		free.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 3, Known: true}
		plan, mem := PlanCycle(free, Memory{Streaks: streaks(free, "a", "d")}, cfg)
		if got := moveNames(plan); !slices.Contains(got, "warm[0] b->a swap-return") || len(mem.Staged) != 0 {
			t.Errorf("moves %v, staged %+v: want the return in the plan, none staged", got, mem.Staged)
		}
	})
}

// TestStagedReturnAdmitted: the move function's re-check admits a staged return onto a node still
// hot in the stats (the swap was judged whole when planned); a NO still refuses it.
func TestStagedReturnAdmitted(t *testing.T) {
	hot := Verdict{Decider: DeciderWriteLoad, Decision: NotPreferred}
	cases := []struct {
		name     string
		verdicts []Verdict
		want     bool
	}{
		{"the write-load decider's NOT_PREFERRED is weighed", []Verdict{hot}, true},
		{"a NO refuses", []Verdict{hot, {Decider: "same_shard", Decision: No}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Admit(PhaseStagedReturn, tc.verdicts, Projection{TargetBefore: 0.6, TargetAfter: 0.7, TargetGoal: 0.9})
			if a.Allowed != tc.want || tc.want && a.Rule != RuleStagedReturn {
				t.Errorf("got %v %s (%s), want %v", a.Allowed, a.Rule, a.Why(), tc.want)
			}
		})
	}
}

// TestStagedReturnTimedToLand: when the plan's relocations hold the rebalance slots long enough,
// the return waits until it would land a margin before its hot copy, not only for the hot copy's
// files; when they do not, until the files are copied.
func TestStagedReturnTimedToLand(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	cases := []struct {
		name   string
		h2Size int64
		wait   time.Duration
		reason string
	}{
		{"d's move outlasts the wait: the return lands a margin before the hot copy", 2 << 30, 438 * time.Second, "its return waits 7m18s, to land before the hot copy does (est. 13m50s; its files in 51s at 40 MiB/s shared by 1)"},
		{"d's move lands sooner: the return waits for the hot copy's files only", 1 << 30, 51200 * time.Millisecond, "its return waits until the hot copy's files are copied (est. 51s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := swapAndLone()
			for i := range s.Copies {
				switch s.Copies[i].Index {
				case "hot":
					s.Copies[i].SizeBytes = 2 << 30
				case "h2":
					s.Copies[i].SizeBytes = tc.h2Size
				case "small":
					s.Copies[i].SizeBytes = 32 << 30 // no quicker step than the swap
				}
			}
			plan, mem := PlanCycle(s, Memory{Streaks: streaks(s, "a", "d")}, cfg)
			if len(mem.Staged) != 1 {
				t.Fatalf("staged: got %+v; moves %v notes %+v", mem.Staged, moveNames(plan), plan.Notes)
			}
			if got := mem.Staged[0].Due.Sub(s.At); got.Round(time.Second) != tc.wait.Round(time.Second) {
				t.Errorf("due after %v, want %v", got, tc.wait)
			}
			if !strings.Contains(plan.Moves[0].Reason, tc.reason) {
				t.Errorf("hot move reason lacks %q: %s", tc.reason, plan.Moves[0].Reason)
			}
		})
	}
}

// TestStagedBundleLeftWhole: a relief group that moves several copies off the hot node (a bundle)
// keeps its return with it and all its moves in one group, so the budgets and the throttle let it
// go whole or not at all; the same group with one hot move stages its return.
func TestStagedBundleLeftWhole(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	s := swapAndLone()
	plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a", "d")}, cfg)
	if len(plan.Moves) != 2 || len(plan.Moves[0].StagedReturns) != 1 {
		t.Fatalf("fixture: want hot[0] a→b with its return staged, and h2[1] d→c; got %v", moveNames(plan))
	}
	hot, ret, lone := plan.Moves[0], plan.Moves[0].StagedReturns[0], plan.Moves[1]
	hot.StagedReturns = nil
	const group = 7
	hot.SwapGroup, ret.SwapGroup = group, group
	second := hot
	second.Index, second.Shard, second.To, second.ToName = "small", 0, "id-c", "c"
	cases := []struct {
		name   string
		moves  []Move
		staged bool
	}{
		{"one hot move: its return is staged", []Move{hot, ret, lone}, true},
		{"a bundle: left whole", []Move{second, hot, ret, lone}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &planner{v: NewView(s, cfg, nil)}
			p.plan.Moves = slices.Clone(tc.moves)
			p.stageReturns()
			if got := len(p.staged) > 0; got != tc.staged {
				t.Fatalf("staged %v, want %v (%d returns staged)", got, tc.staged, len(p.staged))
			}
			if tc.staged {
				return
			}
			if len(p.plan.Moves) != len(tc.moves) {
				t.Fatalf("moves %d, want all %d kept", len(p.plan.Moves), len(tc.moves))
			}
			for _, m := range p.plan.Moves[:len(tc.moves)-1] {
				if m.SwapGroup != group {
					t.Errorf("%s: swap group %d, want %d (issued together)", m.Key(), m.SwapGroup, group)
				}
			}
		})
	}
}

// TestMoveBudget: the planner plans no relief group that the cycle's move budget
// (Config.WithMoveBudget, safety.max_moves_per_cycle) would refuse after the groups planned before
// it; the node it leaves gets a throttled note, not an unrelieved one.
func TestMoveBudget(t *testing.T) {
	cases := []struct {
		name      string
		budget    int
		want      []string
		throttled bool
	}{
		{"no budget", 0, []string{"hot[0] a->b write-hotspot", "h2[1] d->c write-hotspot"}, false},
		{"room for both groups", 3, []string{"hot[0] a->b write-hotspot", "h2[1] d->c write-hotspot"}, false},
		// a's swap (hot[0] and its return) takes both: d's move waits for the next cycle, and with
		// one relocation planned the return is not staged.
		{"the first group fills it", 2, []string{"hot[0] a->b write-hotspot", "warm[0] b->a swap-return"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig().WithMoveBudget(tc.budget, 0)
			cfg.BuiltinBalancer.Enabled = false
			s := swapAndLone()
			plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a", "d")}, cfg)
			if got := moveNames(plan); !slices.Equal(got, tc.want) {
				t.Fatalf("moves: got %v want %v\nnotes %+v", got, tc.want, plan.Notes)
			}
			throttled := slices.ContainsFunc(plan.Notes, func(n Note) bool {
				return n.Kind == NoteThrottled && n.Node == "d" && strings.Contains(n.Reason, "max_moves_per_cycle 2")
			})
			if throttled != tc.throttled {
				t.Errorf("d throttled by the budget: got %v want %v; notes %+v", throttled, tc.throttled, plan.Notes)
			}
			if len(plan.Unrelieved) > 0 {
				t.Errorf("unrelieved %+v: a node the budget holds back is throttled, not unrelieved", plan.Unrelieved)
			}
		})
	}
}

// TestStagedReturnDroppedOnceSettled: a staged return is dropped as soon as OpenSearch's balancer has
// evened the counts on its own, before the return is due too. Counted as made meanwhile, it would
// count the balancer's step twice: the plan's groups would be weighed against a spread the cluster
// does not have. A primary-balance swap on os6481 stages events[4] c→a behind events[0] a→c.
func TestStagedReturnDroppedOnceSettled(t *testing.T) {
	s, mem, cfg := stagedPrimaryBalance(t, nil)
	cases := []struct {
		name       string
		relocating [][4]string
		kept       bool
		noteHas    string
	}{
		{"the balancer took no step: it waits, counted", [][4]string{{"events", "0", "a", "c"}}, true,
			"the return of events[0], waits until"},
		// events[5]'s replica is the balancer's own step c→a: a and c hold 4 copies each again.
		{"the balancer evened the counts itself: dropped", [][4]string{{"events", "0", "a", "c"}, {"events", "5", "c", "a"}}, false,
			"the staged return events[4] c→a is dropped: the counts are settled without it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, nm := PlanCycle(later(s, 30*time.Second, tc.relocating...), mem, cfg)
			if kept := len(nm.Staged) == 1; kept != tc.kept {
				t.Errorf("kept: got %+v, want kept %v", nm.Staged, tc.kept)
			}
			if !slices.ContainsFunc(next.Notes, func(n Note) bool { return n.Kind == NoteStaged && strings.Contains(n.Reason, tc.noteHas) }) {
				t.Errorf("no %s note with %q: %+v", NoteStaged, tc.noteHas, next.Notes)
			}
		})
	}
}

// TestStagedReturnWaitsForSlot: a staged return that is due waits, counted as made, while its
// target has no incoming recovery slot free (the move function would refuse it), and goes once one
// frees.
func TestStagedReturnWaitsForSlot(t *testing.T) {
	s, mem, cfg := stagedPrimaryBalance(t, func(s *cluster.Snapshot) {
		s.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: 1, NodeOutgoing: 2, ClusterRebalance: 2, Known: true}
	})
	cases := []struct {
		name       string
		relocating [][4]string
		issued     bool
		noteHas    string
	}{
		// events[5]'s copy on b relocates to a: a's one incoming slot is taken.
		{"a's incoming slot is taken: it waits, counted", [][4]string{{"events", "0", "a", "c"}, {"events", "5", "b", "a"}}, false,
			"is due and waits: a has no incoming recovery slot free (node_concurrent_incoming_recoveries 1)"},
		{"a slot is free: it goes", [][4]string{{"events", "0", "a", "c"}}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, nm := PlanCycle(later(s, 3*time.Minute, tc.relocating...), mem, cfg)
			issued := slices.ContainsFunc(next.Moves, func(m Move) bool { return m.Phase == PhaseStagedReturn && m.Index == "events" && m.Shard == 4 })
			if issued != tc.issued {
				t.Fatalf("issued: got %v, want %v; moves %v, staged %+v, notes %+v", issued, tc.issued, moveNames(next), nm.Staged, next.Notes)
			}
			if !tc.issued && (len(nm.Staged) != 1 || !slices.ContainsFunc(next.Notes, func(n Note) bool { return n.Kind == NoteStaged && strings.Contains(n.Reason, tc.noteHas) })) {
				t.Errorf("want it kept with a %s note saying %q: staged %+v, notes %+v", NoteStaged, tc.noteHas, nm.Staged, next.Notes)
			}
		})
	}
}

// stagedPrimaryBalance plans the first cycle of os6481 under segment replication with OpenSearch's
// balancer weighed, after edit (if any) changes the snapshot: a primary-balance swap moves
// events[0] a→c and stages its return events[4] c→a. It returns the snapshot, the memory that
// keeps the staged return, and the configuration, for the cycles after.
func stagedPrimaryBalance(t *testing.T, edit func(*cluster.Snapshot)) (*cluster.Snapshot, Memory, Config) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = true
	s := os6481(cluster.ReplicationSegment).snap()
	if edit != nil {
		edit(s)
	}
	plan, mem := PlanCycle(s, Memory{}, cfg)
	if got, want := moveNames(plan), []string{"events[0] a->c primary-balance"}; !slices.Equal(got, want) || len(mem.Staged) != 1 {
		t.Fatalf("moves %v, staged %+v: want %v with events[4] c→a staged", got, mem.Staged, want)
	}
	return s, mem, cfg
}
