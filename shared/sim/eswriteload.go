package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Elasticsearch's write-load decider defaults, WriteLoadConstraintSettings (cluster.routing.allocation.
// write_load_decider.*), and the stats it reads.
const (
	// eswlQueueLatency is queue_latency_threshold: a node whose WRITE queue latency reaches it, at
	// eswlHotspotUtilization or more, is hot-spotting.
	eswlQueueLatency = 3.0 // seconds
	// eswlHotspotUtilization is hotspot_utilization_threshold.
	eswlHotspotUtilization = 0.50
	// eswlAllocationUtilization is allocation_utilization_threshold: a node at or past it, or that a
	// shard would take to it, is NOT_PREFERRED as a target.
	eswlAllocationUtilization = 0.90
	// eswlMaxShardProportion is hotspot_max_shard_write_load_proportion_threshold: a hot node whose
	// hottest shard carries this share of its shards' write load is left alone, since moving that
	// shard only moves the hotspot.
	eswlMaxShardProportion = 0.95
	// eswlMinShardWriteLoad is the hot-spot minimum shard write load, in threads: a shard at or below
	// it may remain on a hot node, as moving it relieves nothing.
	eswlMinShardWriteLoad = 0.001
	// eswlMoveOrderRatio is PrioritiseByShardLoadComparator.THRESHOLD_RATIO: shards near half the
	// node's hottest are moved first.
	eswlMoveOrderRatio = 0.5
	// eswlStatsInterval is cluster.info.update.interval: how often the master polls node and shard
	// stats (ClusterInfo).
	eswlStatsInterval = 30.0 // seconds
	// eswlRecentHalfLife is indices.stats.recent_write_load.half_life, the half-life of a shard copy's
	// RECENT write load (shard_write_load_type's default).
	eswlRecentHalfLife = 300.0 // seconds
)

// esNodeStats is what Elasticsearch knows of a node's WRITE pool: NodeUsageStatsForThreadPools'
// ThreadPoolUsageStats.
type esNodeStats struct {
	threads      int
	utilization  float64 // averageThreadPoolUtilization: busy threads over threads, at most 1
	queueLatency float64 // maxThreadPoolQueueLatencyMillis, in seconds
}

// hotspotting is WriteLoadConstraintDecider.nodeIsHotspotting.
func (st esNodeStats) hotspotting() bool {
	return st.queueLatency >= eswlQueueLatency && st.utilization >= eswlHotspotUtilization
}

// esClusterInfo is one poll of ClusterInfo: node WRITE pool stats and each shard's RECENT write load
// (the largest over its copies; a shard with no active copy has none).
type esClusterInfo struct {
	nodes      map[*node]esNodeStats
	shardLoads map[*shard]float64
}

// esWriteLoadState is what the es-writeload baseline keeps between rounds: every active copy's
// recency-weighted write load, as each data node tracks it, and the last ClusterInfo poll.
type esWriteLoadState struct {
	recent map[*shardCopy]*recentWriteLoad
	info   *esClusterInfo
	infoAt float64 // elapsed seconds at the poll
}

// recentWriteLoad is IndexingStats' RECENT write load of one copy on its node: an exponentially
// weighted moving rate of WRITE thread time, reset when the copy is created anew on a node.
type recentWriteLoad struct {
	allocID  string
	num, den float64
}

func (r *recentWriteLoad) rate() float64 {
	if r.den <= 0 {
		return 0
	}
	return r.num / r.den
}

