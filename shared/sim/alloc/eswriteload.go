package alloc

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/shardwise/shardwise/shared/sim/model"
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

// EsNodeStats is what Elasticsearch knows of a node's WRITE pool: NodeUsageStatsForThreadPools'
// ThreadPoolUsageStats.
type EsNodeStats struct {
	Threads      int
	Utilization  float64 // averageThreadPoolUtilization: busy threads over threads, at most 1
	QueueLatency float64 // maxThreadPoolQueueLatencyMillis, in seconds
}

// Hotspotting is WriteLoadConstraintDecider.nodeIsHotspotting.
func (st EsNodeStats) Hotspotting() bool {
	return st.QueueLatency >= eswlQueueLatency && st.Utilization >= eswlHotspotUtilization
}

// EsClusterInfo is one poll of ClusterInfo: node WRITE pool stats and each shard's RECENT write load
// (the largest over its copies; a shard with no active copy has none).
type EsClusterInfo struct {
	Nodes      map[*model.Node]EsNodeStats
	ShardLoads map[*model.Shard]float64
}

// esWriteLoadState is what the es-writeload baseline keeps between rounds: every active copy's
// recency-weighted write load, as each data node tracks it, and the last ClusterInfo poll.
type esWriteLoadState struct {
	recent map[*model.ShardCopy]*recentWriteLoad
	info   *EsClusterInfo
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
func (w *esWriteLoadState) observe(s *Allocator) {
	dt := s.TickSecs
	decay := math.Exp(-math.Ln2 * dt / eswlRecentHalfLife)
	live := map[*model.ShardCopy]bool{}
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if !c.Active() || c.Node == nil || !c.Node.Present {
					continue
				}
				live[c] = true
				r := w.recent[c]
				if r == nil || r.allocID != c.AllocID {
					r = &recentWriteLoad{allocID: c.AllocID}
					w.recent[c] = r
				}
				r.num = r.num*decay + c.IndexCurrent*dt
				r.den = r.den*decay + dt
			}
		}
	}
	for c := range w.recent {
		if !live[c] {
			delete(w.recent, c)
		}
	}
	now := s.ElapsedSeconds()
	if w.info != nil && now-w.infoAt < eswlStatsInterval-1e-9 {
		return
	}
	info := &EsClusterInfo{Nodes: map[*model.Node]EsNodeStats{}, ShardLoads: map[*model.Shard]float64{}}
	for _, n := range s.Nodes {
		if n.Present {
			info.Nodes[n] = EsNodeStats{
				Threads:      n.Write.Threads,
				Utilization:  n.Write.LastActive / float64(n.Write.Threads),
				QueueLatency: n.Write.LastWait,
			}
		}
	}
	for c, r := range w.recent {
		if l, ok := info.ShardLoads[c.Sh]; !ok || r.rate() > l {
			info.ShardLoads[c.Sh] = r.rate()
		}
	}
	w.info, w.infoAt = info, now
}

// EsWriteLoadRound is one allocation round's view of write load: the polled ClusterInfo and, as
// ShardMovementWriteLoadSimulator keeps it, each node's stats after the moves started since the poll
// and during the round. A move takes the shard's load from its source and adds it to its target;
// the source's queue latency is taken to be 0 once any shard leaves it, so it is not hot again
// until fresh stats show it is.
type EsWriteLoadRound struct {
	s    *Allocator
	info *EsClusterInfo
	Sim  map[*model.Node]EsNodeStats
}

// NewESWriteLoadRound starts a round from the polled info, with initializing copies counted as
// started, as DesiredBalanceComputer does.
func NewESWriteLoadRound(s *Allocator, info *EsClusterInfo) *EsWriteLoadRound {
	r := &EsWriteLoadRound{s: s, info: info, Sim: make(map[*model.Node]EsNodeStats, len(info.Nodes))}
	for n, st := range info.Nodes {
		r.Sim[n] = st
	}
	// DesiredBalanceComputer starts from the routing with every initializing copy simulated started.
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				switch {
				case c.State == model.StateRelocating && c.Target != nil:
					r.SimulateMove(sh, c.Node, c.Target)
				case c.State == model.StateInitializing && c.Node != nil:
					r.SimulateMove(sh, nil, c.Node)
				}
			}
		}
	}
	return r
}

// SimulateMove is ShardMovementWriteLoadSimulator.simulateShardStarted for a copy of sh that moves
// from one node (nil for a new copy) to another.
func (r *EsWriteLoadRound) SimulateMove(sh *model.Shard, from, to *model.Node) {
	load, known := r.info.ShardLoads[sh]
	if st, ok := r.Sim[from]; ok && from != nil {
		if known {
			st.Utilization = max(st.Utilization-load/float64(st.Threads), 0)
		}
		st.QueueLatency = 0
		r.Sim[from] = st
	}
	if st, ok := r.Sim[to]; ok && known {
		st.Utilization += load / float64(st.Threads)
		r.Sim[to] = st
	}
}

