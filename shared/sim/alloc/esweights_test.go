package alloc_test

import (
	"math"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// mustSimWith builds a simulation from scenario JSON with the given rebalancer.
func mustSimWith(t *testing.T, doc string, r model.Rebalancer) *sim.Sim {
	t.Helper()
	sc, err := scenario.ParseScenario([]byte(doc))
	if err != nil {
		t.Fatalf("parse scenario: %v", err)
	}
	s, err := sim.New(sc, sim.Options{Rebalancer: r})
	if err != nil {
		t.Fatalf("new sim: %v", err)
	}
	return s
}

// Three nodes; index a's shards (write loads 2 and 1 threads, 1 GB each) both on n0, index b's one
// shard (no write load, 3 GB) on n1, n2 empty.
const esWeightScenario = `{"name": "es-weights", "seed": 1, "tick_seconds": 30, "duration_seconds": 300,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "n0"}, {"name": "n1"}, {"name": "n2"}],
  "indices": [
    {"name": "a", "primaries": 2, "replicas": 0, "shard_bytes": 1000000000, "shard_weights": [2, 1],
     "write_load": {"kind": "constant", "value": 3}, "placement": [["n0"], ["n0"]]},
    {"name": "b", "primaries": 1, "replicas": 0, "shard_bytes": 3000000000, "placement": [["n1"]]}]}`

func TestESWeightFunction(t *testing.T) {
	// By hand from WeightFunction with the default factors: their sum is 11, so θ0 = 0.45/11,
	// θ1 = 0.55/11 = 0.05, θ2 = 10/11, θ3 = 2e-11/11. Averages over 3 nodes: shards 3/3 = 1,
	// write load (2 + 1 + 0)/3 = 1, disk (1e9 + 1e9 + 3e9)/3 = 5e9/3; index a 2/3, index b 1/3.
	// n0: θ0·(2−1) + θ2·(3−1) + θ3·(2e9 − 5e9/3) = 0.0409091 + 1.8181818 + 0.0006061 = 1.8596970
	// n1: θ0·(1−1) + θ2·(0−1) + θ3·(3e9 − 5e9/3) = −0.9090909 + 0.0024242 = −0.9066667
	// n2: θ0·(0−1) + θ2·(0−1) + θ3·(0 − 5e9/3) = −0.0409091 − 0.9090909 − 0.0030303 = −0.9530303
	// With the index: + θ1·(shards of the index on the node − its average).
	tests := []struct {
		name  string
		node  string
		index string
		want  float64
	}{
		{"n0 holds both copies of a", "n0", "a", 1.8596970 + 0.05*(2-2.0/3)},
		{"n1 holds none of a", "n1", "a", -0.9066667 + 0.05*(0-2.0/3)},
		{"n2 is empty", "n2", "a", -0.9530303 + 0.05*(0-2.0/3)},
		{"n0 holds none of b", "n0", "b", 1.8596970 + 0.05*(0-1.0/3)},
		{"n1 holds b", "n1", "b", -0.9066667 + 0.05*(1-1.0/3)},
		{"n2 holds none of b", "n2", "b", -0.9530303 + 0.05*(0-1.0/3)},
	}
	s := mustSimWith(t, esWeightScenario, model.RebalancerESWeights)
	s.ComputeLoads(0)
	s.Refresh()
	b := s.Alloc.NewESBalancer()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := b.Weight(s.ByName[tc.node], s.ByIndex[tc.index])
			if math.Abs(float64(got)-tc.want) > 1e-5 {
				t.Errorf("weight(%s, %s): got %.7f, want %.7f", tc.node, tc.index, got, tc.want)
			}
		})
	}
	// The threshold 1.0 times minWeightDelta: θ0 + θ1 + θ2·1.5 (a's mean shard write load) + θ3·1e9.
	wantThreshold := 0.0409091 + 0.05 + 1.5*10.0/11 + 1e9*2e-11/11
	if got := b.LocalThreshold(s.ByIndex["a"]); math.Abs(float64(got)-wantThreshold) > 1e-5 {
		t.Errorf("localThreshold(a): got %.7f, want %.7f", got, wantThreshold)
	}
}

