package sim

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
)

// decisionType orders decisions from best to worst, as OpenSearch's Decision.Type.
type decisionType int

const (
	decYes decisionType = iota
	decThrottle
	decNo
)

func (d decisionType) String() string { return [...]string{"YES", "THROTTLE", "NO"}[d] }

// decision is one decider's answer with its reason, as OpenSearch's Decision.Single.
type decision struct {
	typ         decisionType
	decider     string
	explanation string
}

func (d decision) String() string { return fmt.Sprintf("%s(%s)", d.typ, d.explanation) }

// verdict collects decider answers; with explain it keeps every one, otherwise only the worst type.
type verdict struct {
	explain   bool
	typ       decisionType
	decisions []decision
}

// add records a decision. why is only called when explanations are wanted, to keep the
// allocator's inner loop free of string formatting.
func (v *verdict) add(t decisionType, decider string, why func() string) {
	v.typ = max(v.typ, t)
	if v.explain {
		v.decisions = append(v.decisions, decision{typ: t, decider: decider, explanation: why()})
	}
}

// done reports whether deciding can stop early: a NO is final when nobody asked why.
func (v *verdict) done() bool { return !v.explain && v.typ == decNo }

// multiString is Decision.Multi.toString: each decision in brackets.
func (v *verdict) multiString() string {
	s := ""
	for _, d := range v.decisions {
		s += "[" + d.String() + "]"
	}
	return s
}

// allocConfig is the allocation settings in force, derived from cluster settings and the scenario.
type allocConfig struct {
	incoming, outgoing     int
	concurrentRebalance    int
	rebalanceEnable        string
	allocationEnable       string
	allowRebalance         string
	thetaShard, thetaIndex float64
	threshold              float64
	diskEnabled            bool
	watermarkUsed          float64 // fraction of disk; negative when the watermark is in free bytes
	watermarkFree          float64
	watermarkText          string
	totalShardsPerNode     int
	awareness              []string
	// forced holds, per awareness attribute, its forced values (awareness.force.<attr>.values).
	forced       map[string][]string
	recoveryRate float64
	filters      filterSet
}

// config returns the allocation settings, recomputed after every settings change.
func (s *Sim) config() *allocConfig {
	if s.cfg != nil {
		return s.cfg
	}
	c := &allocConfig{}
	conc := s.intSetting("cluster.routing.allocation.node_concurrent_recoveries", defaultNodeConcurrentRecoveries)
	c.incoming = s.intSetting("cluster.routing.allocation.node_concurrent_incoming_recoveries", conc)
	c.outgoing = s.intSetting("cluster.routing.allocation.node_concurrent_outgoing_recoveries", conc)
	c.concurrentRebalance = s.intSetting("cluster.routing.allocation.cluster_concurrent_rebalance", defaultClusterConcurrentRebalance)
	c.rebalanceEnable = s.settingOr("cluster.routing.rebalance.enable", "all")
	c.allocationEnable = s.settingOr("cluster.routing.allocation.enable", "all")
	c.allowRebalance = s.settingOr("cluster.routing.allocation.allow_rebalance", "indices_all_active")
	ib := s.floatSetting("cluster.routing.allocation.balance.index", defaultIndexBalance)
	sb := s.floatSetting("cluster.routing.allocation.balance.shard", defaultShardBalance)
	if sum := ib + sb; sum > 0 {
		c.thetaIndex, c.thetaShard = ib/sum, sb/sum
	}
	c.threshold = s.floatSetting("cluster.routing.allocation.balance.threshold", defaultBalanceThreshold)
	c.diskEnabled = s.settingOr("cluster.routing.allocation.disk.threshold_enabled", "true") == "true"
	c.watermarkText = s.settingOr("cluster.routing.allocation.disk.watermark.high", percentString(s.watermarkDefault))
	used, free, err := parseWatermark(c.watermarkText)
	if err != nil {
		used, free = s.watermarkDefault, 0
	}
	c.watermarkUsed, c.watermarkFree = used, free
	c.totalShardsPerNode = s.intSetting("cluster.routing.allocation.total_shards_per_node", -1)
	for _, a := range strings.Split(s.settingOr("cluster.routing.allocation.awareness.attributes", ""), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.awareness = append(c.awareness, a)
		}
	}
	c.forced = map[string][]string{}
	for _, a := range c.awareness {
		if v, ok := s.setting(awarenessForcePrefix + a + awarenessForceSuffix); ok {
			c.forced[a] = cluster.FilterPatterns(v)
		}
	}
	c.recoveryRate = s.recoveryDefault
	if v, ok := s.setting("indices.recovery.max_bytes_per_sec"); ok {
		if b, err := parseByteSize(v); err == nil && b > 0 {
			c.recoveryRate = b
		}
	}
	flat := map[string]string{}
	for k, v := range s.persistent {
		if isClusterFilterKey(k) {
			flat[k] = v
		}
	}
	for k, v := range s.transient {
		if isClusterFilterKey(k) {
			flat[k] = v
		}
	}
	c.filters = compileFilters(flat, clusterFilterPrefix)
	s.cfg = c
	return c
}

