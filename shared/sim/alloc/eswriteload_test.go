package alloc_test

import (
	"github.com/shardwise/shardwise/shared/sim/simtest"

	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/alloc"
	"github.com/shardwise/shardwise/shared/sim/model"
)

// One node n0 holding the three shards of index a; n1 empty. Loads and stats are set by hand.
const esWriteLoadScenario = `{"name": "es-writeload", "seed": 1, "tick_seconds": 30, "duration_seconds": 300,
  "nodes": [{"name": "n0"}, {"name": "n1"}],
  "indices": [{"name": "a", "primaries": 3, "replicas": 0, "shard_bytes": 1000000000,
    "placement": [["n0"], ["n0"], ["n0"]]}]}`

// wlRound builds a round over esWriteLoadScenario with n0's and n1's stats (8 threads each), the
// stats polled for n1 and the shard loads given.
func wlRound(t *testing.T, n0, n1, polledN1 alloc.EsNodeStats, loads []float64) (*sim.Sim, *alloc.EsWriteLoadRound) {
	t.Helper()
	s := mustSimWith(t, esWriteLoadScenario, model.RebalancerESWriteLoad)
	s.Refresh()
	nd0, nd1 := s.ByName["n0"], s.ByName["n1"]
	info := &alloc.EsClusterInfo{Nodes: map[*model.Node]alloc.EsNodeStats{nd0: n0, nd1: polledN1}, ShardLoads: map[*model.Shard]float64{}}
	for i, l := range loads {
		info.ShardLoads[s.ByIndex["a"].Shards[i]] = l
	}
	r := alloc.NewESWriteLoadRound(s.Alloc, info)
	r.Sim[nd1] = n1
	return s, r
}

func TestWriteLoadDeciderCanAllocate(t *testing.T) {
	cool := alloc.EsNodeStats{Threads: 8, Utilization: 0.2}
	tests := []struct {
		name      string
		target    alloc.EsNodeStats // n1's stats in the round
		polled    alloc.EsNodeStats // n1's stats at the poll
		shardLoad float64           // shard 0's write load, in threads
		want      alloc.WlDecision
	}{
		{"room to spare", alloc.EsNodeStats{Threads: 8, Utilization: 0.5}, cool, 1,
			alloc.WlDecision{Reason: alloc.WlHasRoom, Value: 0.625, Limit: 0.9}},
		{"just under the allocation threshold with the shard", alloc.EsNodeStats{Threads: 8, Utilization: 0.5}, cool, 3.19,
			alloc.WlDecision{Reason: alloc.WlHasRoom, Value: 0.89875, Limit: 0.9}},
		{"the shard takes the target exactly to the threshold", alloc.EsNodeStats{Threads: 8, Utilization: 0.5}, cool, 3.2,
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlTargetWouldExceed, Value: 0.9, Limit: 0.9}},
		{"the target is at the threshold already", alloc.EsNodeStats{Threads: 8, Utilization: 0.9}, cool, 0,
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlTargetBusy, Value: 0.9, Limit: 0.9}},
		{"the target was hot at the poll and is in its waiting period",
			alloc.EsNodeStats{Threads: 8, Utilization: 0.3}, alloc.EsNodeStats{Threads: 8, Utilization: 0.5, QueueLatency: 3}, 0.1,
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlTargetHot, Value: 3, Limit: 3}},
		{"the target queued at the poll but under the hotspot utilization",
			alloc.EsNodeStats{Threads: 8, Utilization: 0.3}, alloc.EsNodeStats{Threads: 8, Utilization: 0.49, QueueLatency: 10}, 0.8,
			alloc.WlDecision{Reason: alloc.WlHasRoom, Value: 0.4, Limit: 0.9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, r := wlRound(t, cool, tc.target, tc.polled, []float64{tc.shardLoad, 0, 0})
			got := r.CanAllocate(s.ByIndex["a"].Shards[0], s.ByName["n1"])
			if got.NotPreferred != tc.want.NotPreferred || got.Reason != tc.want.Reason ||
				!near(got.Value, tc.want.Value) || got.Limit != tc.want.Limit {
				t.Errorf("got %+v (%s), want %+v (%s)", got, got, tc.want, tc.want)
			}
		})
	}

	t.Run("a node without stats", func(t *testing.T) {
		s, r := wlRound(t, cool, cool, cool, []float64{1, 0, 0})
		delete(r.Sim, s.ByName["n1"])
		if got := r.CanAllocate(s.ByIndex["a"].Shards[0], s.ByName["n1"]); got.NotPreferred || got.Reason != alloc.WlNoStats {
			t.Errorf("got %s, want YES for lack of stats", got)
		}
	})
}