// Four nodes with 4 WRITE threads, three copies each. Index hot's six shards bear 1.5 threads each;
// n0 holds three of them (4.5 threads: saturated), the others one each beside cold copies with no load.
const esHotspotEvenScenario = `{"name": "es-hotspot-even", "seed": 3, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": true},
  "node_defaults": {"write_threads": 4},
  "nodes": [{"name": "n0"}, {"name": "n1"}, {"name": "n2"}, {"name": "n3"}],
  "indices": [
    {"name": "hot", "primaries": 6, "replicas": 0, "shard_bytes": 1048576,
     "write_load": {"kind": "constant", "value": 9},
     "placement": [["n0"], ["n0"], ["n0"], ["n1"], ["n2"], ["n3"]]},
    {"name": "cold", "primaries": 6, "replicas": 0, "shard_bytes": 1048576,
     "placement": [["n1"], ["n1"], ["n2"], ["n2"], ["n3"], ["n3"]]}]}`

// Four nodes with 4 WRITE threads, two copies each. Indices h1 and h2 have one copy per node;
// each has a heavy shard (2.5 of its 4 threads) and both heavy shards are on n0 (5 threads:
// saturated), the others bear 0.5. Shard counts, per index and overall, are even; write load is not.
const esHotspotHiddenScenario = `{"name": "es-hotspot-hidden", "seed": 3, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": true},
  "node_defaults": {"write_threads": 4},
  "nodes": [{"name": "n0"}, {"name": "n1"}, {"name": "n2"}, {"name": "n3"}],
  "indices": [
    {"name": "h1", "primaries": 4, "replicas": 0, "shard_bytes": 1048576, "shard_weights": [5, 1, 1, 1],
     "write_load": {"kind": "constant", "value": 4}, "placement": [["n0"], ["n1"], ["n2"], ["n3"]]},
    {"name": "h2", "primaries": 4, "replicas": 0, "shard_bytes": 1048576, "shard_weights": [5, 1, 1, 1],
     "write_load": {"kind": "constant", "value": 4}, "placement": [["n0"], ["n1"], ["n2"], ["n3"]]}]}`

// Four nodes; both shards of spiky sit on n0 beside an even index, and spiky's write load steps from
// 0.5 to 6 WRITE threads after five minutes: at the start n0 carries no more forecast load than any
// other node.
const esSpikeScenario = `{"name": "es-spike", "seed": 3, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": true},
  "node_defaults": {"write_threads": 4},
  "nodes": [{"name": "n0"}, {"name": "n1"}, {"name": "n2"}, {"name": "n3"}],
  "indices": [
    {"name": "spiky", "primaries": 2, "replicas": 0, "shard_bytes": 1048576,
     "write_load": {"kind": "step", "before": 0.5, "after": 6, "at_seconds": 300}, "placement": [["n0"], ["n0"]]},
    {"name": "even", "primaries": 6, "replicas": 0, "shard_bytes": 1048576,
     "write_load": {"kind": "constant", "value": 1.5}, "placement": [["n1"], ["n1"], ["n2"], ["n2"], ["n3"], ["n3"]]}]}`

// Three nodes, an index of three shards with a replica each, two copies per node, the same load on
// every shard: balanced in counts, per index, in write load and in disk.
const esSteadyScenario = `{"name": "es-steady", "seed": 3, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": true},
  "nodes": [{"name": "n0"}, {"name": "n1"}, {"name": "n2"}],
  "indices": [
    {"name": "logs", "primaries": 3, "replicas": 1, "shard_bytes": 10737418240,
     "write_load": {"kind": "constant", "value": 6},
     "placement": [["n0", "n1"], ["n1", "n2"], ["n2", "n0"]]}]}`

// startedOnN0 counts the listed shards with a copy started on n0.
func startedOnN0(s *sim.Sim, shards ...shardRef) int {
	on := 0
	for _, sh := range shards {
		if simtest.CopyOn(s, sh.index, sh.num, "n0") == "STARTED" {
			on++
		}
	}
	return on
}