// diskLimit is the disk use a node may reach under the high watermark.
func (c *allocConfig) diskLimit(n *node) float64 {
	if c.watermarkUsed >= 0 {
		return c.watermarkUsed * float64(n.diskBytes)
	}
	return float64(n.diskBytes) - c.watermarkFree
}

// recoverySource is the node a new copy of sh recovers from: the node of its active primary.
func recoverySource(sh *shard) *node {
	if p := sh.primary(); p != nil && p.active() {
		return p.node
	}
	return nil
}

// canAllocate runs the allocation deciders for copy c of sh onto n, in OpenSearch's order.
// explicit is true for reroute commands, which ignore cluster.routing.allocation.enable.
func (s *Sim) canAllocate(sh *shard, c *shardCopy, n *node, explain, explicit bool) verdict {
	cfg := s.config()
	v := verdict{explain: explain}
	ix := sh.idx
	primary := c != nil && c.primary
	// replica_after_primary_active
	if primary {
		v.add(decYes, "replica_after_primary_active", func() string { return "shard is primary and can be allocated" })
	} else if p := sh.primary(); p == nil || !p.active() {
		v.add(decNo, "replica_after_primary_active", func() string { return "primary shard for this replica is not yet active" })
	} else {
		v.add(decYes, "replica_after_primary_active", func() string { return "primary shard for this replica is already active" })
	}
	if v.done() {
		return v
	}
	// enable
	switch {
	case explicit:
		v.add(decYes, "enable", func() string {
			return "explicitly ignoring any disabling of allocation due to manual allocation commands via the reroute API"
		})
	case cfg.allocationEnable == "none":
		v.add(decNo, "enable", func() string {
			return "no allocations are allowed due to cluster setting [cluster.routing.allocation.enable=none]"
		})
	case cfg.allocationEnable != "all" && !primary:
		v.add(decNo, "enable", func() string {
			return "replica allocations are forbidden due to cluster setting [cluster.routing.allocation.enable=" + cfg.allocationEnable + "]"
		})
	default:
		v.add(decYes, "enable", func() string { return "all allocations are allowed" })
	}
	if v.done() {
		return v
	}
	// filter
	if why := ix.filters.check(n, "index"); why != "" {
		v.add(decNo, "filter", func() string { return why })
	} else if why := cfg.filters.check(n, "cluster"); why != "" {
		v.add(decNo, "filter", func() string { return why })
	} else {
		v.add(decYes, "filter", func() string { return "node passes include/exclude/require filters" })
	}
	if v.done() {
		return v
	}
	// same_shard
	if other := sh.onNode(n); other != nil {
		v.add(decNo, "same_shard", func() string {
			if other == c {
				return "this shard is already allocated to this node [" + other.routingString() + "]"
			}
			return "a copy of this shard is already allocated to this node [" + other.routingString() + "]"
		})
	} else {
		v.add(decYes, "same_shard", func() string { return "this node does not hold a copy of this shard" })
	}
	if v.done() {
		return v
	}
	// disk_threshold
	size := float64(ix.shardBytes)
	if !cfg.diskEnabled {
		v.add(decYes, "disk_threshold", func() string { return "the disk threshold decider is disabled" })
	} else if used := float64(n.diskUsed) + size; used > cfg.diskLimit(n) {
		v.add(decNo, "disk_threshold", func() string {
			return fmt.Sprintf("allocating the shard to this node will bring the node above the high watermark cluster setting "+
				"[cluster.routing.allocation.disk.watermark.high=%s] and cause it to have less than the minimum required [%s] of free space "+
				"(free: [%s], estimated shard size: [%s])", cfg.watermarkText, formatBytes(float64(n.diskBytes)-cfg.diskLimit(n)),
				formatBytes(float64(n.diskBytes-n.diskUsed)), formatBytes(size))
		})
	} else {
		v.add(decYes, "disk_threshold", func() string {
			return fmt.Sprintf("enough disk for shard on node, free: [%s], shard size: [%s], free after allocating shard: [%s]",
				formatBytes(float64(n.diskBytes-n.diskUsed)), formatBytes(size), formatBytes(float64(n.diskBytes)-used))
		})
	}
	if v.done() {
		return v
	}
	// throttling: incoming on the target, outgoing on the node the data comes from
	var src *node
	switch {
	case c != nil && c.active():
		src = c.node
	case !primary:
		src = recoverySource(sh)
	}
	out := 0
	if src != nil {
		out = s.outgoing[src.ord]
	}
	in := s.incoming[n.ord]
	initial := primary && c.state == stateUnassigned
	switch {
	case initial:
		// A primary's first recovery, from an empty or its own store, counts against
		// node_initial_primaries_recoveries, not the peer-recovery limits.
		s.initialPrimariesThrottle(&v, n)
	case in >= cfg.incoming:
		v.add(decThrottle, "throttling", func() string {
			return fmt.Sprintf("reached the limit of incoming shard recoveries [%d], cluster setting "+
				"[cluster.routing.allocation.node_concurrent_incoming_recoveries=%d] (can also be set via "+
				"[cluster.routing.allocation.node_concurrent_recoveries])", in, cfg.incoming)
		})
	case src != nil && out >= cfg.outgoing:
		v.add(decThrottle, "throttling", func() string {
			return fmt.Sprintf("reached the limit of outgoing shard recoveries [%d] on the node [%s] which holds the primary, "+
				"cluster setting [cluster.routing.allocation.node_concurrent_outgoing_recoveries=%d] (can also be set via "+
				"[cluster.routing.allocation.node_concurrent_recoveries])", out, src.id, cfg.outgoing)
		})
	default:
		v.add(decYes, "throttling", func() string {
			return fmt.Sprintf("below shard recovery limit of outgoing: [%d < %d] incoming: [%d < %d]", out, cfg.outgoing, in, cfg.incoming)
		})
	}
	// awareness
	if why := s.awarenessCheck(sh, c, n, true); why != "" {
		v.add(decNo, "awareness", func() string { return why })
	} else if len(cfg.awareness) > 0 {
		v.add(decYes, "awareness", func() string { return "node meets all awareness attribute requirements" })
	}
	if v.done() {
		return v
	}
	// shards_limit
	held := 0
	if ix.counts != nil {
		held = ix.counts[n.ord]
	}
	switch {
	case ix.totalShardsCap > 0 && held >= ix.totalShardsCap:
		v.add(decNo, "shards_limit", func() string {
			return fmt.Sprintf("too many shards [%d] allocated to this node for index [%s], index setting "+
				"[index.routing.allocation.total_shards_per_node=%d]", held, ix.name, ix.totalShardsCap)
		})
	case cfg.totalShardsPerNode > 0 && n.shardCount >= cfg.totalShardsPerNode:
		v.add(decNo, "shards_limit", func() string {
			return fmt.Sprintf("too many shards [%d] allocated to this node, cluster setting "+
				"[cluster.routing.allocation.total_shards_per_node=%d]", n.shardCount, cfg.totalShardsPerNode)
		})
	default:
		v.add(decYes, "shards_limit", func() string {
			indexCap := ix.totalShardsCap
			if indexCap == 0 {
				indexCap = -1
			}
			return fmt.Sprintf("total shard limits are disabled: [index: %d, cluster: %d] <= 0", indexCap, cfg.totalShardsPerNode)
		})
	}
	return v
}

