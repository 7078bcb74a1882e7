package sway

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Input is what one Sway cycle reads: the cluster and its mean search latency.
type Input struct {
	Snapshot cluster.Snapshot
	// SearchLatencyMs is the mean over data nodes of each node's average query time, the figure
	// Sway's breaker checks.
	SearchLatencyMs float64
}

// Observe builds a cycle's input from one read of the cluster. Sway's agent averages search latency
// "from cumulative OpenSearch counters" (its README): query time over query count since the
// counters began, not over the last interval. Its collector (internal/agent) was not available to
// this port, so which nodes the mean is over is a reading: the data nodes that have served a query.
func Observe(s cluster.Sample) Input {
	sum, n := 0.0, 0
	for i := range s.Snapshot.Nodes {
		node := &s.Snapshot.Nodes[i]
		c, ok := s.Counters.Nodes[node.ID]
		if !node.IsData() || !ok || c.QueryTotal <= 0 {
			continue
		}
		sum += float64(c.QueryTimeMillis) / float64(c.QueryTotal)
		n++
	}
	in := Input{Snapshot: s.Snapshot}
	if n > 0 {
		in.SearchLatencyMs = sum / float64(n)
	}
	return in
}

// Move is one planned relocation, by node id and name (Sway's reroute names the nodes by name).
type Move struct {
	Index     string `json:"index"`
	Shard     int    `json:"shard"`
	Primary   bool   `json:"primary"`
	From      string `json:"from"`
	FromName  string `json:"from_name"`
	To        string `json:"to"`
	ToName    string `json:"to_name"`
	SizeBytes int64  `json:"size_bytes"`
	Reason    Reason `json:"reason"`
}

// Reason is why Sway planned a move: its source was hot when the cycle began, and the move changes
// the projected hot scores and their spread so.
type Reason struct {
	// SourceScore is the source's hot score when the cycle began, at or over Threshold.
	SourceScore float64 `json:"source_score"`
	Threshold   float64 `json:"threshold"`
	// FromScore and ToScore are the source's and the destination's projected hot scores after the
	// move, the two figures of Sway's rationale.
	FromScore float64 `json:"from_score"`
	ToScore   float64 `json:"to_score"`
	// SkewBefore and SkewAfter are the projected skew (population standard deviation of the data
	// nodes' hot scores) before and after the move.
	SkewBefore float64 `json:"skew_before"`
	SkewAfter  float64 `json:"skew_after"`
}

// String is the reason as the runner prints it.
func (r Reason) String() string {
	return fmt.Sprintf("sway: source hot-score %.2f ≥ %.2f, after the move %.2f→%.2f, skew %.4f→%.4f",
		r.SourceScore, r.Threshold, r.FromScore, r.ToScore, r.SkewBefore, r.SkewAfter)
}

// Decision is one cycle's outcome. With the circuit open the cycle is aborted: no moves, and no
// skew computed.
type Decision struct {
	Breaker BreakerResult `json:"breaker"`
	Moves   []Move        `json:"moves"`
	// CurrentSkew is the cycle's starting skew, ProjectedSkew the skew after Moves, SkewReduction
	// 1 − ProjectedSkew/CurrentSkew, and TargetMet whether it reached SkewReductionTarget.
	CurrentSkew   float64 `json:"current_skew"`
	ProjectedSkew float64 `json:"projected_skew"`
	SkewReduction float64 `json:"skew_reduction"`
	TargetMet     bool    `json:"target_met"`
}

// ErrNoDataNodes is returned for a cluster without data nodes, where Sway's Generate fails.
var ErrNoDataNodes = errors.New("no data nodes found in snapshot")

// Rebalancer is Sway's cycle: the circuit breaker, then the target-state generator.
type Rebalancer struct {
	Config Config
}