// observe folds each active copy's WRITE threads served this tick into its recent write load, and
// polls ClusterInfo when eswlStatsInterval has passed since the last poll.
func (w *esWriteLoadState) observe(s *Sim) {
	dt := s.tickSecs
	decay := math.Exp(-math.Ln2 * dt / eswlRecentHalfLife)
	live := map[*shardCopy]bool{}
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if !c.active() || c.node == nil || !c.node.present {
					continue
				}
				live[c] = true
				r := w.recent[c]
				if r == nil || r.allocID != c.allocID {
					r = &recentWriteLoad{allocID: c.allocID}
					w.recent[c] = r
				}
				r.num = r.num*decay + c.indexCurrent*dt
				r.den = r.den*decay + dt
			}
		}
	}
	for c := range w.recent {
		if !live[c] {
			delete(w.recent, c)
		}
	}
	now := s.elapsedSeconds()
	if w.info != nil && now-w.infoAt < eswlStatsInterval-1e-9 {
		return
	}
	info := &esClusterInfo{nodes: map[*node]esNodeStats{}, shardLoads: map[*shard]float64{}}
	for _, n := range s.nodes {
		if n.present {
			info.nodes[n] = esNodeStats{
				threads:      n.write.threads,
				utilization:  n.write.lastActive / float64(n.write.threads),
				queueLatency: n.write.lastWait,
			}
		}
	}
	for c, r := range w.recent {
		if l, ok := info.shardLoads[c.sh]; !ok || r.rate() > l {
			info.shardLoads[c.sh] = r.rate()
		}
	}
	w.info, w.infoAt = info, now
}

// esWriteLoadRound is one allocation round's view of write load: the polled ClusterInfo and, as
// ShardMovementWriteLoadSimulator keeps it, each node's stats after the moves started since the poll
// and during the round. A move takes the shard's load from its source and adds it to its target;
// the source's queue latency is taken to be 0 once any shard leaves it, so it is not hot again
// until fresh stats show it is.
type esWriteLoadRound struct {
	s    *Sim
	info *esClusterInfo
	sim  map[*node]esNodeStats
}

func newESWriteLoadRound(s *Sim, info *esClusterInfo) *esWriteLoadRound {
	r := &esWriteLoadRound{s: s, info: info, sim: make(map[*node]esNodeStats, len(info.nodes))}
	for n, st := range info.nodes {
		r.sim[n] = st
	}
	// DesiredBalanceComputer starts from the routing with every initializing copy simulated started.
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				switch {
				case c.state == stateRelocating && c.target != nil:
					r.simulateMove(sh, c.node, c.target)
				case c.state == stateInitializing && c.node != nil:
					r.simulateMove(sh, nil, c.node)
				}
			}
		}
	}
	return r
}

// simulateMove is ShardMovementWriteLoadSimulator.simulateShardStarted for a copy of sh that moves
// from one node (nil for a new copy) to another.
func (r *esWriteLoadRound) simulateMove(sh *shard, from, to *node) {
	load, known := r.info.shardLoads[sh]
	if st, ok := r.sim[from]; ok && from != nil {
		if known {
			st.utilization = max(st.utilization-load/float64(st.threads), 0)
		}
		st.queueLatency = 0
		r.sim[from] = st
	}
	if st, ok := r.sim[to]; ok && known {
		st.utilization += load / float64(st.threads)
		r.sim[to] = st
	}
}

// wlReason says why the write-load decider answered as it did.
type wlReason int

const (
	wlNoStats            wlReason = iota // no stats for the node: the decider takes no action
	wlHasRoom                            // a target stays under the allocation threshold with the shard
	wlTargetBusy                         // a target is at or past the allocation threshold already
	wlTargetHot                          // a target was hot-spotting at the last poll (its waiting period)
	wlTargetWouldExceed                  // the shard would take a target to the allocation threshold
	wlNotHot                             // the node is not hot-spotting
	wlSingleShardHotspot                 // one shard carries the node's hotspot: moving it moves the hotspot
	wlNegligibleShard                    // the shard's write load is too small to relieve anything
	wlHotspot                            // the node is hot-spotting and the shard can relieve it
)

// wlDecision is one WriteLoadConstraintDecider answer with its reason and the figures it compared.
type wlDecision struct {
	notPreferred bool
	reason       wlReason
	value, limit float64 // the measured figure and the threshold it was held to
}

func (d wlDecision) String() string {
	verdict := "YES"
	if d.notPreferred {
		verdict = "NOT_PREFERRED"
	}
	var why string
	switch d.reason {
	case wlNoStats:
		why = "no write load stats for the node"
	case wlHasRoom:
		why = fmt.Sprintf("utilization would become %.3f, under %.2f", d.value, d.limit)
	case wlTargetBusy:
		why = fmt.Sprintf("utilization %.3f already at or past %.2f", d.value, d.limit)
	case wlTargetHot:
		why = fmt.Sprintf("hot-spotting at the last stats (queue latency %.1f s): no shards until fresh stats", d.value)
	case wlTargetWouldExceed:
		why = fmt.Sprintf("utilization would become %.3f, at or past %.2f", d.value, d.limit)
	case wlNotHot:
		why = "not hot-spotting"
	case wlSingleShardHotspot:
		why = fmt.Sprintf("one shard carries %.0f%% of the node's write load, at or past %.0f%%", 100*d.value, 100*d.limit)
	case wlNegligibleShard:
		why = fmt.Sprintf("shard write load %.4f at or below %.3f", d.value, d.limit)
	case wlHotspot:
		why = fmt.Sprintf("hot-spotting, queue latency %.1f s at or past %.0f s", d.value, d.limit)
	}
	return verdict + ": " + why
}

