package sim

import (
	"testing"
)

// One node n0 holding the three shards of index a; n1 empty. Loads and stats are set by hand.
const esWriteLoadScenario = `{"name": "es-writeload", "seed": 1, "tick_seconds": 30, "duration_seconds": 300,
  "nodes": [{"name": "n0"}, {"name": "n1"}],
  "indices": [{"name": "a", "primaries": 3, "replicas": 0, "shard_bytes": 1000000000,
    "placement": [["n0"], ["n0"], ["n0"]]}]}`

// wlRound builds a round over esWriteLoadScenario with n0's and n1's stats (8 threads each), the
// stats polled for n1 and the shard loads given.
func wlRound(t *testing.T, n0, n1, polledN1 esNodeStats, loads []float64) (*Sim, *esWriteLoadRound) {
	t.Helper()
	s := mustSimWith(t, esWriteLoadScenario, RebalancerESWriteLoad)
	s.refresh()
	nd0, nd1 := s.byName["n0"], s.byName["n1"]
	info := &esClusterInfo{nodes: map[*node]esNodeStats{nd0: n0, nd1: polledN1}, shardLoads: map[*shard]float64{}}
	for i, l := range loads {
		info.shardLoads[s.byIndex["a"].shards[i]] = l
	}
	r := newESWriteLoadRound(s, info)
	r.sim[nd1] = n1
	return s, r
}

func TestWriteLoadDeciderCanAllocate(t *testing.T) {
	cool := esNodeStats{threads: 8, utilization: 0.2}
	tests := []struct {
		name      string
		target    esNodeStats // n1's stats in the round
		polled    esNodeStats // n1's stats at the poll
		shardLoad float64     // shard 0's write load, in threads
		want      wlDecision
	}{
		{"room to spare", esNodeStats{threads: 8, utilization: 0.5}, cool, 1,
			wlDecision{reason: wlHasRoom, value: 0.625, limit: 0.9}},
		{"just under the allocation threshold with the shard", esNodeStats{threads: 8, utilization: 0.5}, cool, 3.19,
			wlDecision{reason: wlHasRoom, value: 0.89875, limit: 0.9}},
		{"the shard takes the target exactly to the threshold", esNodeStats{threads: 8, utilization: 0.5}, cool, 3.2,
			wlDecision{notPreferred: true, reason: wlTargetWouldExceed, value: 0.9, limit: 0.9}},
		{"the target is at the threshold already", esNodeStats{threads: 8, utilization: 0.9}, cool, 0,
			wlDecision{notPreferred: true, reason: wlTargetBusy, value: 0.9, limit: 0.9}},
		{"the target was hot at the poll and is in its waiting period",
			esNodeStats{threads: 8, utilization: 0.3}, esNodeStats{threads: 8, utilization: 0.5, queueLatency: 3}, 0.1,
			wlDecision{notPreferred: true, reason: wlTargetHot, value: 3, limit: 3}},
		{"the target queued at the poll but under the hotspot utilization",
			esNodeStats{threads: 8, utilization: 0.3}, esNodeStats{threads: 8, utilization: 0.49, queueLatency: 10}, 0.8,
			wlDecision{reason: wlHasRoom, value: 0.4, limit: 0.9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, r := wlRound(t, cool, tc.target, tc.polled, []float64{tc.shardLoad, 0, 0})
			got := r.canAllocate(s.byIndex["a"].shards[0], s.byName["n1"])
			if got.notPreferred != tc.want.notPreferred || got.reason != tc.want.reason ||
				!near(got.value, tc.want.value) || got.limit != tc.want.limit {
				t.Errorf("got %+v (%s), want %+v (%s)", got, got, tc.want, tc.want)
			}
		})
	}

	t.Run("a node without stats", func(t *testing.T) {
		s, r := wlRound(t, cool, cool, cool, []float64{1, 0, 0})
		delete(r.sim, s.byName["n1"])
		if got := r.canAllocate(s.byIndex["a"].shards[0], s.byName["n1"]); got.notPreferred || got.reason != wlNoStats {
			t.Errorf("got %s, want YES for lack of stats", got)
		}
	})
}