// wlReason says why the write-load decider answered as it did.
type wlReason int

// The write-load decider's reasons, named so that tests can check why it answered, not only what.
const (
	WlNoStats            wlReason = iota // no stats for the node: the decider takes no action
	WlHasRoom                            // a target stays under the allocation threshold with the shard
	WlTargetBusy                         // a target is at or past the allocation threshold already
	WlTargetHot                          // a target was hot-spotting at the last poll (its waiting period)
	WlTargetWouldExceed                  // the shard would take a target to the allocation threshold
	WlNotHot                             // the node is not hot-spotting
	WlSingleShardHotspot                 // one shard carries the node's hotspot: moving it moves the hotspot
	WlNegligibleShard                    // the shard's write load is too small to relieve anything
	WlHotspot                            // the node is hot-spotting and the shard can relieve it
)

// WlDecision is one WriteLoadConstraintDecider answer with its reason and the figures it compared.
type WlDecision struct {
	NotPreferred bool
	Reason       wlReason
	Value, Limit float64 // the measured figure and the threshold it was held to
}

func (d WlDecision) String() string {
	verdict := "YES"
	if d.NotPreferred {
		verdict = "NOT_PREFERRED"
	}
	var why string
	switch d.Reason {
	case WlNoStats:
		why = "no write load stats for the node"
	case WlHasRoom:
		why = fmt.Sprintf("utilization would become %.3f, under %.2f", d.Value, d.Limit)
	case WlTargetBusy:
		why = fmt.Sprintf("utilization %.3f already at or past %.2f", d.Value, d.Limit)
	case WlTargetHot:
		why = fmt.Sprintf("hot-spotting at the last stats (queue latency %.1f s): no shards until fresh stats", d.Value)
	case WlTargetWouldExceed:
		why = fmt.Sprintf("utilization would become %.3f, at or past %.2f", d.Value, d.Limit)
	case WlNotHot:
		why = "not hot-spotting"
	case WlSingleShardHotspot:
		why = fmt.Sprintf("one shard carries %.0f%% of the node's write load, at or past %.0f%%", 100*d.Value, 100*d.Limit)
	case WlNegligibleShard:
		why = fmt.Sprintf("shard write load %.4f at or below %.3f", d.Value, d.Limit)
	case WlHotspot:
		why = fmt.Sprintf("hot-spotting, queue latency %.1f s at or past %.0f s", d.Value, d.Limit)
	}
	return verdict + ": " + why
}

// CanAllocate is WriteLoadConstraintDecider.canAllocate for a copy of sh moving to n.
func (r *EsWriteLoadRound) CanAllocate(sh *model.Shard, n *model.Node) WlDecision {
	st, ok := r.Sim[n]
	if !ok {
		return WlDecision{Reason: WlNoStats}
	}
	if st.Utilization >= eswlAllocationUtilization {
		return WlDecision{NotPreferred: true, Reason: WlTargetBusy, Value: st.Utilization, Limit: eswlAllocationUtilization}
	}
	if polled := r.info.Nodes[n]; polled.Hotspotting() {
		return WlDecision{NotPreferred: true, Reason: WlTargetHot, Value: polled.QueueLatency, Limit: eswlQueueLatency}
	}
	after := st.Utilization + r.info.ShardLoads[sh]/float64(st.Threads)
	if after >= eswlAllocationUtilization {
		return WlDecision{NotPreferred: true, Reason: WlTargetWouldExceed, Value: after, Limit: eswlAllocationUtilization}
	}
	return WlDecision{Reason: WlHasRoom, Value: after, Limit: eswlAllocationUtilization}
}

// CanRemain is WriteLoadConstraintDecider.canRemain for copy c on its node.
func (r *EsWriteLoadRound) CanRemain(c *model.ShardCopy) WlDecision {
	n := c.Node
	st, ok := r.Sim[n]
	if !ok {
		return WlDecision{Reason: WlNoStats}
	}
	if !st.Hotspotting() {
		return WlDecision{Reason: WlNotHot, Value: st.QueueLatency, Limit: eswlQueueLatency}
	}
	if p := r.maxShardProportion(n); p >= eswlMaxShardProportion {
		return WlDecision{Reason: WlSingleShardHotspot, Value: p, Limit: eswlMaxShardProportion}
	}
	if load := r.info.ShardLoads[c.Sh]; load <= eswlMinShardWriteLoad {
		return WlDecision{Reason: WlNegligibleShard, Value: load, Limit: eswlMinShardWriteLoad}
	}
	return WlDecision{NotPreferred: true, Reason: WlHotspot, Value: st.QueueLatency, Limit: eswlQueueLatency}
}

// accepts reports whether the write-load decider says YES to a copy of sh on n; the balancer's
// rebalancing moves and its moves of copies that may not remain take YES targets only.
func (r *EsWriteLoadRound) accepts(sh *model.Shard, n *model.Node) bool {
	return r == nil || !r.CanAllocate(sh, n).NotPreferred
}