// canRemain runs the deciders that can send a started copy away: filters and the disk watermark.
func (s *Sim) canRemain(c *shardCopy, explain bool) verdict {
	cfg := s.config()
	v := verdict{explain: explain}
	n := c.node
	if why := c.sh.idx.filters.check(n, "index"); why != "" {
		v.add(decNo, "filter", func() string { return why })
	} else if why := cfg.filters.check(n, "cluster"); why != "" {
		v.add(decNo, "filter", func() string { return why })
	} else {
		v.add(decYes, "filter", func() string { return "node passes include/exclude/require filters" })
	}
	if why := s.awarenessCheck(c.sh, c, n, false); why != "" {
		v.add(decNo, "awareness", func() string { return why })
	}
	if cfg.diskEnabled && float64(n.diskUsed-s.leaving[n.ord]) > cfg.diskLimit(n) {
		v.add(decNo, "disk_threshold", func() string {
			return fmt.Sprintf("the shard cannot remain on this node because it is above the high watermark cluster setting "+
				"[cluster.routing.allocation.disk.watermark.high=%s] and there is less than the required [%s] free space on node, actual free: [%s]",
				cfg.watermarkText, formatBytes(float64(n.diskBytes)-cfg.diskLimit(n)), formatBytes(float64(n.diskBytes-n.diskUsed)))
		})
	} else {
		v.add(decYes, "disk_threshold", func() string {
			return "there is enough disk on this node for the shard to remain, free: [" + formatBytes(float64(n.diskBytes-n.diskUsed)) + "]"
		})
	}
	return v
}

