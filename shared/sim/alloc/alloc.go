package alloc

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/settings"
)

// DecisionType orders decisions from best to worst, as OpenSearch's Decision.Type.
type DecisionType int

// The decision types, best first: the order is what comparing two answers relies on.
const (
	DecYes DecisionType = iota
	DecThrottle
	DecNo
)

func (d DecisionType) String() string { return [...]string{"YES", "THROTTLE", "NO"}[d] }

// decision is one decider's answer with its reason, as OpenSearch's Decision.Single.
type decision struct {
	Typ         DecisionType
	Decider     string
	Explanation string
}

func (d decision) String() string { return fmt.Sprintf("%s(%s)", d.Typ, d.Explanation) }

// Verdict collects decider answers; with explain it keeps every one, otherwise only the worst type.
type Verdict struct {
	explain   bool
	Typ       DecisionType
	Decisions []decision
}

// add records a decision. why is only called when explanations are wanted, to keep the
// allocator's inner loop free of string formatting.
func (v *Verdict) add(t DecisionType, decider string, why func() string) {
	v.Typ = max(v.Typ, t)
	if v.explain {
		v.Decisions = append(v.Decisions, decision{Typ: t, Decider: decider, Explanation: why()})
	}
}

// done reports whether deciding can stop early: a NO is final when nobody asked why.
func (v *Verdict) done() bool { return !v.explain && v.Typ == DecNo }

// multiString is Decision.Multi.toString: each decision in brackets.
func (v *Verdict) multiString() string {
	s := ""
	for _, d := range v.Decisions {
		s += "[" + d.String() + "]"
	}
	return s
}

