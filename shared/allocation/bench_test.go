package allocation

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// productionSnapshot builds the scale of the Elasticsearch Serverless shard balancing blog's example:
// 37 nodes of 8 WRITE threads, 4,100 indices, 30,000 copies, with hot nodes queueing.
func productionSnapshot(hot int) *cluster.Snapshot {
	const nodes, indices, copies = 37, 4100, 30000
	rng := rand.New(rand.NewPCG(37, 30000))
	s := &cluster.Snapshot{Cluster: "prod", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), IntervalSeconds: 30, Health: "green",
		Settings: cluster.Settings{DiskHighWatermark: 0.9}}
	for i := range nodes {
		s.Nodes = append(s.Nodes, cluster.Node{ID: fmt.Sprintf("id-%02d", i), Name: fmt.Sprintf("node-%02d", i), Roles: []string{"data"},
			HeapUsedBytes: 8 << 30, HeapMaxBytes: 31 << 30, DiskTotalBytes: 40 << 40, DiskAvailableBytes: 40 << 40,
			Write: cluster.Pool{Threads: 8, RateKnown: true, LoadKnown: true}})
	}
	made := 0
	for ix := 0; made < copies; ix++ {
		name := fmt.Sprintf("index-%04d", ix%indices)
		if ix >= indices {
			name = fmt.Sprintf("index-%04d-b", ix)
		}
		primaries := 1 + rng.IntN(5)
		s.Indices = append(s.Indices, cluster.Index{Name: name, Primaries: primaries, Replicas: 1})
		for sh := range primaries {
			load := rng.ExpFloat64() * 0.005
			a := rng.IntN(nodes)
			b := (a + 1 + rng.IntN(nodes-1)) % nodes
			for i, n := range []int{a, b} {
				node := &s.Nodes[n]
				s.Copies = append(s.Copies, cluster.Copy{Index: name, Shard: sh, Primary: i == 0, State: cluster.StateStarted,
					Node: node.ID, SizeBytes: 20 << 30, WriteLoad: load, LoadKnown: true})
				node.Write.Load += load
				node.DiskAvailableBytes -= 20 << 30
				made++
			}
		}
	}
	// The hot nodes carry a few busy shards on top of their share.
	for h := range hot {
		node := &s.Nodes[h]
		for k := range 4 {
			name := fmt.Sprintf("spike-%d-%d", h, k)
			s.Indices = append(s.Indices, cluster.Index{Name: name, Primaries: 1, Replicas: 0})
			s.Copies = append(s.Copies, cluster.Copy{Index: name, Shard: 0, Primary: true, State: cluster.StateStarted,
				Node: node.ID, SizeBytes: 10 << 30, WriteLoad: 1.0, LoadKnown: true})
			node.Write.Load += 1.0
		}
		node.Write.QueueLatencySeconds = 15.6
		node.Write.Queue = 1000
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.Write.Utilization = n.Write.Load / float64(n.Write.Threads)
		n.Write.Active = min(n.Write.Threads, int(n.Write.Load+0.5))
	}
	return s
}

// BenchmarkPlanCycleProduction plans one cycle at 37 nodes, 30,000 copies and 5 hot nodes.
func BenchmarkPlanCycleProduction(b *testing.B) {
	s := productionSnapshot(5)
	hot := make([]string, 0, 5)
	for i := range 5 {
		hot = append(hot, s.Nodes[i].Name)
	}
	mem := Memory{Streaks: streaks(s, hot...)}
	cfg := DefaultConfig()
	plan, _ := PlanCycle(s, mem, cfg)
	b.Logf("copies %d, hot %d, moves %d, scale up %+v", len(s.Copies), len(hot), len(plan.Moves), plan.ScaleUp)
	for _, n := range plan.Notes {
		b.Logf("note %s %s: %.300s", n.Kind, n.Node, n.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		PlanCycle(s, mem, cfg)
	}
}

// BenchmarkPlanCycleProductionQuiet plans one cycle at the same scale with nothing hot: the cycle a
// large cluster runs most of the time, where the index-colocation phase looks at every copy.
func BenchmarkPlanCycleProductionQuiet(b *testing.B) {
	s := productionSnapshot(0)
	cfg := DefaultConfig()
	plan, _ := PlanCycle(s, Memory{}, cfg)
	b.Logf("copies %d, moves %d", len(s.Copies), len(plan.Moves))
	b.ReportAllocs()
	for b.Loop() {
		PlanCycle(s, Memory{}, cfg)
	}
}