// canRebalance is the cluster-wide rebalance gate: cluster.routing.rebalance.enable, allow_rebalance
// (by default only when every shard is active) and cluster_concurrent_rebalance.
func (s *Sim) canRebalance(explain bool) verdict {
	cfg := s.config()
	v := verdict{explain: explain}
	if cfg.rebalanceEnable == "none" {
		v.add(decNo, "enable", func() string {
			return "no rebalancing is allowed due to cluster setting [cluster.routing.rebalance.enable=none]"
		})
	} else {
		v.add(decYes, "enable", func() string { return "all rebalancing is allowed" })
	}
	inactive, inactivePrimary, unassigned := s.inactiveShards()
	kind := "inactive"
	if unassigned {
		kind = "unassigned"
	}
	switch {
	case cfg.allowRebalance == "indices_all_active" && inactive:
		v.add(decNo, "cluster_rebalance", func() string {
			return "the cluster has " + kind + " shards and cluster setting [cluster.routing.allocation.allow_rebalance] is set to [indices_all_active]"
		})
	case cfg.allowRebalance == "indices_primaries_active" && inactivePrimary:
		v.add(decNo, "cluster_rebalance", func() string {
			return "the cluster has " + kind + " primary shards and cluster setting [cluster.routing.allocation.allow_rebalance] is set to [indices_primaries_active]"
		})
	default:
		v.add(decYes, "cluster_rebalance", func() string { return "auto-rebalance is allowed" })
	}
	relocating := s.relocatingCount()
	if cfg.concurrentRebalance >= 0 && relocating >= cfg.concurrentRebalance {
		v.add(decThrottle, "concurrent_rebalance", func() string {
			return fmt.Sprintf("reached the limit of concurrently rebalancing shards [%d], cluster setting "+
				"[cluster.routing.allocation.cluster_concurrent_rebalance=%d]", relocating, cfg.concurrentRebalance)
		})
	} else {
		v.add(decYes, "concurrent_rebalance", func() string {
			return fmt.Sprintf("below threshold [%d] for concurrent rebalances, current rebalance shard count [%d]", cfg.concurrentRebalance, relocating)
		})
	}
	return v
}

// inactiveShards reports whether any copy is unassigned or initializing, whether any primary is,
// and whether any copy is unassigned. A relocation's target does not count: OpenSearch's
// RoutingNodes counts as inactive only the shards "initializing without being relocated", so
// allow_rebalance indices_all_active lets the balancer go on while relocations are in flight, up to
// cluster_concurrent_rebalance.
func (s *Sim) inactiveShards() (inactive, primary, unassigned bool) {
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if !c.active() {
					inactive = true
					if c.primary {
						primary = true
					}
				}
				if c.state == stateUnassigned {
					unassigned = true
				}
			}
		}
	}
	return inactive, primary, unassigned
}

func (s *Sim) relocatingCount() int {
	n := 0
	for _, r := range s.recoveries {
		if r.relocation {
			n++
		}
	}
	return n
}

// flight is what is in flight when a reroute arrives: relocations started by reroute commands
// (external), the others, and each node's recoveries.
type flight struct {
	external, others   int
	incoming, outgoing []int
	// externalAt counts, per node ord, the reroute relocations in flight from or to it.
	externalAt []int
}

