package sim_test

import (
	"github.com/shardwise/shardwise/shared/sim"

	"fmt"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// petabyteScenario is 750 nodes in three zones holding 10,000 indices × 5 primaries × (1 + 1
// replica) = 100,000 copies of 20 GiB (2 PB, 2.7 TiB a node), their write load zipf-skewed over the
// indices and half the WRITE threads busy on average: 1,500 threads of index load, borne by both
// copies of each shard.
func petabyteScenario(tb testing.TB) *scenario.Scenario {
	tb.Helper()
	nodes := make([]scenario.NodeSpec, 750)
	for i := range nodes {
		nodes[i] = scenario.NodeSpec{Name: fmt.Sprintf("node-%03d", i), Zone: fmt.Sprintf("z%d", i%3)}
	}
	write := scenario.LoadProfile{Kind: scenario.ProfileSine, Mean: 1500, Amplitude: 500, PeriodSeconds: 3600}
	search := scenario.Constant(3000)
	return &scenario.Scenario{
		Name: "petabyte", Seed: 750, TickSeconds: 30, DurationSeconds: 86400,
		NodeDefaults: scenario.NodeSpec{WriteThreads: 8, SearchThreads: 13, HeapBytes: 31 << 30, DiskBytes: 8 << 40},
		Nodes:        nodes,
		IndexGroups: []scenario.IndexGroupSpec{{
			NamePrefix: "logs-", Count: 10000, Primaries: 5, Replicas: 1, ShardBytes: 20 << 30,
			WriteLoad: &write, SearchLoad: &search, Skew: &scenario.Skew{Kind: "zipf", S: 1.1},
		}},
	}
}

// BenchmarkStepPetabyte advances the 750-node, 100,000-copy cluster by one tick: loads, queues,
// recoveries, OpenSearch's allocator and count balancer, safety checks and measures.
func BenchmarkStepPetabyte(b *testing.B) {
	s, err := sim.New(petabyteScenario(b), sim.Options{})
	if err != nil {
		b.Fatalf("new: %v", err)
	}
	s.Step()
	s.Mu.RLock()
	copies := 0
	for _, n := range s.Nodes {
		copies += n.ShardCount
	}
	s.Mu.RUnlock()
	if len(s.Nodes) != 750 || copies != 100000 {
		b.Fatalf("cluster: got %d nodes and %d copies, want 750 and 100000", len(s.Nodes), copies)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Step()
	}
}