func TestWriteLoadDeciderCanRemain(t *testing.T) {
	hot := esNodeStats{threads: 8, utilization: 1, queueLatency: 5}
	tests := []struct {
		name  string
		node  esNodeStats // n0's stats in the round
		loads []float64   // shards 0, 1, 2; shard 0 is asked about
		want  wlDecision
	}{
		{"hot node, shard worth moving", hot, []float64{2, 3, 3},
			wlDecision{notPreferred: true, reason: wlHotspot, value: 5, limit: 3}},
		{"queue latency exactly at the threshold", esNodeStats{threads: 8, utilization: 0.5, queueLatency: 3}, []float64{2, 3, 3},
			wlDecision{notPreferred: true, reason: wlHotspot, value: 3, limit: 3}},
		{"queue latency just under the threshold", esNodeStats{threads: 8, utilization: 1, queueLatency: 2.999}, []float64{2, 3, 3},
			wlDecision{reason: wlNotHot, value: 2.999, limit: 3}},
		{"utilization just under the hotspot threshold", esNodeStats{threads: 8, utilization: 0.4999, queueLatency: 30}, []float64{2, 3, 3},
			wlDecision{reason: wlNotHot, value: 30, limit: 3}},
		{"one shard carries exactly 95% of the load", hot, []float64{19, 1, 0},
			wlDecision{reason: wlSingleShardHotspot, value: 0.95, limit: 0.95}},
		{"the hottest shard carries just under 95%", hot, []float64{18.9, 1, 0},
			wlDecision{notPreferred: true, reason: wlHotspot, value: 5, limit: 3}},
		{"shard write load at the minimum", hot, []float64{0.001, 1, 1},
			wlDecision{reason: wlNegligibleShard, value: 0.001, limit: 0.001}},
		{"shard write load just over the minimum", hot, []float64{0.0011, 1, 1},
			wlDecision{notPreferred: true, reason: wlHotspot, value: 5, limit: 3}},
		{"no shard has load: the node cannot be relieved by moves", hot, []float64{0, 0, 0},
			wlDecision{reason: wlNegligibleShard, value: 0, limit: 0.001}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cool := esNodeStats{threads: 8}
			s, r := wlRound(t, tc.node, cool, cool, tc.loads)
			r.sim[s.byName["n0"]] = tc.node
			c := s.byIndex["a"].shards[0].copies[0]
			got := r.canRemain(c)
			if got.notPreferred != tc.want.notPreferred || got.reason != tc.want.reason ||
				!near(got.value, tc.want.value) || got.limit != tc.want.limit {
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
			ix := &index{name: "o"}
			loads := map[*shard]float64{}
			var copies []*shardCopy
			for i, l := range tc.loads {
				sh := &shard{idx: ix, num: i}
				if l >= 0 {
					loads[sh] = l
				}
				copies = append(copies, &shardCopy{sh: sh, primary: true})
			}
			moveOrder(copies, loads)
			var got []int
			for _, c := range copies {
				got = append(got, c.sh.num)
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
	hot := esNodeStats{threads: 8, utilization: 1, queueLatency: 5}
	cool := esNodeStats{threads: 8, utilization: 0.25}
	s, r := wlRound(t, hot, cool, cool, []float64{2, 3, 3})
	n0, n1 := s.byName["n0"], s.byName["n1"]
	r.simulateMove(s.byIndex["a"].shards[0], n0, n1)
	if got := r.sim[n0]; got.queueLatency != 0 || !near(got.utilization, 0.75) || got.hotspotting() {
		t.Errorf("source after the move: got %+v, want latency 0, utilization 0.75, not hot", got)
	}
	if got := r.sim[n1]; !near(got.utilization, 0.5) {
		t.Errorf("target after the move: got utilization %v, want 0.5", got.utilization)
	}
	if got := r.canRemain(s.byIndex["a"].shards[1].copies[0]); got.notPreferred {
		t.Errorf("another shard on the source after the move: got %s, want YES", got)
	}
}

func TestESWriteLoadMovesOffWriteHotspot(t *testing.T) {
	// In write-hotspot, clicks' two hottest shards saturate node-0 and node-1 after 10 minutes with
	// shard counts even, so neither OpenSearch's balancer nor Elasticsearch's weights move anything
	// for it; the write-load decider's NOT_PREFERRED pass starts a relocation off each hot node.
	s, err := New(loadShared(t, "write-hotspot"), Options{Rebalancer: RebalancerESWriteLoad})
	if err != nil {
		t.Fatalf("new simulation: %v", err)
	}
	offHot := map[string]bool{}
	for !s.Done() {
		rep := s.Step()
		if rep.At.Sub(s.start).Seconds() <= 600 {
			continue
		}
		for _, r := range s.recoveries {
			if r.relocation && r.source != nil {
				offHot[r.source.name] = true
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