// startedOn lists the started copies on n, in routing order.
func (r *EsWriteLoadRound) startedOn(n *model.Node) []*model.ShardCopy {
	var out []*model.ShardCopy
	for _, c := range r.s.CopiesOn(n) {
		if c.State == model.StateStarted {
			out = append(out, c)
		}
	}
	return out
}

// maxShardProportion is RoutingAllocation.maxShardWriteLoadProportionForNode: the hottest started
// shard's share of the write load of n's started shards; 0 when they have none.
func (r *EsWriteLoadRound) maxShardProportion(n *model.Node) float64 {
	hi, sum := 0.0, 0.0
	for _, c := range r.startedOn(n) {
		l := r.info.ShardLoads[c.Sh]
		hi, sum = max(hi, l), sum+l
	}
	if sum <= 0 {
		return 0
	}
	return hi / sum
}

// MoveOrder sorts copies as PrioritiseByShardLoadComparator does, most desirable to move first:
// loads in [half the maximum, the maximum) lowest first, then loads under half the maximum highest
// first, then the maximum, then copies with no known load. The sort is stable.
func MoveOrder(copies []*model.ShardCopy, loads map[*model.Shard]float64) {
	const missing = -1.0
	load := func(c *model.ShardCopy) float64 {
		if l, ok := loads[c.Sh]; ok {
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
	slices.SortStableFunc(copies, func(x, y *model.ShardCopy) int {
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
func (r *EsWriteLoadRound) shardMoveOrder(n *model.Node) []*model.ShardCopy {
	st, ok := r.Sim[n]
	if !ok || !st.Hotspotting() || r.maxShardProportion(n) >= eswlMaxShardProportion {
		return nil
	}
	copies := r.startedOn(n)
	MoveOrder(copies, r.info.ShardLoads)
	return copies
}

// moveNotPreferred is the Balancer's pass over copies whose deciders say NOT_PREFERRED to their
// staying, after those told NO have moved: hot nodes, highest queue latency first
// (DefaultNonPreferredShardIteratorFactory), their copies in shardMoveOrder. A copy moves to the
// node of least weight for its index whose deciders all say YES; when every other node says NO or
// NOT_PREFERRED it stays. A throttled target is the desired node, taken in the model only. Each
// move zeroes its source's queue latency in the round's stats, so a hot node gives one copy a round
// and none while that relocation is in flight. It returns the relocations it started.
func (r *EsWriteLoadRound) moveNotPreferred(b *ESBalancer) int {
	s := r.s
	var hot []*model.Node
	for _, n := range b.nodes {
		if st, ok := r.Sim[n]; ok && st.Hotspotting() {
			hot = append(hot, n)
		}
	}
	slices.SortStableFunc(hot, func(x, y *model.Node) int { return cmp.Compare(r.Sim[y].QueueLatency, r.Sim[x].QueueLatency) })
	started := 0
	for _, from := range hot {
		for _, c := range r.shardMoveOrder(from) {
			if !b.startedOn(c, from) || !r.CanRemain(c).NotPreferred || s.CanRemain(c, false).Typ == DecNo {
				continue
			}
			ix := c.Sh.Idx
			b.reset(ix, 0, len(b.nodes))
			for _, to := range b.nodes {
				if to == from {
					continue
				}
				t := s.CanAllocate(c.Sh, c, to, false, false).Typ
				if t == DecNo || !r.accepts(c.Sh, to) {
					continue
				}
				load := b.shardLoad[ix.Ord][c.Sh.Num]
				b.remove(from, ix, load)
				b.add(to, ix, load)
				if t == DecYes {
					s.RelocatePlaced(c, to, model.RelocBaseline)
					started++
				} else {
					b.modelAt[c] = to
				}
				r.SimulateMove(c.Sh, from, to)
				break
			}
		}
	}
	return started
}

// allocateESWriteLoad is allocateESWeights with Elasticsearch's WriteLoadConstraintDecider among the
// deciders and the Balancer's NOT_PREFERRED pass after its moves of copies that may not remain.
// refresh must have run. It returns the relocations its hotspot moves and rebalancing started.
func (s *Allocator) allocateESWriteLoad() int {
	if s.eswl == nil {
		s.eswl = &esWriteLoadState{recent: map[*model.ShardCopy]*recentWriteLoad{}}
	}
	s.eswl.observe(s)
	b := s.NewESBalancer()
	b.allocateUnassigned()
	b.moveShards()
	// The round's stats start from the routing the two passes above left, relocations included.
	r := NewESWriteLoadRound(s, s.eswl.info)
	b.wl = r
	started := r.moveNotPreferred(b)
	if v := s.CanRebalance(false); v.Typ != DecYes || len(b.nodes) < 2 {
		return started
	}
	return started + b.balance()
}