// canAllocate is WriteLoadConstraintDecider.canAllocate for a copy of sh moving to n.
func (r *esWriteLoadRound) canAllocate(sh *shard, n *node) wlDecision {
	st, ok := r.sim[n]
	if !ok {
		return wlDecision{reason: wlNoStats}
	}
	if st.utilization >= eswlAllocationUtilization {
		return wlDecision{notPreferred: true, reason: wlTargetBusy, value: st.utilization, limit: eswlAllocationUtilization}
	}
	if polled := r.info.nodes[n]; polled.hotspotting() {
		return wlDecision{notPreferred: true, reason: wlTargetHot, value: polled.queueLatency, limit: eswlQueueLatency}
	}
	after := st.utilization + r.info.shardLoads[sh]/float64(st.threads)
	if after >= eswlAllocationUtilization {
		return wlDecision{notPreferred: true, reason: wlTargetWouldExceed, value: after, limit: eswlAllocationUtilization}
	}
	return wlDecision{reason: wlHasRoom, value: after, limit: eswlAllocationUtilization}
}

// canRemain is WriteLoadConstraintDecider.canRemain for copy c on its node.
func (r *esWriteLoadRound) canRemain(c *shardCopy) wlDecision {
	n := c.node
	st, ok := r.sim[n]
	if !ok {
		return wlDecision{reason: wlNoStats}
	}
	if !st.hotspotting() {
		return wlDecision{reason: wlNotHot, value: st.queueLatency, limit: eswlQueueLatency}
	}
	if p := r.maxShardProportion(n); p >= eswlMaxShardProportion {
		return wlDecision{reason: wlSingleShardHotspot, value: p, limit: eswlMaxShardProportion}
	}
	if load := r.info.shardLoads[c.sh]; load <= eswlMinShardWriteLoad {
		return wlDecision{reason: wlNegligibleShard, value: load, limit: eswlMinShardWriteLoad}
	}
	return wlDecision{notPreferred: true, reason: wlHotspot, value: st.queueLatency, limit: eswlQueueLatency}
}

// accepts reports whether the write-load decider says YES to a copy of sh on n; the balancer's
// rebalancing moves and its moves of copies that may not remain take YES targets only.
func (r *esWriteLoadRound) accepts(sh *shard, n *node) bool {
	return r == nil || !r.canAllocate(sh, n).notPreferred
}

// startedOn lists the started copies on n, in routing order.
func (r *esWriteLoadRound) startedOn(n *node) []*shardCopy {
	var out []*shardCopy
	for _, c := range r.s.copiesOn(n) {
		if c.state == stateStarted {
			out = append(out, c)
		}
	}
	return out
}

// maxShardProportion is RoutingAllocation.maxShardWriteLoadProportionForNode: the hottest started
// shard's share of the write load of n's started shards; 0 when they have none.
func (r *esWriteLoadRound) maxShardProportion(n *node) float64 {
	hi, sum := 0.0, 0.0
	for _, c := range r.startedOn(n) {
		l := r.info.shardLoads[c.sh]
		hi, sum = max(hi, l), sum+l
	}
	if sum <= 0 {
		return 0
	}
	return hi / sum
}