// inFlight counts the recoveries in flight; refresh must have run.
func (s *Sim) inFlight() flight {
	f := flight{incoming: slices.Clone(s.incoming), outgoing: slices.Clone(s.outgoing), externalAt: make([]int, len(s.nodes))}
	for _, r := range s.recoveries {
		switch {
		case !r.relocation:
		case r.external:
			f.external++
			f.externalAt[r.source.ord]++
			f.externalAt[r.target.ord]++
		default:
			f.others++
		}
	}
	return f
}

// refresh recomputes per-node shard counts, disk use and recovery counts, and per-index counts.
func (s *Sim) refresh() {
	nn := len(s.nodes)
	if len(s.incoming) != nn {
		s.incoming, s.outgoing, s.leaving = make([]int, nn), make([]int, nn), make([]int64, nn)
	}
	clear(s.incoming)
	clear(s.outgoing)
	clear(s.leaving)
	for _, n := range s.nodes {
		n.shardCount, n.diskUsed = 0, 0
	}
	for _, ix := range s.indices {
		if len(ix.counts) != nn {
			ix.counts = make([]int, nn)
		} else {
			clear(ix.counts)
		}
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if c.node == nil {
					continue
				}
				if c.target != nil {
					// A relocating copy counts toward its target in the balancer's model and on both disks.
					c.target.shardCount++
					c.target.diskUsed += ix.shardBytes
					ix.counts[c.target.ord]++
					c.node.diskUsed += ix.shardBytes
					s.leaving[c.node.ord] += ix.shardBytes
					continue
				}
				c.node.shardCount++
				c.node.diskUsed += ix.shardBytes
				ix.counts[c.node.ord]++
			}
		}
	}
	for _, r := range s.recoveries {
		s.incoming[r.target.ord]++
		if r.source != nil {
			s.outgoing[r.source.ord]++
		}
	}
}

// balance holds the weight function of OpenSearch's BalancedShardsAllocator:
// weight(node, index) = θshard·(shards(node) − avg) + θindex·(shards(node, index) − avg(index)).
type balance struct {
	cfg       *allocConfig
	nodes     []*node // present nodes, in the seeded tie-break order
	avgShards float64
}

func (s *Sim) newBalance() *balance {
	b := &balance{cfg: s.config()}
	for _, n := range s.nodeOrder {
		if n.present {
			b.nodes = append(b.nodes, n)
		}
	}
	total := 0
	for _, ix := range s.indices {
		total += len(ix.shards) * (ix.replicas + 1)
	}
	if len(b.nodes) > 0 {
		b.avgShards = float64(total) / float64(len(b.nodes))
	}
	return b
}

func (b *balance) weight(n *node, ix *index) float64 {
	avgIndex := float64(len(ix.shards)*(ix.replicas+1)) / float64(len(b.nodes))
	return b.cfg.thetaShard*(float64(n.shardCount)-b.avgShards) + b.cfg.thetaIndex*(float64(ix.counts[n.ord])-avgIndex)
}

// place records a new copy of ix on n in the counts the balancer uses.
func place(n *node, ix *index) {
	n.shardCount++
	n.diskUsed += ix.shardBytes
	ix.counts[n.ord]++
}

// unplace reverses place.
func unplace(n *node, ix *index) {
	n.shardCount--
	n.diskUsed -= ix.shardBytes
	ix.counts[n.ord]--
}

// bestNode picks the node with the lowest weight for ix where the deciders allow c, ties going to the
// earlier node in the seeded order. It returns the node and its decision (YES or THROTTLE), or nil.
func (s *Sim) bestNode(b *balance, sh *shard, c *shardCopy, skip *node) (*node, decisionType) {
	var best *node
	bestType := decNo
	bestW := 0.0
	for _, n := range b.nodes {
		if n == skip {
			continue
		}
		v := s.canAllocate(sh, c, n, false, false)
		if v.typ == decNo {
			continue
		}
		w := b.weight(n, sh.idx)
		if best == nil || w < bestW {
			best, bestW, bestType = n, w, v.typ
		}
	}
	return best, bestType
}

