package allocation

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// benchShape is the size of a benchmark cluster: nodes of 8 WRITE threads, index names to cycle
// through, shard copies of 20 GiB (a primary and a replica per shard), and each copy's mean write
// load in threads (exponentially distributed).
type benchShape struct {
	nodes, indices, copies int
	copyLoad               float64
}

// production is the scale of the Elasticsearch Serverless shard balancing blog's example: 37 nodes,
// 4,100 indices and 30,000 copies, about half the WRITE threads busy.
var production = benchShape{nodes: 37, indices: 4100, copies: 30000, copyLoad: 0.005}

// petabyte is 750 nodes and 100,000 copies of 20 GiB (2 PB), at the same half of the WRITE
// threads busy as production: 4 threads a node over 133 copies.
var petabyte = benchShape{nodes: 750, indices: 16000, copies: 100000, copyLoad: 4.0 * 750 / 100000}

// benchSnapshot builds a cluster of the given shape whose first hot nodes carry a few busy shards on
// top of their share and queue.
func benchSnapshot(shape benchShape, hot int) *cluster.Snapshot {
	nodes, indices, copies := shape.nodes, shape.indices, shape.copies
	rng := rand.New(rand.NewPCG(uint64(nodes), uint64(copies)))
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
			load := rng.ExpFloat64() * shape.copyLoad
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
func BenchmarkPlanCycleProduction(b *testing.B) { benchPlanCycle(b, production, 5) }

// BenchmarkPlanCycleProductionQuiet plans one cycle at the same scale with nothing hot: the cycle a
// large cluster runs most of the time, where the index-colocation phase looks at every copy.
func BenchmarkPlanCycleProductionQuiet(b *testing.B) { benchPlanCycle(b, production, 0) }

// BenchmarkPlanCycleProductionHeapFull plans one cycle at the same scale with nothing hot and the
// first ten nodes over the heap limit, as the old nodes of a scale-out are while the new ones fill:
// the cannot-remain phase weighs every copy on them.
func BenchmarkPlanCycleProductionHeapFull(b *testing.B) {
	benchPlanCycleOf(b, production, 0, func(s *cluster.Snapshot) {
		for i := range 10 {
			s.Nodes[i].HeapUsedBytes = s.Nodes[i].HeapMaxBytes * 95 / 100
		}
	})
}

// BenchmarkNewViewProduction indexes a snapshot of 37 nodes and 30,000 copies for the deciders, as
// detect, the move function's re-check and the replica controller each do once a cycle.
func BenchmarkNewViewProduction(b *testing.B) {
	s := benchSnapshot(production, 5)
	cfg := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		NewView(s, cfg, nil)
	}
}

// benchPlanCycle plans one cycle of a cluster of the given shape whose first hot nodes have been
// hot long enough to act on.
func benchPlanCycle(b *testing.B, shape benchShape, hot int) { benchPlanCycleOf(b, shape, hot, nil) }

// benchPlanCycleOf is benchPlanCycle on the snapshot as prep changes it (nil: as built).
func benchPlanCycleOf(b *testing.B, shape benchShape, hot int, prep func(*cluster.Snapshot)) {
	s := benchSnapshot(shape, hot)
	if prep != nil {
		prep(s)
	}
	names := make([]string, 0, hot)
	for i := range hot {
		names = append(names, s.Nodes[i].Name)
	}
	mem := Memory{}
	if hot > 0 {
		mem.Streaks = streaks(s, names...)
	}
	cfg := DefaultConfig()
	plan, _ := PlanCycle(s, mem, cfg)
	b.Logf("nodes %d, copies %d, hot %d, moves %d, scale up %+v", len(s.Nodes), len(s.Copies), hot, len(plan.Moves), plan.ScaleUp)
	for _, n := range plan.Notes {
		b.Logf("note %s %s: %.300s", n.Kind, n.Node, n.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		PlanCycle(s, mem, cfg)
	}
}