// shardRef names a shard by index and number.
type shardRef struct {
	index string
	num   int
}

func TestESWeightsRebalancing(t *testing.T) {
	evenHot := []shardRef{{"hot", 0}, {"hot", 1}, {"hot", 2}, {"hot", 3}, {"hot", 4}, {"hot", 5}}
	hiddenHeavy := []shardRef{{"h1", 0}, {"h2", 0}}
	tests := []struct {
		name       string
		doc        string
		rebalancer model.Rebalancer
		shardBytes int64
		// heavy lists the write-heavy shards; wantOnN0 is how many of them n0 holds after two ticks.
		heavy    []shardRef
		wantOnN0 int
		// minMoves and maxMoves bound the run's moves; maxMoves -1 leaves it open.
		minMoves, maxMoves int
		wantHotAtEnd       bool
	}{
		{"write hotspot in copies of even load: es-weights moves one off the hot node and settles",
			esHotspotEvenScenario, model.RebalancerESWeights, 1048576, evenHot, 2, 1, 4, false},
		// Elasticsearch gives every shard of an index its one forecast, so a hotspot made of the
		// heavy shards of two evenly placed indices is as invisible to it as to the counts.
		{"write hotspot within indices: es-weights, one forecast per index, moves nothing",
			esHotspotHiddenScenario, model.RebalancerESWeights, 1048576, hiddenHeavy, 2, 0, 0, true},
		// Fed true loads, the weight function sees it. A heavy shard then shifts more weight than
		// the threshold, which assumes one load per index, and may swap between two cool nodes:
		// moves stay open.
		{"write hotspot within indices: es-weights-live moves a heavy copy off the hot node",
			esHotspotHiddenScenario, model.RebalancerESWeightsLive, 1048576, hiddenHeavy, 1, 1, -1, false},
		// The forecast is fixed when the index is created: a spike later is not seen.
		{"write spike after the start: es-weights' forecast does not see it and moves nothing",
			esSpikeScenario, model.RebalancerESWeights, 1048576, []shardRef{{"spiky", 0}, {"spiky", 1}}, 2, 0, 0, true},
		{"write hotspot hidden from counts: OpenSearch's count balancer moves nothing",
			esHotspotHiddenScenario, model.RebalancerOpenSearch, 1048576, hiddenHeavy, 2, 0, 0, true},
		{"steady and balanced: es-weights moves nothing",
			esSteadyScenario, model.RebalancerESWeights, 10737418240, nil, 0, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSimWith(t, tc.doc, tc.rebalancer)
			simtest.StepN(s, 2)
			if got := startedOnN0(s, tc.heavy...); got != tc.wantOnN0 {
				t.Errorf("write-heavy copies started on n0 after two ticks: got %d, want %d", got, tc.wantOnN0)
			}
			var last model.TickReport
			for !s.Done() {
				last = s.Step()
			}
			res := s.Result()
			if res.Moves < tc.minMoves || (tc.maxMoves >= 0 && res.Moves > tc.maxMoves) {
				t.Errorf("moves: got %d, want %d to %d", res.Moves, tc.minMoves, tc.maxMoves)
			}
			if res.BytesMoved != int64(res.Moves)*tc.shardBytes {
				t.Errorf("bytes_moved: got %d, want %d (moves × shard_bytes)", res.BytesMoved, int64(res.Moves)*tc.shardBytes)
			}
			if res.BuiltinRelocations != 0 || res.MovesUndoneByBuiltin != 0 || res.AllocatorRelocations != 0 {
				t.Errorf("builtin, undone, allocator relocations: got %d, %d, %d, want 0, 0, 0",
					res.BuiltinRelocations, res.MovesUndoneByBuiltin, res.AllocatorRelocations)
			}
			if res.SafetyViolations != 0 {
				t.Errorf("safety violations: got %v, want none", res.Violations)
			}
			hot := false
			for _, n := range last.Nodes {
				hot = hot || n.Hot
			}
			if hot != tc.wantHotAtEnd {
				t.Errorf("a node hot at the end: got %v, want %v (%+v)", hot, tc.wantHotAtEnd, last.Nodes)
			}
		})
	}
}