// CanAllocate runs the allocation deciders for copy c of sh onto n, in OpenSearch's order.
// explicit is true for reroute commands, which ignore cluster.routing.allocation.enable.
func (s *Allocator) CanAllocate(sh *model.Shard, c *model.ShardCopy, n *model.Node, explain, explicit bool) Verdict {
	cfg := s.Config()
	v := Verdict{explain: explain}
	ix := sh.Idx
	primary := c != nil && c.Primary
	// replica_after_primary_active
	if primary {
		v.add(DecYes, "replica_after_primary_active", func() string { return "shard is primary and can be allocated" })
	} else if p := sh.Primary(); p == nil || !p.Active() {
		v.add(DecNo, "replica_after_primary_active", func() string { return "primary shard for this replica is not yet active" })
	} else {
		v.add(DecYes, "replica_after_primary_active", func() string { return "primary shard for this replica is already active" })
	}
	if v.done() {
		return v
	}
	// enable
	switch {
	case explicit:
		v.add(DecYes, "enable", func() string {
			return "explicitly ignoring any disabling of allocation due to manual allocation commands via the reroute API"
		})
	case cfg.AllocationEnable == "none":
		v.add(DecNo, "enable", func() string {
			return "no allocations are allowed due to cluster setting [cluster.routing.allocation.enable=none]"
		})
	case cfg.AllocationEnable != "all" && !primary:
		v.add(DecNo, "enable", func() string {
			return "replica allocations are forbidden due to cluster setting [cluster.routing.allocation.enable=" + cfg.AllocationEnable + "]"
		})
	default:
		v.add(DecYes, "enable", func() string { return "all allocations are allowed" })
	}
	if v.done() {
		return v
	}
	// filter
	if why := ix.Filters.Check(n, "index"); why != "" {
		v.add(DecNo, "filter", func() string { return why })
	} else if why := cfg.Filters.Check(n, "cluster"); why != "" {
		v.add(DecNo, "filter", func() string { return why })
	} else {
		v.add(DecYes, "filter", func() string { return "node passes include/exclude/require filters" })
	}
	if v.done() {
		return v
	}
	// same_shard
	if other := sh.OnNode(n); other != nil {
		v.add(DecNo, "same_shard", func() string {
			if other == c {
				return "this shard is already allocated to this node [" + other.RoutingString() + "]"
			}
			return "a copy of this shard is already allocated to this node [" + other.RoutingString() + "]"
		})
	} else {
		v.add(DecYes, "same_shard", func() string { return "this node does not hold a copy of this shard" })
	}
	if v.done() {
		return v
	}
	// disk_threshold
	size := float64(ix.ShardBytes)
	if !cfg.DiskEnabled {
		v.add(DecYes, "disk_threshold", func() string { return "the disk threshold decider is disabled" })
	} else if used := float64(n.DiskUsed) + size; used > cfg.DiskLimit(n) {
		v.add(DecNo, "disk_threshold", func() string {
			return fmt.Sprintf("allocating the shard to this node will bring the node above the high watermark cluster setting "+
				"[cluster.routing.allocation.disk.watermark.high=%s] and cause it to have less than the minimum required [%s] of free space "+
				"(free: [%s], estimated shard size: [%s])", cfg.WatermarkText, settings.FormatBytes(float64(n.DiskBytes)-cfg.DiskLimit(n)),
				settings.FormatBytes(float64(n.DiskBytes-n.DiskUsed)), settings.FormatBytes(size))
		})
	} else {
		v.add(DecYes, "disk_threshold", func() string {
			return fmt.Sprintf("enough disk for shard on node, free: [%s], shard size: [%s], free after allocating shard: [%s]",
				settings.FormatBytes(float64(n.DiskBytes-n.DiskUsed)), settings.FormatBytes(size), settings.FormatBytes(float64(n.DiskBytes)-used))
		})
	}
	if v.done() {
		return v
	}
	// throttling: incoming on the target, outgoing on the node the data comes from
	var src *model.Node
	switch {
	case c != nil && c.Active():
		src = c.Node
	case !primary:
		src = model.RecoverySource(sh)
	}
	out := 0
	if src != nil {
		out = s.Outgoing[src.Ord]
	}
	in := s.Incoming[n.Ord]
	initial := primary && c.State == model.StateUnassigned
	switch {
	case initial:
		// A primary's first recovery, from an empty or its own store, counts against
		// node_initial_primaries_recoveries, not the peer-recovery limits.
		s.initialPrimariesThrottle(&v, n)
	case in >= cfg.Incoming:
		v.add(DecThrottle, "throttling", func() string {
			return fmt.Sprintf("reached the limit of incoming shard recoveries [%d], cluster setting "+
				"[cluster.routing.allocation.node_concurrent_incoming_recoveries=%d] (can also be set via "+
				"[cluster.routing.allocation.node_concurrent_recoveries])", in, cfg.Incoming)
		})
	case src != nil && out >= cfg.Outgoing:
		v.add(DecThrottle, "throttling", func() string {
			return fmt.Sprintf("reached the limit of outgoing shard recoveries [%d] on the node [%s] which holds the primary, "+
				"cluster setting [cluster.routing.allocation.node_concurrent_outgoing_recoveries=%d] (can also be set via "+
				"[cluster.routing.allocation.node_concurrent_recoveries])", out, src.ID, cfg.Outgoing)
		})
	default:
		v.add(DecYes, "throttling", func() string {
			return fmt.Sprintf("below shard recovery limit of outgoing: [%d < %d] incoming: [%d < %d]", out, cfg.Outgoing, in, cfg.Incoming)
		})
	}
	// awareness
	if why := s.awarenessCheck(sh, c, n, true); why != "" {
		v.add(DecNo, "awareness", func() string { return why })
	} else if len(cfg.Awareness) > 0 {
		v.add(DecYes, "awareness", func() string { return "node meets all awareness attribute requirements" })
	}
	if v.done() {
		return v
	}
	// shards_limit, in ShardsLimitAllocationDecider's order: the cluster's limit, the cluster's
	// primary limit, the index's, the index's primary limit. A relocating copy counts on its target.
	held := 0
	if ix.Counts != nil {
		held = ix.Counts[n.Ord]
	}
	indexCap, indexPrimCap := max(ix.TotalShardsCap, -1), max(ix.TotalPrimaryCap, -1)
	if indexCap == 0 {
		indexCap = -1
	}
	if indexPrimCap == 0 {
		indexPrimCap = -1
	}
	switch {
	case indexCap <= 0 && indexPrimCap <= 0 && cfg.TotalShardsPerNode <= 0 && cfg.TotalPrimaryShardsPerNode <= 0:
		v.add(DecYes, "shards_limit", func() string {
			return fmt.Sprintf("total shard limits are disabled: [index: %d, index primary: %d, cluster: %d, cluster primary: %d] <= 0",
				indexCap, indexPrimCap, cfg.TotalShardsPerNode, cfg.TotalPrimaryShardsPerNode)
		})
	case cfg.TotalShardsPerNode > 0 && n.ShardCount >= cfg.TotalShardsPerNode:
		v.add(DecNo, "shards_limit", func() string {
			return fmt.Sprintf("too many shards [%d] allocated to this node, cluster setting "+
				"[cluster.routing.allocation.total_shards_per_node=%d]", n.ShardCount, cfg.TotalShardsPerNode)
		})
	case primary && cfg.TotalPrimaryShardsPerNode > 0 && s.primariesOn(n, nil) >= cfg.TotalPrimaryShardsPerNode:
		v.add(DecNo, "shards_limit", func() string {
			return fmt.Sprintf("too many primary shards [%d] allocated to this node, cluster setting "+
				"[cluster.routing.allocation.total_primary_shards_per_node=%d]", s.primariesOn(n, nil), cfg.TotalPrimaryShardsPerNode)
		})
	case indexCap > 0 && held >= indexCap:
		v.add(DecNo, "shards_limit", func() string {
			return fmt.Sprintf("too many shards [%d] allocated to this node for index [%s], index setting "+
				"[index.routing.allocation.total_shards_per_node=%d]", held, ix.Name, indexCap)
		})
	case primary && indexPrimCap > 0 && s.primariesOn(n, ix) >= indexPrimCap:
		v.add(DecNo, "shards_limit", func() string {
			return fmt.Sprintf("too many primary shards [%d] allocated to this node for index [%s], index setting "+
				"[index.routing.allocation.total_primary_shards_per_node=%d]", s.primariesOn(n, ix), ix.Name, indexPrimCap)
		})
	default:
		v.add(DecYes, "shards_limit", func() string {
			return fmt.Sprintf("the shard count [%d] for this node is under the index limit [%d], index primary limit [%d], "+
				"cluster level node limit [%d] and cluster level primary node limit [%d]",
				n.ShardCount, indexCap, indexPrimCap, cfg.TotalShardsPerNode, cfg.TotalPrimaryShardsPerNode)
		})
	}
	return v
}

