package allocation

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestSegmentCopyLoads: under segment replication a primary bears its shard's indexing and a
// replica cluster.SegmentReplicaShare of it, in every figure the view projects: a copy without a
// rate, a relocation in flight, and the shard's load read back from a replica while the primary has
// no rate. Under document replication every copy bears the shard's load.
func TestSegmentCopyLoads(t *testing.T) {
	share := cluster.SegmentReplicaShare
	// x[0]: primary on a, replica on b; x[1]: primary on a, replica on c. 2 and 1 threads.
	base := func(segment bool) *fixture {
		f := newFixture("a", "b", "c")
		if segment {
			return f.segment("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
		}
		return f.index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
	}
	cases := []struct {
		name     string
		segment  bool
		edit     func(s *cluster.Snapshot)
		wantCopy []float64          // CopyLoad of each copy, in snapshot order
		wantNode map[string]float64 // node → projected WRITE threads
	}{
		{"document: every copy bears its shard's load", false, nil,
			[]float64{2, 2, 1, 1}, map[string]float64{"id-a": 3, "id-b": 2, "id-c": 1}},
		{"segment: the replicas bear their share", true, nil,
			[]float64{2, 2 * share, 1, share}, map[string]float64{"id-a": 3, "id-b": 2 * share, "id-c": share}},
		{"segment: a replica without a rate bears its share, not the primary's load", true, func(s *cluster.Snapshot) {
			s.Copies[1].LoadKnown, s.Copies[1].WriteLoad = false, 0
			s.Nodes[1].Write.Load = 0
		}, []float64{2, 2 * share, 1, share}, map[string]float64{"id-a": 3, "id-b": 2 * share, "id-c": share}},
		{"segment: a primary without a rate bears the load its replica shows", true, func(s *cluster.Snapshot) {
			s.Copies[0].LoadKnown, s.Copies[0].WriteLoad = false, 0
			s.Nodes[0].Write.Load = 1
		}, []float64{2, 2 * share, 1, share}, map[string]float64{"id-a": 3, "id-b": 2 * share, "id-c": share}},
		{"segment: a primary relocating takes its whole load to the target", true, func(s *cluster.Snapshot) {
			s.Copies[0].State, s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-c"
		}, []float64{2, 2 * share, 1, share}, map[string]float64{"id-a": 1, "id-b": 2 * share, "id-c": 2 + share}},
		{"segment: a replica relocating takes only its share", true, func(s *cluster.Snapshot) {
			s.Copies[1].State, s.Copies[1].RelocatingNode = cluster.StateRelocating, "id-c"
		}, []float64{2, 2 * share, 1, share}, map[string]float64{"id-a": 3, "id-b": 0, "id-c": 3 * share}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base(tc.segment).snap()
			if tc.edit != nil {
				tc.edit(s)
			}
			v := NewView(s, DefaultConfig(), nil)
			for i := range s.Copies {
				if got := v.CopyLoad(&s.Copies[i]); math.Abs(got-tc.wantCopy[i]) > 1e-9 {
					t.Errorf("CopyLoad(%s[%d] primary=%t): got %v want %v", s.Copies[i].Index, s.Copies[i].Shard, s.Copies[i].Primary, got, tc.wantCopy[i])
				}
			}
			for node, want := range tc.wantNode {
				if got := v.WriteLoad(node); math.Abs(got-want) > 1e-9 {
					t.Errorf("%s: got %v threads want %v", node, got, want)
				}
			}
		})
	}
}

// TestSegmentWriteLoadDecider: the write-load decider weighs a copy by what it bears. A node at 85 %
// takes a segment replica of a 2-thread shard (0.2 threads) but not its primary, nor a replica
// under document replication.
func TestSegmentWriteLoadDecider(t *testing.T) {
	cases := []struct {
		name    string
		segment bool
		primary bool
		want    Decision
	}{
		{"segment replica fits", true, false, Yes},
		{"segment primary does not", true, true, NotPreferred},
		{"document replica does not", false, false, NotPreferred},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c")
			if tc.segment {
				f.segment("x", 1<<30, []float64{2}, []string{"a", "b"})
			} else {
				f.index("x", 1<<30, []float64{2}, []string{"a", "b"})
			}
			f.index("filler", 1<<30, []float64{6.8}, []string{"c"})
			s := f.snap()
			v := NewView(s, DefaultConfig(), nil)
			var c *cluster.Copy
			for i := range s.Copies {
				if s.Copies[i].Index == "x" && s.Copies[i].Primary == tc.primary {
					c = &s.Copies[i]
				}
			}
			if got := (writeLoad{}).CanAllocate(v, c, s.NodeByRef("c")); got.Decision != tc.want {
				t.Errorf("got %s (%s), want %s", got.Decision, got.Why(), tc.want)
			}
		})
	}
}