// Decide runs one cycle on in: Sway's Engine.runCycle without its I/O.
func (r Rebalancer) Decide(in Input) (Decision, error) {
	cfg := r.Config
	if err := cfg.Validate(); err != nil {
		return Decision{}, err
	}
	snap := &in.Snapshot
	d := Decision{Breaker: cfg.evaluate(snap.Health, in.SearchLatencyMs, snap.Counts().Relocating)}
	if d.Breaker.Open {
		return d, nil
	}
	return cfg.generate(snap, d)
}

// projectedNode is a data node as planning changes it (target.go's projectedNode).
type projectedNode struct {
	id, name   string
	heapPct    float64 // 0–100
	diskPct    float64 // 0–100
	diskTotal  int64
	shards     int
	shardBytes int64
	// holds marks the shards with a copy here, whatever its role: no second copy may come.
	holds map[cluster.ShardID]bool
}

// applyMove's estimate of heap following the data: 3 % off the source and onto the destination,
// within 5 % and 95 % (target.go).
const (
	heapShedFactor = 0.97
	heapGainFactor = 1.03
	heapFloorPct   = 5.0
	heapCeilPct    = 95.0
)

func (c Config) score(p *projectedNode, maxShards int) float64 {
	return c.HeapWeight*p.heapPct/100 + c.DiskWeight*p.diskPct/100 + c.ShardWeight*float64(p.shards)/float64(maxShards)
}

// generate is TargetStateGenerator.Generate: the largest shards on the nodes hot when the cycle
// began, each to the coolest node that holds no copy of its shard and has disk room, until the
// projected skew is SkewReductionTarget below the starting skew or MaxMovesPerCycle is reached. A
// candidate with no legal destination is skipped for the next.
func (c Config) generate(snap *cluster.Snapshot, d Decision) (Decision, error) {
	nodes := project(snap)
	if len(nodes) == 0 {
		return d, ErrNoDataNodes
	}
	byID := make(map[string]*projectedNode, len(nodes))
	for _, p := range nodes {
		byID[p.id] = p
	}
	initial := c.skew(nodes)
	hot := map[string]float64{}
	maxShards := maxProjectedShards(nodes)
	for _, p := range nodes {
		if s := c.score(p, maxShards); s >= c.HotNodeThreshold {
			hot[p.id] = s
		}
	}
	var candidates []cluster.Copy
	for _, cp := range snap.Copies {
		if _, ok := hot[cp.Node]; ok && cp.State == cluster.StateStarted {
			candidates = append(candidates, cp)
		}
	}
	// Largest first; Sway breaks ties by index and shard number, and here further by primary first
	// and node so that equal candidates come in one order (Sway's sort.Slice leaves it open).
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := &candidates[i], &candidates[j]
		switch {
		case a.SizeBytes != b.SizeBytes:
			return a.SizeBytes > b.SizeBytes
		case a.Index != b.Index:
			return a.Index < b.Index
		case a.Shard != b.Shard:
			return a.Shard < b.Shard
		case a.Primary != b.Primary:
			return a.Primary
		}
		return a.Node < b.Node
	})

	current := initial
	for _, cp := range candidates {
		if len(d.Moves) >= c.MaxMovesPerCycle {
			break
		}
		if initial > 0 && 1-current/initial >= c.SkewReductionTarget {
			break
		}
		from := byID[cp.Node]
		to := c.findTarget(&cp, nodes)
		if to == nil {
			continue
		}
		applyMove(&cp, from, to)
		before := current
		current = c.skew(nodes)
		maxShards := maxProjectedShards(nodes)
		d.Moves = append(d.Moves, Move{Index: cp.Index, Shard: cp.Shard, Primary: cp.Primary, From: from.id, FromName: from.name,
			To: to.id, ToName: to.name, SizeBytes: cp.SizeBytes, Reason: Reason{SourceScore: hot[cp.Node], Threshold: c.HotNodeThreshold,
				FromScore: c.score(from, maxShards), ToScore: c.score(to, maxShards), SkewBefore: before, SkewAfter: current}})
	}
	d.CurrentSkew, d.ProjectedSkew = initial, current
	if initial > 0 {
		d.SkewReduction = 1 - current/initial
	}
	d.TargetMet = d.SkewReduction >= c.SkewReductionTarget
	return d, nil
}