// overShardLimit says why copy c may not remain on n under the shard-count limits, as
// ShardsLimitAllocationDecider.canRemain: n holds more than a limit allows (a limit lowered after
// the copies were placed); "" when it may.
func (s *Allocator) overShardLimit(c *model.ShardCopy, n *model.Node) string {
	cfg, ix := s.Config(), c.Sh.Idx
	held := 0
	if ix.Counts != nil {
		held = ix.Counts[n.Ord]
	}
	switch {
	case cfg.TotalShardsPerNode > 0 && n.ShardCount > cfg.TotalShardsPerNode:
		return fmt.Sprintf("too many shards [%d] allocated to this node, cluster setting "+
			"[cluster.routing.allocation.total_shards_per_node=%d]", n.ShardCount, cfg.TotalShardsPerNode)
	case c.Primary && cfg.TotalPrimaryShardsPerNode > 0 && s.primariesOn(n, nil) > cfg.TotalPrimaryShardsPerNode:
		return fmt.Sprintf("too many primary shards [%d] allocated to this node, cluster setting "+
			"[cluster.routing.allocation.total_primary_shards_per_node=%d]", s.primariesOn(n, nil), cfg.TotalPrimaryShardsPerNode)
	case ix.TotalShardsCap > 0 && held > ix.TotalShardsCap:
		return fmt.Sprintf("too many shards [%d] allocated to this node for index [%s], index setting "+
			"[index.routing.allocation.total_shards_per_node=%d]", held, ix.Name, ix.TotalShardsCap)
	case c.Primary && ix.TotalPrimaryCap > 0 && s.primariesOn(n, ix) > ix.TotalPrimaryCap:
		return fmt.Sprintf("too many primary shards [%d] allocated to this node for index [%s], index setting "+
			"[index.routing.allocation.total_primary_shards_per_node=%d]", s.primariesOn(n, ix), ix.Name, ix.TotalPrimaryCap)
	}
	return ""
}