// os6481 is the shape of OpenSearch issue 6481 at 6 threads of indexing: events' six primaries, four
// on a and two on b, one replica each, four copies per node, so OpenSearch's count balancer sees
// nothing to fix. Under segment replication a bears 4.0 WRITE threads (50 %), b 2.2, c 0.4 (5 %).
func os6481(replication string) *fixture {
	f := newFixture("a", "b", "c")
	placement := [][]string{{"a", "b"}, {"a", "b"}, {"a", "c"}, {"a", "c"}, {"b", "c"}, {"b", "c"}}
	loads := []float64{1, 1, 1, 1, 1, 1}
	if replication == cluster.ReplicationSegment {
		return f.segment("events", 4<<30, loads, placement...)
	}
	return f.index("events", 4<<30, loads, placement...)
}

// Primary balance (issue 25, item 5): when nothing is hot, a node that segment-replication primaries
// set apart sends one to a cooler node, alone or swapped count-neutrally with a replica.
func TestPlanPrimaryBalance(t *testing.T) {
	builtin := func(c *Config) { c.BuiltinBalancer.Enabled = true }
	cases := []planCase{
		{
			name:  "a primary-heavy node swaps a primary for another shard's replica, count-neutrally",
			build: func() *cluster.Snapshot { return os6481(cluster.ReplicationSegment).snap() },
			cfg:   builtin,
			moves: []string{"events[0] a->c primary-balance"},
			why: []string{"a is at 50% WRITE with 4.00 threads of primaries", "c at 6% with 0.00", "swapped count-neutrally with replica events[4] (0.13 threads)", "a at 39% and c at 17%", "gap 44 → 22 points", "rule all-yes",
				"its return waits until the hot copy's files are copied (est. 1m42s at 40 MiB/s shared by 1), so it does not share a's recovery rate with them: should OpenSearch's balancer even the counts first"},
			check: func(t *testing.T, _ *cluster.Snapshot, p Plan, next Memory) {
				// The return waits for the primary's files (staged.go): sent with it, it would
				// halve the primary's file rate on a, and so double its replay.
				if len(p.Moves) != 1 || len(p.Moves[0].StagedReturns) != 1 || len(next.Staged) != 1 {
					t.Fatalf("want the primary with its return staged, got %+v, staged %+v", p.Moves, next.Staged)
				}
				if r := next.Staged[0].Return; r.Index != "events" || r.Shard != 4 || r.FromName != "c" || r.ToName != "a" || next.Staged[0].Due.Sub(next.Staged[0].At) != 102*time.Second+400*time.Millisecond {
					t.Errorf("staged: got %s[%d] %s→%s due %v after, want events[4] c→a once the primary's files are copied", r.Index, r.Shard, r.FromName, r.ToName, next.Staged[0].Due.Sub(next.Staged[0].At))
				}
				// The group is kept for measure: a's load is to fall by the primary less the
				// replica's share, 4.0 → 3.1 threads.
				if len(next.Projections) != 1 {
					t.Fatalf("projections: got %+v, want the group's", next.Projections)
				}
				if pr := next.Projections[0]; pr.Kind != PlanPrimaryBalance || pr.NodeName != "a" || pr.TargetName != "c" ||
					math.Abs(pr.GroupRelief-(1-cluster.SegmentReplicaShare)) > 1e-9 || math.Abs(pr.SourceAfter-(4-1+cluster.SegmentReplicaShare)) > 1e-9 {
					t.Errorf("projection: got %+v, want primary-balance off a to c, relief 0.9, a after 3.1", pr)
				}
				// The projection each move carries is what the copy bears: the primary its shard's
				// load, the replica its share.
				if r := p.Moves[0].StagedReturns[0]; p.Moves[0].WriteLoad != 1 || !p.Moves[0].Primary || r.WriteLoad != cluster.SegmentReplicaShare || r.Primary {
					t.Errorf("move loads: got %v (primary %t) and %v (primary %t), want 1 and %v", p.Moves[0].WriteLoad, p.Moves[0].Primary,
						r.WriteLoad, r.Primary, cluster.SegmentReplicaShare)
				}
			},
		},
		{
			name:  "without OpenSearch's balancer to upset, the primary moves alone",
			build: func() *cluster.Snapshot { return os6481(cluster.ReplicationSegment).snap() },
			moves: []string{"events[0] a->c primary-balance"},
			why:   []string{"moving primary events[0] (1.00 threads) a→c", "a at 38% and c at 19%"},
		},
		{
			name:  "under document replication every copy indexes: placement is balanced, nothing moves",
			build: func() *cluster.Snapshot { return os6481(cluster.ReplicationDocument).snap() },
			cfg:   builtin,
		},
		{
			name: "document-replication primaries set a node apart just as much: not this phase's to move",
			build: func() *cluster.Snapshot {
				f := newFixture("a", "b", "c").
					index("events", 4<<30, []float64{2, 2}, []string{"a"}, []string{"a"})
				return f.snap()
			},
			// Spreading ahead off: a (50 % against the cluster's 17 %) is skewed, which is the
			// relief search's to spread, not this phase's.
			cfg: func(c *Config) { builtin(c); c.SpreadAheadMean = 0 },
		},
		{
			name: "primaries already spread by load: a gap under the spread is left",
			build: func() *cluster.Snapshot {
				return newFixture("a", "b", "c").segment("events", 4<<30, []float64{1, 1, 1, 0.5},
					[]string{"a", "b"}, []string{"b", "c"}, []string{"c", "a"}, []string{"a", "c"}).snap()
			},
			cfg: builtin,
		},
		{
			name: "a recovery in flight on the light node: wait for it",
			build: func() *cluster.Snapshot {
				s := os6481(cluster.ReplicationSegment).snap()
				s.Copies = append(s.Copies, cluster.Copy{Index: "events", Shard: 5, State: cluster.StateInitializing, Node: "id-c"})
				return s
			},
			cfg: builtin,
		},
		{
			name:  "OpenSearch's balancer relocates elsewhere with nothing left to place: the quiet nodes go",
			build: func() *cluster.Snapshot { return quietBeside(false) },
			cfg:   builtin,
			moves: []string{"events[0] a->c primary-balance"},
			why:   []string{"a is at 38% WRITE with 3.00 threads of primaries, c at 6% with 0.00"},
		},
		{
			name:  "the light node holds a copy shardwise placed within the hour: the return goes with the primary",
			build: func() *cluster.Snapshot { return os6481(cluster.ReplicationSegment).snap() },
			cfg:   builtin,
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Departed: []Departure{{Index: "events", Shard: 5, Node: "id-a", To: "id-c", At: s.At.Add(-10 * time.Minute), Utilization: 0.5}}}
			},
			moves: []string{"events[0] a->c primary-balance", "events[4] c->a swap-return"},
		},
		{
			// Random segment-replication seed 25 of 200: staged, the return was the copy the
			// balancer took to even the counts, relocating a copy shardwise had placed.
			name:  "the return is a copy shardwise placed on the light node within the hour: it goes with the primary",
			build: func() *cluster.Snapshot { return os6481(cluster.ReplicationSegment).snap() },
			cfg:   builtin,
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Departed: []Departure{{Index: "events", Shard: 4, Node: "id-b", To: "id-c", At: s.At.Add(-20 * time.Minute), Utilization: 0.5}}}
			},
			moves: []string{"events[0] a->c primary-balance", "events[4] c->a swap-return"},
		},
		{
			name:  "OpenSearch's balancer relocates with an index still to even out: wait for it",
			build: func() *cluster.Snapshot { return quietBeside(true) },
			cfg:   builtin,
		},
		{
			name: "every cooler node holds a copy of each heavy primary's shard: a note, no move",
			build: func() *cluster.Snapshot {
				return newFixture("a", "b").segment("events", 4<<30, []float64{2, 2}, []string{"a", "b"}, []string{"a", "b"}).snap()
			},
			cfg:   builtin,
			notes: []string{NotePrimaryImbalance},
			why:   []string{"a is at 50% WRITE with 4.00 threads of segment-replication primaries, 44 points over b"},
		},
		{
			name:  "a primary-balance group that measured no relief on a is not repeated there",
			build: func() *cluster.Snapshot { return os6481(cluster.ReplicationSegment).snap() },
			cfg:   builtin,
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Missed: []Measurement{{Node: "id-a", NodeName: "a", Kind: PlanPrimaryBalance, TargetName: "c",
					PlannedAt: s.At.Add(-10 * time.Minute), MeasuredAt: s.At.Add(-5 * time.Minute), Threads: 8,
					SourceBefore: 4, ProjectedAfter: 3.1, MeasuredAfter: 4}}}
			},
			// b, next, holds copies of c's every shard but its own primaries' (both on c): nothing fits.
			notes: []string{NoteKindCoolingOff, NotePrimaryImbalance},
			why:   []string{"a: no primary-balance is planned until"},
		},
		{
			name: "a copy does not go back within the hour to a node it left",
			build: func() *cluster.Snapshot {
				return newFixture("a", "b").segment("events", 4<<30, []float64{2, 2}, []string{"a", "b"}, []string{"a"}).snap()
			},
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Departed: []Departure{
					{Index: "events", Shard: 1, Node: "id-b", At: s.At.Add(-10 * time.Minute), Utilization: 0.025}}}
			},
			notes: []string{NotePrimaryImbalance},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// quietBeside: events' six primaries on a and b (3 threads, 38 % each), the replicas of a's on d and
