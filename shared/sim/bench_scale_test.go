package sim

import (
	"fmt"
	"testing"
)

// petabyteScenario is 750 nodes in three zones holding 10,000 indices × 5 primaries × (1 + 1
// replica) = 100,000 copies of 20 GiB (2 PB, 2.7 TiB a node), their write load zipf-skewed over the
// indices and half the WRITE threads busy on average: 1,500 threads of index load, borne by both
// copies of each shard.
func petabyteScenario(tb testing.TB) *Scenario {
	tb.Helper()
	nodes := make([]NodeSpec, 750)
	for i := range nodes {
		nodes[i] = NodeSpec{Name: fmt.Sprintf("node-%03d", i), Zone: fmt.Sprintf("z%d", i%3)}
	}
	write := LoadProfile{Kind: ProfileSine, Mean: 1500, Amplitude: 500, PeriodSeconds: 3600}
	search := Constant(3000)
	return &Scenario{
		Name: "petabyte", Seed: 750, TickSeconds: 30, DurationSeconds: 86400,
		NodeDefaults: NodeSpec{WriteThreads: 8, SearchThreads: 13, HeapBytes: 31 << 30, DiskBytes: 8 << 40},
		Nodes:        nodes,
		IndexGroups: []IndexGroupSpec{{
			NamePrefix: "logs-", Count: 10000, Primaries: 5, Replicas: 1, ShardBytes: 20 << 30,
			WriteLoad: &write, SearchLoad: &search, Skew: &Skew{Kind: "zipf", S: 1.1},
		}},
	}
}

// BenchmarkStepPetabyte advances the 750-node, 100,000-copy cluster by one tick: loads, queues,
// recoveries, OpenSearch's allocator and count balancer, safety checks and measures.
func BenchmarkStepPetabyte(b *testing.B) {
	s, err := New(petabyteScenario(b), Options{})
	if err != nil {
		b.Fatalf("new: %v", err)
	}
	s.Step()
	s.mu.RLock()
	copies := 0
	for _, n := range s.nodes {
		copies += n.shardCount
	}
	s.mu.RUnlock()
	if len(s.nodes) != 750 || copies != 100000 {
		b.Fatalf("cluster: got %d nodes and %d copies, want 750 and 100000", len(s.nodes), copies)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Step()
	}
}