// project builds the data nodes' working copies in the snapshot's node order. A relocation's target
// counts a copy, without bytes, as the routing table lists it there as initializing.
func project(snap *cluster.Snapshot) []*projectedNode {
	var nodes []*projectedNode
	byID := map[string]*projectedNode{}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if !n.IsData() {
			continue
		}
		p := &projectedNode{id: n.ID, name: n.Name, heapPct: 100 * n.HeapRatio(), diskTotal: n.DiskTotalBytes,
			holds: map[cluster.ShardID]bool{}}
		if n.DiskTotalBytes > 0 {
			p.diskPct = 100 * float64(n.DiskUsedBytes()) / float64(n.DiskTotalBytes)
		}
		nodes = append(nodes, p)
		byID[n.ID] = p
	}
	for i := range snap.Copies {
		cp := &snap.Copies[i]
		if p, ok := byID[cp.Node]; ok {
			p.shards++
			p.shardBytes += cp.SizeBytes
			p.holds[cp.ID()] = true
		}
		if p, ok := byID[cp.RelocatingNode]; ok && cp.State == cluster.StateRelocating {
			p.shards++
			p.holds[cp.ID()] = true
		}
	}
	return nodes
}

// findTarget is target.go's findTarget: the coolest data node other than the source that holds no
// copy of the shard and whose shard bytes with it stay under TargetDiskLimit of its disk. Nodes of
// equal score are taken in the snapshot's order (Sway's sort.Slice over a map leaves it open).
func (c Config) findTarget(cp *cluster.Copy, nodes []*projectedNode) *projectedNode {
	maxShards := maxProjectedShards(nodes)
	order := make([]*projectedNode, len(nodes))
	copy(order, nodes)
	sort.SliceStable(order, func(i, j int) bool { return c.score(order[i], maxShards) < c.score(order[j], maxShards) })
	for _, p := range order {
		if p.id == cp.Node || p.holds[cp.ID()] {
			continue
		}
		if p.diskTotal > 0 && float64(p.shardBytes+cp.SizeBytes)/float64(p.diskTotal) >= c.TargetDiskLimit {
			continue
		}
		return p
	}
	return nil
}

// applyMove is target.go's applyMove. Once a node has a known disk size, its disk use is projected
// from its shard bytes (no longer the file system's figure), and its heap follows by a fixed factor.
func applyMove(cp *cluster.Copy, from, to *projectedNode) {
	from.shards--
	from.shardBytes -= cp.SizeBytes
	if from.diskTotal > 0 {
		from.diskPct = 100 * float64(from.shardBytes) / float64(from.diskTotal)
		from.heapPct = math.Max(heapFloorPct, from.heapPct*heapShedFactor)
	}
	delete(from.holds, cp.ID())
	to.shards++
	to.shardBytes += cp.SizeBytes
	if to.diskTotal > 0 {
		to.diskPct = 100 * float64(to.shardBytes) / float64(to.diskTotal)
		to.heapPct = math.Min(heapCeilPct, to.heapPct*heapGainFactor)
	}
	to.holds[cp.ID()] = true
}

// skew is computeProjectedSkew: the population standard deviation of the hot scores, 0 under two
// nodes.
func (c Config) skew(nodes []*projectedNode) float64 {
	if len(nodes) < 2 {
		return 0
	}
	maxShards := maxProjectedShards(nodes)
	sum := 0.0
	for _, p := range nodes {
		sum += c.score(p, maxShards)
	}
	mean := sum / float64(len(nodes))
	variance := 0.0
	for _, p := range nodes {
		dv := c.score(p, maxShards) - mean
		variance += dv * dv
	}
	return math.Sqrt(variance / float64(len(nodes)))
}

// maxProjectedShards is the largest shard count of any node, at least 1.
func maxProjectedShards(nodes []*projectedNode) int {
	m := 1
	for _, p := range nodes {
		m = max(m, p.shards)
	}
	return m
}