// moveOrder sorts copies as PrioritiseByShardLoadComparator does, most desirable to move first:
// loads in [half the maximum, the maximum) lowest first, then loads under half the maximum highest
// first, then the maximum, then copies with no known load. The sort is stable.
func moveOrder(copies []*shardCopy, loads map[*shard]float64) {
	const missing = -1.0
	load := func(c *shardCopy) float64 {
		if l, ok := loads[c.sh]; ok {
			return l
		}
		return missing
	}
	hi := missing
	for _, c := range copies {
		hi = max(hi, load(c))
	}
	if hi == missing {
		return
	}
	threshold := hi * eswlMoveOrderRatio
	slices.SortStableFunc(copies, func(x, y *shardCopy) int {
		lx, ly := load(x), load(y)
		if (lx == missing) != (ly == missing) {
			if lx == missing {
				return 1
			}
			return -1
		}
		if lx == missing {
			return 0
		}
		if lx < hi && ly < hi {
			overX, overY := lx >= threshold, ly >= threshold
			switch {
			case overX && overY:
				return cmp.Compare(lx, ly)
			case overX:
				return -1
			case overY:
				return 1
			}
			return cmp.Compare(ly, lx)
		}
		return cmp.Compare(lx, ly)
	})
}

// shardMoveOrder is WriteLoadConstraintDecider.shardMoveOrder: n's started copies in the order to
// try moving them, or nil when n is not hot-spotting or one shard carries its hotspot.
func (r *esWriteLoadRound) shardMoveOrder(n *node) []*shardCopy {
	st, ok := r.sim[n]
	if !ok || !st.hotspotting() || r.maxShardProportion(n) >= eswlMaxShardProportion {
		return nil
	}
	copies := r.startedOn(n)
	moveOrder(copies, r.info.shardLoads)
	return copies
}

// moveNotPreferred is the Balancer's pass over copies whose deciders say NOT_PREFERRED to their
// staying, after those told NO have moved: hot nodes, highest queue latency first
// (DefaultNonPreferredShardIteratorFactory), their copies in shardMoveOrder. A copy moves to the
// node of least weight for its index whose deciders all say YES; when every other node says NO or
// NOT_PREFERRED it stays. A throttled target is the desired node, taken in the model only. Each
// move zeroes its source's queue latency in the round's stats, so a hot node gives one copy a round
// and none while that relocation is in flight. It returns the relocations it started.
func (r *esWriteLoadRound) moveNotPreferred(b *esBalancer) int {
	s := r.s
	var hot []*node
	for _, n := range b.nodes {
		if st, ok := r.sim[n]; ok && st.hotspotting() {
			hot = append(hot, n)
		}
	}
	slices.SortStableFunc(hot, func(x, y *node) int { return cmp.Compare(r.sim[y].queueLatency, r.sim[x].queueLatency) })
	started := 0
	for _, from := range hot {
		for _, c := range r.shardMoveOrder(from) {
			if !b.startedOn(c, from) || !r.canRemain(c).notPreferred || s.canRemain(c, false).typ == decNo {
				continue
			}
			ix := c.sh.idx
			b.reset(ix, 0, len(b.nodes))
			for _, to := range b.nodes {
				if to == from {
					continue
				}
				t := s.canAllocate(c.sh, c, to, false, false).typ
				if t == decNo || !r.accepts(c.sh, to) {
					continue
				}
				load := b.shardLoad[ix.ord][c.sh.num]
				b.remove(from, ix, load)
				b.add(to, ix, load)
				if t == decYes {
					s.relocatePlaced(c, to, relocBaseline)
					started++
				} else {
					b.modelAt[c] = to
				}
				r.simulateMove(c.sh, from, to)
				break
			}
		}
	}
	return started
}

// allocateESWriteLoad is allocateESWeights with Elasticsearch's WriteLoadConstraintDecider among the
// deciders and the Balancer's NOT_PREFERRED pass after its moves of copies that may not remain.
// refresh must have run. It returns the relocations its hotspot moves and rebalancing started.
func (s *Sim) allocateESWriteLoad() int {
	if s.eswl == nil {
		s.eswl = &esWriteLoadState{recent: map[*shardCopy]*recentWriteLoad{}}
	}
	s.eswl.observe(s)
	b := s.newESBalancer()
	b.allocateUnassigned()
	b.moveShards()
	// The round's stats start from the routing the two passes above left, relocations included.
	r := newESWriteLoadRound(s, s.eswl.info)
	b.wl = r
	started := r.moveNotPreferred(b)
	if v := s.canRebalance(false); v.typ != decYes || len(b.nodes) < 2 {
		return started
	}
	return started + b.balance()
}