// primariesOn counts the primaries node n owns, of ix or (nil) of every index: started there, or
// relocating there; a primary relocating away is its target's, as OpenSearch's RoutingNode counts.
func (s *Allocator) primariesOn(n *model.Node, ix *model.Index) int {
	count := 0
	each := s.Indices
	if ix != nil {
		each = []*model.Index{ix}
	}
	for _, x := range each {
		if x.Counts != nil && x.Counts[n.Ord] == 0 {
			continue
		}
		for _, sh := range x.Shards {
			for _, c := range sh.Copies {
				if c.Primary && (c.Target == n || (c.Node == n && c.Target == nil)) {
					count++
				}
			}
		}
	}
	return count
}

// CanRemain runs the deciders that can send a started copy away: filters and the disk watermark.
func (s *Allocator) CanRemain(c *model.ShardCopy, explain bool) Verdict {
	cfg := s.Config()
	v := Verdict{explain: explain}
	n := c.Node
	if why := c.Sh.Idx.Filters.Check(n, "index"); why != "" {
		v.add(DecNo, "filter", func() string { return why })
	} else if why := cfg.Filters.Check(n, "cluster"); why != "" {
		v.add(DecNo, "filter", func() string { return why })
	} else {
		v.add(DecYes, "filter", func() string { return "node passes include/exclude/require filters" })
	}
	if why := s.awarenessCheck(c.Sh, c, n, false); why != "" {
		v.add(DecNo, "awareness", func() string { return why })
	}
	if why := s.overShardLimit(c, n); why != "" {
		v.add(DecNo, "shards_limit", func() string { return why })
	}
	if cfg.DiskEnabled && float64(n.DiskUsed-s.Leaving[n.Ord]) > cfg.DiskLimit(n) {
		v.add(DecNo, "disk_threshold", func() string {
			return fmt.Sprintf("the shard cannot remain on this node because it is above the high watermark cluster setting "+
				"[cluster.routing.allocation.disk.watermark.high=%s] and there is less than the required [%s] free space on node, actual free: [%s]",
				cfg.WatermarkText, settings.FormatBytes(float64(n.DiskBytes)-cfg.DiskLimit(n)), settings.FormatBytes(float64(n.DiskBytes-n.DiskUsed)))
		})
	} else {
		v.add(DecYes, "disk_threshold", func() string {
			return "there is enough disk on this node for the shard to remain, free: [" + settings.FormatBytes(float64(n.DiskBytes-n.DiskUsed)) + "]"
		})
	}
	return v
}