// of b's on c; logs[0]'s replica relocates d→b, OpenSearch's balancer at work on nodes primary
// balance leaves alone. With uneven, old's three copies sit on d, one of them relocating to b: old
// stays spread past the balancer's threshold once it lands (d 2, b 1, a and c none), so the
// balancer has more to move.
func quietBeside(uneven bool) *cluster.Snapshot {
	f := newFixture("a", "b", "c", "d").
		segment("events", 4<<30, []float64{1, 1, 1, 1, 1, 1}, []string{"a", "d"}, []string{"a", "d"}, []string{"a", "d"},
			[]string{"b", "c"}, []string{"b", "c"}, []string{"b", "c"}).
		index("logs", 1<<30, []float64{0.1}, []string{"c", "d"})
	if uneven {
		f.index("old", 1<<30, []float64{0.01, 0.01, 0.01}, []string{"d"}, []string{"d"}, []string{"d"})
	}
	s := f.snap()
	for i := range s.Copies {
		c := &s.Copies[i]
		if c.Index == "logs" && !c.Primary || c.Index == "old" && c.Shard == 0 {
			c.State, c.RelocatingNode = cluster.StateRelocating, "id-b"
		}
	}
	return s
}

// A hot node is the relief search's, not primary balance's: the phase runs only when nothing is hot.
func TestPrimaryBalanceWaitsForHotspots(t *testing.T) {
	f := os6481(cluster.ReplicationSegment).queueing("a", 5)
	s := f.snap()
	cfg := DefaultConfig()
	plan, _ := PlanCycle(s, Memory{Streaks: streaks(s, "a")}, cfg)
	if len(plan.Hotspots) == 0 || !plan.Hotspots[0].Hot {
		t.Fatalf("a should be hot: %+v", plan.Hotspots)
	}
	for _, m := range plan.Moves {
		if m.Phase == PhasePrimaryBalance {
			t.Errorf("primary balance planned %s[%d] %s→%s while a is hot", m.Index, m.Shard, m.FromName, m.ToName)
		}
	}
}