// Allocate is one round of OpenSearch's allocator, run between ticks: assign unassigned copies, move
// copies that may not remain where they are, then (when allowed) rebalance shard counts. With the
// es-weights rebalancer, Elasticsearch's Balancer does the whole round instead (esweights.go).
// It reports how many relocations the rebalancer started.
func (s *Sim) Allocate() (rebalanced int) {
	s.refresh()
	if len(s.presentNodes()) == 0 {
		return 0
	}
	// Copies whose data is on a node back from a restart go there first (restart.go), as
	// OpenSearch's gateway allocator runs before the balancer.
	if s.AllocateExistingData() > 0 {
		s.refresh()
	}
	if s.rebalancer == RebalancerESWeights || s.rebalancer == RebalancerESWeightsLive {
		return s.allocateESWeights()
	}
	if s.rebalancer == RebalancerESWriteLoad {
		return s.allocateESWriteLoad()
	}
	b := s.newBalance()
	s.allocateUnassigned(b)
	s.moveShards(b)
	if v := s.canRebalance(false); v.typ == decYes && s.rebalancer != RebalancerOff {
		rebalanced = s.rebalance(b)
	}
	return rebalanced
}

// AllocateAndMove assigns unassigned copies and moves copies that may no longer remain where they
// are, without rebalancing: OpenSearch's reroute after an index settings change.
func (s *Sim) AllocateAndMove() {
	s.refresh()
	b := s.newBalance()
	if len(b.nodes) > 0 {
		s.allocateUnassigned(b)
		s.moveShards(b)
	}
}

// allocateUnassigned assigns unassigned copies, in OpenSearch's order (sortUnassigned), each to its
// lowest-weight node.
func (s *Sim) allocateUnassigned(b *balance) {
	pending := s.allocatable()
	sortUnassigned(pending)
	for _, c := range pending {
		n, t := s.bestNode(b, c.sh, c, nil)
		if n == nil || t != decYes {
			continue
		}
		s.initialize(c, n, false)
		place(n, c.sh.idx)
	}
}