// CanRebalance is the cluster-wide rebalance gate: cluster.routing.rebalance.enable, allow_rebalance
// (by default only when every shard is active) and cluster_concurrent_rebalance.
func (s *Allocator) CanRebalance(explain bool) Verdict {
	cfg := s.Config()
	v := Verdict{explain: explain}
	if cfg.RebalanceEnable == "none" {
		v.add(DecNo, "enable", func() string {
			return "no rebalancing is allowed due to cluster setting [cluster.routing.rebalance.enable=none]"
		})
	} else {
		v.add(DecYes, "enable", func() string { return "all rebalancing is allowed" })
	}
	inactive, inactivePrimary, unassigned := s.InactiveShards()
	kind := "inactive"
	if unassigned {
		kind = "unassigned"
	}
	switch {
	case cfg.AllowRebalance == "indices_all_active" && inactive:
		v.add(DecNo, "cluster_rebalance", func() string {
			return "the cluster has " + kind + " shards and cluster setting [cluster.routing.allocation.allow_rebalance] is set to [indices_all_active]"
		})
	case cfg.AllowRebalance == "indices_primaries_active" && inactivePrimary:
		v.add(DecNo, "cluster_rebalance", func() string {
			return "the cluster has " + kind + " primary shards and cluster setting [cluster.routing.allocation.allow_rebalance] is set to [indices_primaries_active]"
		})
	default:
		v.add(DecYes, "cluster_rebalance", func() string { return "auto-rebalance is allowed" })
	}
	relocating := s.RelocatingCount()
	if cfg.ConcurrentRebalance >= 0 && relocating >= cfg.ConcurrentRebalance {
		v.add(DecThrottle, "concurrent_rebalance", func() string {
			return fmt.Sprintf("reached the limit of concurrently rebalancing shards [%d], cluster setting "+
				"[cluster.routing.allocation.cluster_concurrent_rebalance=%d]", relocating, cfg.ConcurrentRebalance)
		})
	} else {
		v.add(DecYes, "concurrent_rebalance", func() string {
			return fmt.Sprintf("below threshold [%d] for concurrent rebalances, current rebalance shard count [%d]", cfg.ConcurrentRebalance, relocating)
		})
	}
	return v
}

// Balance holds the weight function of OpenSearch's BalancedShardsAllocator:
// weight(node, index) = θshard·(shards(node) − avg) + θindex·(shards(node, index) − avg(index)).
type Balance struct {
	Cfg       *model.AllocConfig
	Nodes     []*model.Node // present nodes, in the seeded tie-break order
	avgShards float64
}

// NewBalance sets up the weight function over the present nodes for one allocation round.
func (s *Allocator) NewBalance() *Balance {
	b := &Balance{Cfg: s.Config()}
	for _, n := range s.NodeOrder {
		if n.Present {
			b.Nodes = append(b.Nodes, n)
		}
	}
	total := 0
	for _, ix := range s.Indices {
		total += len(ix.Shards) * (ix.Replicas + 1)
	}
	if len(b.Nodes) > 0 {
		b.avgShards = float64(total) / float64(len(b.Nodes))
	}
	return b
}

// Weight is weight(n, ix): how much heavier n is than the average node, overall and in ix.
func (b *Balance) Weight(n *model.Node, ix *model.Index) float64 {
	avgIndex := float64(len(ix.Shards)*(ix.Replicas+1)) / float64(len(b.Nodes))
	return b.Cfg.ThetaShard*(float64(n.ShardCount)-b.avgShards) + b.Cfg.ThetaIndex*(float64(ix.Counts[n.Ord])-avgIndex)
}

// bestNode picks the node with the lowest weight for ix where the deciders allow c, ties going to the
// earlier node in the seeded order. It returns the node and its decision (YES or THROTTLE), or nil.
func (s *Allocator) bestNode(b *Balance, sh *model.Shard, c *model.ShardCopy, skip *model.Node) (*model.Node, DecisionType) {
	var best *model.Node
	bestType := DecNo
	bestW := 0.0
	for _, n := range b.Nodes {
		if n == skip {
			continue
		}
		v := s.CanAllocate(sh, c, n, false, false)
		if v.Typ == DecNo {
			continue
		}
		w := b.Weight(n, sh.Idx)
		if best == nil || w < bestW {
			best, bestW, bestType = n, w, v.Typ
		}
	}
	return best, bestType
}