func TestWriteLoadDeciderCanRemain(t *testing.T) {
	hot := alloc.EsNodeStats{Threads: 8, Utilization: 1, QueueLatency: 5}
	tests := []struct {
		name  string
		node  alloc.EsNodeStats // n0's stats in the round
		loads []float64         // shards 0, 1, 2; shard 0 is asked about
		want  alloc.WlDecision
	}{
		{"hot node, shard worth moving", hot, []float64{2, 3, 3},
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlHotspot, Value: 5, Limit: 3}},
		{"queue latency exactly at the threshold", alloc.EsNodeStats{Threads: 8, Utilization: 0.5, QueueLatency: 3}, []float64{2, 3, 3},
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlHotspot, Value: 3, Limit: 3}},
		{"queue latency just under the threshold", alloc.EsNodeStats{Threads: 8, Utilization: 1, QueueLatency: 2.999}, []float64{2, 3, 3},
			alloc.WlDecision{Reason: alloc.WlNotHot, Value: 2.999, Limit: 3}},
		{"utilization just under the hotspot threshold", alloc.EsNodeStats{Threads: 8, Utilization: 0.4999, QueueLatency: 30}, []float64{2, 3, 3},
			alloc.WlDecision{Reason: alloc.WlNotHot, Value: 30, Limit: 3}},
		{"one shard carries exactly 95% of the load", hot, []float64{19, 1, 0},
			alloc.WlDecision{Reason: alloc.WlSingleShardHotspot, Value: 0.95, Limit: 0.95}},
		{"the hottest shard carries just under 95%", hot, []float64{18.9, 1, 0},
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlHotspot, Value: 5, Limit: 3}},
		{"shard write load at the minimum", hot, []float64{0.001, 1, 1},
			alloc.WlDecision{Reason: alloc.WlNegligibleShard, Value: 0.001, Limit: 0.001}},
		{"shard write load just over the minimum", hot, []float64{0.0011, 1, 1},
			alloc.WlDecision{NotPreferred: true, Reason: alloc.WlHotspot, Value: 5, Limit: 3}},
		{"no shard has load: the node cannot be relieved by moves", hot, []float64{0, 0, 0},
			alloc.WlDecision{Reason: alloc.WlNegligibleShard, Value: 0, Limit: 0.001}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cool := alloc.EsNodeStats{Threads: 8}
			s, r := wlRound(t, tc.node, cool, cool, tc.loads)
			r.Sim[s.ByName["n0"]] = tc.node
			c := s.ByIndex["a"].Shards[0].Copies[0]
			got := r.CanRemain(c)
			if got.NotPreferred != tc.want.NotPreferred || got.Reason != tc.want.Reason ||
				!near(got.Value, tc.want.Value) || got.Limit != tc.want.Limit {
				t.Errorf("got %+v (%s), want %+v (%s)", got, got, tc.want, tc.want)
			}
		})
	}
}

func near(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }

func TestMoveOrder(t *testing.T) {
	// Index "o" has one shard per load; -1 leaves the shard without a known load.
	tests := []struct {
		name  string
		loads []float64
		want  []int // shard numbers, most desirable to move first
	}{
		{"the seed's four classes", []float64{10, 6, 5, 4.9, 1, 0, -1, 8},
			[]int{2, 1, 7, 3, 4, 5, 0, 6}},
		{"equal loads keep routing order", []float64{2, 2, 4, 2},
			[]int{0, 1, 3, 2}},
		{"only the maximum and missing", []float64{-1, 3, 3},
			[]int{1, 2, 0}},
		{"no load known: routing order", []float64{-1, -1},
			[]int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := &model.Index{Name: "o"}
			loads := map[*model.Shard]float64{}
			var copies []*model.ShardCopy
			for i, l := range tc.loads {
				sh := &model.Shard{Idx: ix, Num: i}
				if l >= 0 {
					loads[sh] = l
				}
				copies = append(copies, &model.ShardCopy{Sh: sh, Primary: true})
			}
			alloc.MoveOrder(copies, loads)
			var got []int
			for _, c := range copies {
				got = append(got, c.Sh.Num)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestESWriteLoadSimulatedMove(t *testing.T) {
	// A move takes the shard's load off its source and onto its target, and zeroes the source's queue
	// latency: the source is not hot again in this round, so it gives one shard.
	hot := alloc.EsNodeStats{Threads: 8, Utilization: 1, QueueLatency: 5}
	cool := alloc.EsNodeStats{Threads: 8, Utilization: 0.25}
	s, r := wlRound(t, hot, cool, cool, []float64{2, 3, 3})
	n0, n1 := s.ByName["n0"], s.ByName["n1"]
	r.SimulateMove(s.ByIndex["a"].Shards[0], n0, n1)
	if got := r.Sim[n0]; got.QueueLatency != 0 || !near(got.Utilization, 0.75) || got.Hotspotting() {
		t.Errorf("source after the move: got %+v, want latency 0, utilization 0.75, not hot", got)
	}
	if got := r.Sim[n1]; !near(got.Utilization, 0.5) {
		t.Errorf("target after the move: got utilization %v, want 0.5", got.Utilization)
	}
	if got := r.CanRemain(s.ByIndex["a"].Shards[1].Copies[0]); got.NotPreferred {
		t.Errorf("another shard on the source after the move: got %s, want YES", got)
	}
}

func TestESWriteLoadMovesOffWriteHotspot(t *testing.T) {
	// In write-hotspot, clicks' two hottest shards saturate node-0 and node-1 after 10 minutes with
	// shard counts even, so neither OpenSearch's balancer nor Elasticsearch's weights move anything
	// for it; the write-load decider's NOT_PREFERRED pass starts a relocation off each hot node.
	s, err := sim.New(simtest.LoadShared(t, "write-hotspot"), sim.Options{Rebalancer: model.RebalancerESWriteLoad})
	if err != nil {
		t.Fatalf("new simulation: %v", err)
	}
	offHot := map[string]bool{}
	for !s.Done() {
		rep := s.Step()
		if rep.At.Sub(s.Start).Seconds() <= 600 {
			continue
		}
		for _, r := range s.Recoveries {
			if r.Relocation && r.Source != nil {
				offHot[r.Source.Name] = true
			}
		}
	}
	for _, n := range []string{"node-0", "node-1"} {
		if !offHot[n] {
			t.Errorf("no relocation off hot %s after the spike; relocations came off %v", n, offHot)
		}
	}
	if res := s.Result(); res.SafetyViolations != 0 {
		t.Errorf("es-writeload: %d safety violations, want 0", res.SafetyViolations)
	}
}