// allocatable lists the unassigned copies the allocator may assign now: their data is not lost
// and their node_left delay is over.
func (s *Sim) allocatable() []*shardCopy {
	var out []*shardCopy
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if c.state == stateUnassigned && !c.lostData && !s.now().Before(c.delayedUntil) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// moveShards relocates started copies whose node they may no longer remain on (filters, watermark).
func (s *Sim) moveShards(b *balance) {
	for _, n := range b.nodes {
		for _, c := range s.copiesOn(n) {
			if c.state != stateStarted || s.canRemain(c, false).typ != decNo {
				continue
			}
			to, t := s.bestNode(b, c.sh, c, n)
			if to == nil || t != decYes {
				continue
			}
			s.relocatePlaced(c, to, allocatorMove(c, n))
		}
	}
}

// copiesOn yields the copies on node n with their index, index by index; an index holding none of
// them when its turn comes is passed over.
func (s *Sim) copiesOn(n *node) iter.Seq2[*index, *shardCopy] {
	return func(yield func(*index, *shardCopy) bool) {
		for _, ix := range s.indices {
			if ix.counts[n.ord] == 0 {
				continue
			}
			for _, sh := range ix.shards {
				for _, c := range sh.copies {
					if c.node == n && !yield(ix, c) {
						return
					}
				}
			}
		}
	}
}

// rebalance is BalancedShardsAllocator's balanceByWeights: per index, most unbalanced first, move a
// started copy from the heaviest node to the lightest while their weight difference exceeds the
// threshold, up to cluster_concurrent_rebalance relocations in flight.
func (s *Sim) rebalance(b *balance) int {
	cfg := b.cfg
	started := 0
	budget := cfg.concurrentRebalance - s.relocatingCount()
	if cfg.concurrentRebalance < 0 {
		budget = int(^uint(0) >> 1)
	}
	if budget <= 0 || len(b.nodes) < 2 {
		return 0
	}
	type indexDelta struct {
		ix    *index
		delta float64
	}
	order := make([]indexDelta, 0, len(s.indices))
	for _, ix := range s.routingOrder() {
		lo, hi := 0.0, 0.0
		for i, n := range b.nodes {
			w := b.weight(n, ix)
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
	nodes := make([]*node, 0, len(b.nodes))
	weights := make([]float64, 0, len(b.nodes))
	for _, od := range order {
		ix := od.ix
		nodes = nodes[:0]
		for _, n := range b.nodes {
			if ix.counts[n.ord] > 0 || (ix.filters.check(n, "index") == "" && cfg.filters.check(n, "cluster") == "") {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) < 2 {
			continue
		}
		sortByWeight := func() {
			slices.SortStableFunc(nodes, func(x, y *node) int { return cmp.Compare(b.weight(x, ix), b.weight(y, ix)) })
			weights = weights[:0]
			for _, n := range nodes {
				weights = append(weights, b.weight(n, ix))
			}
		}
		sortByWeight()
		lo, hi := 0, len(nodes)-1
		for {
			minNode, maxNode := nodes[lo], nodes[hi]
			advance := true
			if ix.counts[maxNode.ord] > 0 {
				delta := weights[hi] - weights[lo]
				if delta <= cfg.threshold+0.001 {
					// OpenSearch's lessThan rounds deltas near the threshold to it, avoiding swaps that change nothing.
					if !(lo > 0 && hi-1 > 0 && weights[hi-1]-weights[0] > cfg.threshold) {
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
func (s *Sim) tryRelocate(b *balance, minNode, maxNode *node, ix *index) (moved, simulated bool) {
	for i := len(ix.shards) - 1; i >= 0; i-- {
		sh := ix.shards[i]
		for _, c := range sh.copies {
			if c.node != maxNode || c.state != stateStarted {
				continue
			}
			v := s.canAllocate(sh, c, minNode, false, false)
			switch v.typ {
			case decNo:
				continue
			case decThrottle:
				unplace(maxNode, ix)
				place(minNode, ix)
				return false, true
			}
			s.relocatePlaced(c, minNode, relocBuiltin)
			return true, false
		}
	}
	return false, false
}

// relocKind says who started a relocation.
type relocKind int

const (
	relocExternal  relocKind = iota // a reroute move command
	relocBuiltin                    // the built-in rebalancer
	relocAllocator                  // the allocator moving a copy that may not remain (cluster filters, watermark)
	relocBaseline                   // a baseline balancer run in place of OpenSearch's: counted as moves
	// relocFilter is the allocator moving a copy off a node its index's allocation filters exclude.
	// Index filters are only ever set through the settings API, by shardwise's allocation-filter
	// strategy in a simulation, so these are its moves: counted as moves, and as undone when
	// OpenSearch's balancer moves the copy back.
	relocFilter
)

// allocatorMove is the kind of the allocator's relocation of c off n: relocFilter when its index's
// filters exclude n, else relocAllocator.
func allocatorMove(c *shardCopy, n *node) relocKind {
	if c.sh.idx.filters.check(n, "index") != "" {
		return relocFilter
	}
	return relocAllocator
}

// relocatePlaced starts started copy c's relocation to node to and moves it in the counts a
// balancing round places copies by: it counts on to, and its source's disk keeps its bytes until the
// relocation ends.
func (s *Sim) relocatePlaced(c *shardCopy, to *node, kind relocKind) {
	from, ix := c.node, c.sh.idx
	s.startRelocation(c, to, kind)
	unplace(from, ix)
	place(to, ix)
	from.diskUsed += ix.shardBytes
	s.leaving[from.ord] += ix.shardBytes
}

// startRelocation begins moving started copy c to node to. Its load stays on the source until done.
func (s *Sim) startRelocation(c *shardCopy, to *node, kind relocKind) {
	ix := c.sh.idx
	s.recSeq++
	r := &recovery{
		seq: s.recSeq, copy: c, relocation: true, source: c.node, target: to,
		bytes: float64(ix.shardBytes), external: kind == relocExternal || kind == relocFilter,
	}
	c.state, c.target, c.targetAllocID, c.rec = stateRelocating, to, randomID(s.rng), r
	s.recoveries = append(s.recoveries, r)
	s.incoming[to.ord]++
	s.outgoing[c.node.ord]++
	switch kind {
	case relocBuiltin:
		s.res.BuiltinRelocations++
		if c.external {
			s.res.MovesUndoneByBuiltin++
		}
		c.sh.movedSinceCmd = true
	case relocAllocator:
		s.res.AllocatorRelocations++
		c.sh.movedSinceCmd = true
	case relocFilter:
		s.res.AllocatorRelocations++
		s.res.Moves++
		s.res.BytesMoved += ix.shardBytes
	case relocBaseline:
		s.res.Moves++
		s.res.BytesMoved += ix.shardBytes
		c.sh.movedSinceCmd = true
	}
	s.changed()
}

// initialize starts unassigned copy c on n: a replica recovers from its primary, a primary starts empty.
func (s *Sim) initialize(c *shardCopy, n *node, external bool) {
	ix := c.sh.idx
	s.recSeq++
	r := &recovery{seq: s.recSeq, copy: c, target: n, external: external}
	if !c.primary {
		r.source = recoverySource(c.sh)
		r.bytes = float64(ix.shardBytes)
	}
	c.state, c.node, c.allocID, c.rec = stateInitializing, n, randomID(s.rng), r
	c.unassignedReason, c.delayedUntil, c.dataOn = "", s.now(), nil
	c.resetCounters()
	s.recoveries = append(s.recoveries, r)
	s.incoming[n.ord]++
	if r.source != nil {
		s.outgoing[r.source.ord]++
	}
	c.sh.movedSinceCmd = true
	s.changed()
}

// cancelRecovery stops r; a relocating copy stays started on its source.
func (s *Sim) cancelRecovery(r *recovery) {
	s.recoveries = slices.DeleteFunc(s.recoveries, func(x *recovery) bool { return x == r })
	c := r.copy
	c.rec = nil
	if r.relocation {
		c.state, c.target, c.targetAllocID = stateStarted, nil, ""
	}
	s.changed()
}

// presentNodes lists the nodes in the cluster, in scenario order.
func (s *Sim) presentNodes() []*node {
	out := make([]*node, 0, len(s.nodes))
	for _, n := range s.nodes {
		if n.present {
			out = append(out, n)
		}
	}
	return out
}

// settingOr, intSetting and floatSetting read a cluster setting: transient, then persistent, then the
// simulator's defaults.
func (s *Sim) setting(key string) (string, bool) {
	if v, ok := s.transient[key]; ok {
		return v, true
	}
	if v, ok := s.persistent[key]; ok {
		return v, true
	}
	v, ok := s.defaults[key]
	return v, ok
}

func (s *Sim) settingOr(key, def string) string {
	if v, ok := s.setting(key); ok {
		return v
	}
	return def
}

func (s *Sim) intSetting(key string, def int) int {
	if v, ok := s.setting(key); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func (s *Sim) floatSetting(key string, def float64) float64 {
	if v, ok := s.setting(key); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}

// nodeAttr is a node's value of an awareness attribute.
func nodeAttr(n *node, attr string) (string, bool) {
	v, ok := n.attrs()[attr]
	return v, ok
}

// awarenessCheck is OpenSearch's AwarenessAllocationDecider: over each awareness attribute, the
// shard's copies (relocation targets in place of their sources) may hold at most
// ceil(copies / values) in one value, values being those of the present nodes and, with forced
// awareness, the attribute's forced values too: a forced value no node has still counts, so the
// copies it would hold stay unassigned rather than doubling up elsewhere. moveTo counts c on
// n, as allocating it there would. It returns why not, or "" when the node meets every attribute.
func (s *Sim) awarenessCheck(sh *shard, c *shardCopy, n *node, moveTo bool) string {
	cfg := s.config()
	for _, attr := range cfg.awareness {
		val, ok := nodeAttr(n, attr)
		if !ok {
			return fmt.Sprintf("node does not contain the awareness attribute [%s]; required attributes cluster setting "+
				"[cluster.routing.allocation.awareness.attributes=%s]", attr, strings.Join(cfg.awareness, ","))
		}
		values := map[string]bool{}
		for _, v := range cfg.forced[attr] {
			values[v] = true
		}
		for _, pn := range s.nodes {
			if v, ok := nodeAttr(pn, attr); ok && pn.present {
				values[v] = true
			}
		}
		per := map[string]int{}
		for _, o := range sh.copies {
			at := o.node
			if o.target != nil {
				at = o.target
			}
			if at == nil || (o.state != stateStarted && o.state != stateInitializing && o.state != stateRelocating) {
				continue
			}
			if v, ok := nodeAttr(at, attr); ok {
				per[v]++
			}
		}
		if moveTo {
			if c != nil && c.node != nil {
				from := c.node
				if c.target != nil {
					from = c.target
				}
				if from != n {
					if v, ok := nodeAttr(from, attr); ok {
						per[v]--
					}
					per[val]++
				}
			} else {
				per[val]++
			}
		}
		copies := sh.idx.replicas + 1
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