// Allocate is one round of OpenSearch's allocator, run between ticks: assign unassigned copies, move
// copies that may not remain where they are, then (when allowed) rebalance shard counts. With the
// es-weights rebalancer, Elasticsearch's Balancer does the whole round instead (esweights.go).
// It reports how many relocations the rebalancer started.
func (s *Allocator) Allocate() (rebalanced int) {
	s.Refresh()
	if len(s.PresentNodes()) == 0 {
		return 0
	}
	// Copies whose data is on a node back from a restart go there first (restart.go), as
	// OpenSearch's gateway allocator runs before the balancer.
	if s.AllocateExistingData() > 0 {
		s.Refresh()
	}
	if s.Rebalancer == model.RebalancerESWeights || s.Rebalancer == model.RebalancerESWeightsLive {
		return s.allocateESWeights()
	}
	if s.Rebalancer == model.RebalancerESWriteLoad {
		return s.allocateESWriteLoad()
	}
	b := s.NewBalance()
	s.allocateUnassigned(b)
	s.moveShards(b)
	if v := s.CanRebalance(false); v.Typ == DecYes && s.Rebalancer != model.RebalancerOff {
		rebalanced = s.rebalance(b)
	}
	return rebalanced
}

// AllocateAndMove assigns unassigned copies and moves copies that may no longer remain where they
// are, without rebalancing: OpenSearch's reroute after an index settings change.
func (s *Allocator) AllocateAndMove() {
	s.Refresh()
	b := s.NewBalance()
	if len(b.Nodes) > 0 {
		s.allocateUnassigned(b)
		s.moveShards(b)
	}
}

// allocateUnassigned assigns unassigned copies, in OpenSearch's order (sortUnassigned), each to its
// lowest-weight node.
func (s *Allocator) allocateUnassigned(b *Balance) {
	pending := s.allocatable()
	sortUnassigned(pending)
	for _, c := range pending {
		n, t := s.bestNode(b, c.Sh, c, nil)
		if n == nil || t != DecYes {
			continue
		}
		s.Initialize(c, n, false)
		model.Place(n, c.Sh.Idx)
	}
}