// clearWayShape: a holds two 5-thread primaries of events (125 %) and is hot; c, the only cool
// node (19 %), holds the replicas of all three shards, and b carries the third primary and a
// document index (77 %). No primary fits b, and c may not take one while it holds its replica.
func clearWayShape(replication string) *fixture {
	f := newFixture("a", "b", "c")
	if replication == cluster.ReplicationSegment {
		f.segment("events", 4<<30, []float64{5, 5, 5}, []string{"a", "c"}, []string{"a", "c"}, []string{"b", "c"})
	} else {
		// The same measured loads, with the index's replication type unknown: the planner takes
		// it for document replication.
		f.segment("events", 4<<30, []float64{5, 5, 5}, []string{"a", "c"}, []string{"a", "c"}, []string{"b", "c"})
		f.s.Indices[len(f.s.Indices)-1].ReplicationType = ""
	}
	return f.index("logs", 1<<30, []float64{1.2}, []string{"b"}).queueing("a", 5)
}

// Clearing the way (issue 25, item 5): when no group fits a hot node and the one node with room
// holds the replica of a segment primary on it, the replica moves first and the primary follows.
func TestPlanClearWay(t *testing.T) {
	hotA := func(s *cluster.Snapshot) Memory { return Memory{Streaks: streaks(s, "a")} }
	cases := []planCase{
		{
			name:  "the replica on the one cool node moves, so the hot primary may follow",
			build: func() *cluster.Snapshot { return clearWayShape(cluster.ReplicationSegment).snap() },
			mem:   hotA,
			moves: []string{"events[0] c->b clear-way"},
			why:   []string{"clearing the way for primary events[0] (5.00 WRITE threads, segment replication) off hot a (125%)", "c, at 24%, would take it to 79%", "holds its replica (0.65 threads); the replica moves to b first"},
			check: func(t *testing.T, _ *cluster.Snapshot, p Plan, next Memory) {
				if len(next.Departed) != 1 || !next.Departed[0].ClearedWay {
					t.Errorf("departed: got %+v, want the replica's departure marked cleared_way", next.Departed)
				}
			},
		},
		{
			name:  "without segment replication the replica bears the shard's load: nothing clears the way",
			build: func() *cluster.Snapshot { return clearWayShape("").snap() },
			mem:   hotA,
			notes: []string{NoteUnrelieved},
		},
		{
			name: "once the replica has left, the primary goes where it was: not a return",
			build: func() *cluster.Snapshot {
				s := clearWayShape(cluster.ReplicationSegment).snap()
				for i := range s.Copies {
					if c := &s.Copies[i]; c.Index == "events" && c.Shard == 0 && !c.Primary {
						c.Node = "id-b"
					}
				}
				s.NodeByRef("b").Write.Load += 0.5
				s.NodeByRef("c").Write.Load -= 0.5
				return s
			},
			mem: func(s *cluster.Snapshot) Memory {
				return Memory{Streaks: streaks(s, "a"), Departed: []Departure{
					{Index: "events", Shard: 0, Node: "id-c", At: s.At.Add(-2 * time.Minute), Utilization: 0.1875, ClearedWay: true}}}
			},
			moves: []string{"events[0] a->c write-hotspot"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// TestClearWayWithinBudget: the replica that clears the way is a group the move function
// budgets as any other (safety.max_moves_per_node): with d's relief, planned first, already
// taking c's one group this cycle, a's way is cleared next cycle, not planned to be refused.
func TestClearWayWithinBudget(t *testing.T) {
	build := func() *cluster.Snapshot {
		f := newFixture("a", "b", "c", "d", "e").
			segment("events", 4<<30, []float64{5, 5, 5}, []string{"a", "c"}, []string{"a", "c"}, []string{"b", "c"}).
			index("logs", 1<<30, []float64{1.2}, []string{"b"}).queueing("a", 5)
		f.index("bulk", 1<<30, []float64{1}, []string{"d"}).index("base", 1<<30, []float64{3.25, 3.25}, []string{"d"}, []string{"d"}).queueing("d", 20)
		// e, empty, takes d's copies but not events'.
		exclude(f, "e", "events")
		return f.snap()
	}
	runPlanCase(t, planCase{
		name:  "the cycle's one move is d's",
		build: build,
		mem:   func(s *cluster.Snapshot) Memory { return Memory{Streaks: streaks(s, "a", "d")} },
		cfg:   func(c *Config) { *c = c.WithMoveBudget(1, 1) },
		moves: []string{"bulk[0] d->e write-hotspot"},
		notes: []string{NoteThrottled},
		why:   []string{"bulk[0]"},
		check: func(t *testing.T, _ *cluster.Snapshot, p Plan, _ Memory) {
			if n := p.Notes[0]; n.Node != "a" || !strings.Contains(n.Reason, "the replica of primary events[0] on c would clear its way") || !strings.Contains(n.Reason, "max_moves_per_cycle 1, 1 planned") {
				t.Errorf("throttled note: got %+v", n)
			}
		},
	})
}