// allocatable lists the unassigned copies the allocator may assign now: their data is not lost
// and their node_left delay is over.
func (s *Allocator) allocatable() []*model.ShardCopy {
	var out []*model.ShardCopy
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.State == model.StateUnassigned && !c.LostData && !s.NowLocked().Before(c.DelayedUntil) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// moveShards relocates started copies whose node they may no longer remain on (filters, watermark).
func (s *Allocator) moveShards(b *Balance) {
	for _, n := range b.Nodes {
		for _, c := range s.CopiesOn(n) {
			if c.State != model.StateStarted || s.CanRemain(c, false).Typ != DecNo {
				continue
			}
			to, t := s.bestNode(b, c.Sh, c, n)
			if to == nil || t != DecYes {
				continue
			}
			s.RelocatePlaced(c, to, model.AllocatorMove(c, n))
		}
	}
}

// rebalance is BalancedShardsAllocator's balanceByWeights: per index, most unbalanced first, move a
// started copy from the heaviest node to the lightest while their weight difference exceeds the
// threshold, up to cluster_concurrent_rebalance relocations in flight.
func (s *Allocator) rebalance(b *Balance) int {
	cfg := b.Cfg
	started := 0
	budget := cfg.ConcurrentRebalance - s.RelocatingCount()
	if cfg.ConcurrentRebalance < 0 {
		budget = int(^uint(0) >> 1)
	}
	if budget <= 0 || len(b.Nodes) < 2 {
		return 0
	}
	type indexDelta struct {
		ix    *model.Index
		delta float64
	}
	order := make([]indexDelta, 0, len(s.Indices))
	for _, ix := range s.routingOrder() {
		lo, hi := 0.0, 0.0
		for i, n := range b.Nodes {
			w := b.Weight(n, ix)
			if i == 0 || w < lo {
				lo = w
			}
			if i == 0 || w > hi {
				hi = w
			}
		}
		order = append(order, indexDelta{ix, hi - lo})
	}
	slices.SortStableFunc(order, func(x, y indexDelta) int { return cmp.Compare(y.delta, x.delta) })
	nodes := make([]*model.Node, 0, len(b.Nodes))
	weights := make([]float64, 0, len(b.Nodes))
	for _, od := range order {
		ix := od.ix
		nodes = nodes[:0]
		for _, n := range b.Nodes {
			if ix.Counts[n.Ord] > 0 || (ix.Filters.Check(n, "index") == "" && cfg.Filters.Check(n, "cluster") == "") {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) < 2 {
			continue
		}
		sortByWeight := func() {
			slices.SortStableFunc(nodes, func(x, y *model.Node) int { return cmp.Compare(b.Weight(x, ix), b.Weight(y, ix)) })
			weights = weights[:0]
			for _, n := range nodes {
				weights = append(weights, b.Weight(n, ix))
			}
		}
		sortByWeight()
		lo, hi := 0, len(nodes)-1
		for {
			minNode, maxNode := nodes[lo], nodes[hi]
			advance := true
			if ix.Counts[maxNode.Ord] > 0 {
				delta := weights[hi] - weights[lo]
				if delta <= cfg.Threshold+0.001 {
					// OpenSearch's lessThan rounds deltas near the threshold to it, avoiding swaps that change nothing.
					if !(lo > 0 && hi-1 > 0 && weights[hi-1]-weights[0] > cfg.Threshold) {
						break
					}
				} else if moved, simulated := s.tryRelocate(b, minNode, maxNode, ix); moved || simulated {
					if moved {
						started++
						if started >= budget {
							return started
						}
					}
					sortByWeight()
					lo, hi = 0, len(nodes)-1
					advance = false
				}
			}
			if !advance {
				continue
			}
			if lo >= hi-1 && lo == 0 {
				break
			}
			if lo < hi-1 {
				lo++
			} else {
				lo = 0
				hi--
			}
		}
	}
	return started
}

// tryRelocate moves the highest-numbered started copy of ix on maxNode that the deciders allow onto
// minNode. A throttled move is made in the model only, as OpenSearch does, so the loop goes on.
func (s *Allocator) tryRelocate(b *Balance, minNode, maxNode *model.Node, ix *model.Index) (moved, simulated bool) {
	for i := len(ix.Shards) - 1; i >= 0; i-- {
		sh := ix.Shards[i]
		for _, c := range sh.Copies {
			if c.Node != maxNode || c.State != model.StateStarted {
				continue
			}
			v := s.CanAllocate(sh, c, minNode, false, false)
			switch v.Typ {
			case DecNo:
				continue
			case DecThrottle:
				model.Unplace(maxNode, ix)
				model.Place(minNode, ix)
				return false, true
			}
			s.RelocatePlaced(c, minNode, model.RelocBuiltin)
			return true, false
		}
	}
	return false, false
}

// awarenessCheck is OpenSearch's AwarenessAllocationDecider: over each awareness attribute, the
// shard's copies (relocation targets in place of their sources) may hold at most
// ceil(copies / values) in one value, values being those of the present nodes and, with forced
// awareness, the attribute's forced values too: a forced value no node has still counts, so the
// copies it would hold stay unassigned rather than doubling up elsewhere. moveTo counts c on
// n, as allocating it there would. It returns why not, or "" when the node meets every attribute.
func (s *Allocator) awarenessCheck(sh *model.Shard, c *model.ShardCopy, n *model.Node, moveTo bool) string {
	cfg := s.Config()
	for _, attr := range cfg.Awareness {
		val, ok := model.NodeAttr(n, attr)
		if !ok {
			return fmt.Sprintf("node does not contain the awareness attribute [%s]; required attributes cluster setting "+
				"[cluster.routing.allocation.awareness.attributes=%s]", attr, strings.Join(cfg.Awareness, ","))
		}
		values := map[string]bool{}
		for _, v := range cfg.Forced[attr] {
			values[v] = true
		}
		for _, pn := range s.Nodes {
			if v, ok := model.NodeAttr(pn, attr); ok && pn.Present {
				values[v] = true
			}
		}
		per := map[string]int{}
		for _, o := range sh.Copies {
			at := o.Node
			if o.Target != nil {
				at = o.Target
			}
			if at == nil || (o.State != model.StateStarted && o.State != model.StateInitializing && o.State != model.StateRelocating) {
				continue
			}
			if v, ok := model.NodeAttr(at, attr); ok {
				per[v]++
			}
		}
		if moveTo {
			if c != nil && c.Node != nil {
				from := c.Node
				if c.Target != nil {
					from = c.Target
				}
				if from != n {
					if v, ok := model.NodeAttr(from, attr); ok {
						per[v]--
					}
					per[val]++
				}
			} else {
				per[val]++
			}
		}
		copies := sh.Idx.Replicas + 1
		avg, left := copies/len(values), copies%len(values)
		required := avg
		if avg == 0 {
			required, left = 1, 0
		}
		most := required
		if left > 0 {
			most++
		}
		if per[val] > most {
			return fmt.Sprintf("there are too many copies of the shard allocated to nodes with attribute [%s], there are [%d] total "+
				"configured shard copies for this shard id and [%d] total attribute values, expected the allocated shard count per "+
				"attribute [%d] to be less than or equal to the upper bound of the required number of shards per attribute [%d]",
				attr, copies, len(values), per[val], most)
		}
	}
	return ""
}

// PlaceInitial puts copies without a placement where OpenSearch's allocator would, primaries of every
// index first, and starts them at once: the scenario begins with a settled cluster.
func (s *Allocator) PlaceInitial() {
	s.Refresh()
	b := s.NewBalance()
	for _, primaries := range []bool{true, false} {
		for _, ix := range s.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					if c.State != model.StateUnassigned || c.Primary != primaries {
						continue
					}
					n, _ := s.bestNode(b, sh, c, nil)
					if n == nil {
						continue
					}
					c.State, c.Node, c.AllocID = model.StateStarted, n, model.RandomID(s.Rng)
					c.UnassignedReason = ""
					c.ResetCounters()
					model.Place(n, ix)
				}
			}
		}
	}
	s.StateVersion = 1
}

// initialPrimariesThrottle is ThrottlingAllocationDecider for a primary's first recovery: at most
// cluster.routing.allocation.node_initial_primaries_recoveries (4) of them initializing on n.
func (s *Allocator) initialPrimariesThrottle(v *Verdict, n *model.Node) {
	limit := s.IntSetting("cluster.routing.allocation.node_initial_primaries_recoveries", defaultInitialPrimariesRecoveries)
	ongoing := 0
	for _, r := range s.Recoveries {
		if r.Target == n && r.Source == nil && !r.Relocation {
			ongoing++
		}
	}
	if ongoing >= limit {
		v.add(DecThrottle, "throttling", func() string {
			return fmt.Sprintf("reached the limit of ongoing initial primary recoveries [%d], cluster setting "+
				"[cluster.routing.allocation.node_initial_primaries_recoveries=%d]", ongoing, limit)
		})
		return
	}
	v.add(DecYes, "throttling", func() string {
		return fmt.Sprintf("below primary recovery limit of [%d]", limit)
	})
}

// defaultInitialPrimariesRecoveries is OpenSearch's
// cluster.routing.allocation.node_initial_primaries_recoveries default.
const defaultInitialPrimariesRecoveries = 4
