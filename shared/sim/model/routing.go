package model

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/sim/settings"
)

// AllocConfig is the allocation settings in force, derived from cluster settings and the scenario.
type AllocConfig struct {
	Incoming, Outgoing     int
	ConcurrentRebalance    int
	RebalanceEnable        string
	AllocationEnable       string
	AllowRebalance         string
	ThetaShard, ThetaIndex float64
	Threshold              float64
	DiskEnabled            bool
	watermarkUsed          float64 // fraction of disk; negative when the watermark is in free bytes
	watermarkFree          float64
	WatermarkText          string
	TotalShardsPerNode     int
	// TotalPrimaryShardsPerNode is cluster.routing.allocation.total_primary_shards_per_node.
	TotalPrimaryShardsPerNode int
	Awareness                 []string
	// Forced holds, per awareness attribute, its forced values (awareness.force.<attr>.values).
	Forced       map[string][]string
	recoveryRate float64
	Filters      filterSet
}

// Config returns the allocation settings, recomputed after every settings change.
func (s *Sim) Config() *AllocConfig {
	if s.Cfg != nil {
		return s.Cfg
	}
	c := &AllocConfig{}
	conc := s.IntSetting("cluster.routing.allocation.node_concurrent_recoveries", defaultNodeConcurrentRecoveries)
	c.Incoming = s.IntSetting("cluster.routing.allocation.node_concurrent_incoming_recoveries", conc)
	c.Outgoing = s.IntSetting("cluster.routing.allocation.node_concurrent_outgoing_recoveries", conc)
	c.ConcurrentRebalance = s.IntSetting("cluster.routing.allocation.cluster_concurrent_rebalance", defaultClusterConcurrentRebalance)
	c.RebalanceEnable = s.SettingOr("cluster.routing.rebalance.enable", "all")
	c.AllocationEnable = s.SettingOr("cluster.routing.allocation.enable", "all")
	c.AllowRebalance = s.SettingOr("cluster.routing.allocation.allow_rebalance", "indices_all_active")
	ib := s.FloatSetting("cluster.routing.allocation.balance.index", defaultIndexBalance)
	sb := s.FloatSetting("cluster.routing.allocation.balance.shard", defaultShardBalance)
	if sum := ib + sb; sum > 0 {
		c.ThetaIndex, c.ThetaShard = ib/sum, sb/sum
	}
	c.Threshold = s.FloatSetting("cluster.routing.allocation.balance.threshold", defaultBalanceThreshold)
	c.DiskEnabled = s.SettingOr("cluster.routing.allocation.disk.threshold_enabled", "true") == "true"
	c.WatermarkText = s.SettingOr("cluster.routing.allocation.disk.watermark.high", settings.PercentString(s.watermarkDefault))
	used, free, err := settings.ParseWatermark(c.WatermarkText)
	if err != nil {
		used, free = s.watermarkDefault, 0
	}
	c.watermarkUsed, c.watermarkFree = used, free
	c.TotalShardsPerNode = s.IntSetting("cluster.routing.allocation.total_shards_per_node", -1)
	c.TotalPrimaryShardsPerNode = s.IntSetting("cluster.routing.allocation.total_primary_shards_per_node", -1)
	for _, a := range strings.Split(s.SettingOr("cluster.routing.allocation.awareness.attributes", ""), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.Awareness = append(c.Awareness, a)
		}
	}
	c.Forced = map[string][]string{}
	for _, a := range c.Awareness {
		if v, ok := s.setting(settings.AwarenessForcePrefix + a + settings.AwarenessForceSuffix); ok {
			c.Forced[a] = cluster.FilterPatterns(v)
		}
	}
	c.recoveryRate = s.recoveryDefault
	if v, ok := s.setting("indices.recovery.max_bytes_per_sec"); ok {
		if b, err := settings.ParseByteSize(v); err == nil && b > 0 {
			c.recoveryRate = b
		}
	}
	flat := map[string]string{}
	for k, v := range s.Persistent {
		if settings.IsClusterFilterKey(k) {
			flat[k] = v
		}
	}
	for k, v := range s.Transient {
		if settings.IsClusterFilterKey(k) {
			flat[k] = v
		}
	}
	c.Filters = compileFilters(flat, settings.ClusterFilterPrefix)
	s.Cfg = c
	return c
}

// DiskLimit is the disk use a node may reach under the high watermark.
func (c *AllocConfig) DiskLimit(n *Node) float64 {
	if c.watermarkUsed >= 0 {
		return c.watermarkUsed * float64(n.DiskBytes)
	}
	return float64(n.DiskBytes) - c.watermarkFree
}

// RecoverySource is the node a new copy of sh recovers from: the node of its active primary.
func RecoverySource(sh *Shard) *Node {
	if p := sh.Primary(); p != nil && p.Active() {
		return p.Node
	}
	return nil
}

// InactiveShards reports whether any copy is unassigned or initializing, whether any primary is,
// and whether any copy is unassigned. A relocation's target does not count: OpenSearch's
// RoutingNodes counts as inactive only the shards "initializing without being relocated", so
// allow_rebalance indices_all_active lets the balancer go on while relocations are in flight, up to
// cluster_concurrent_rebalance.
func (s *Sim) InactiveShards() (inactive, primary, unassigned bool) {
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if !c.Active() {
					inactive = true
					if c.Primary {
						primary = true
					}
				}
				if c.State == StateUnassigned {
					unassigned = true
				}
			}
		}
	}
	return inactive, primary, unassigned
}

// RelocatingCount counts the relocations in flight, which cluster_concurrent_rebalance limits.
func (s *Sim) RelocatingCount() int {
	n := 0
	for _, r := range s.Recoveries {
		if r.Relocation {
			n++
		}
	}
	return n
}

// Flight is what is in flight when a reroute arrives: relocations started by reroute commands
// (external), the others, and each node's recoveries.
type Flight struct {
	external, Others   int
	Incoming, Outgoing []int
	// ExternalAt counts, per node ord, the reroute relocations in flight from or to it, and
	// externalPair those from one node ord to another.
	ExternalAt   []int
	externalPair map[[2]int]int
}

// The rollover guard's exception to the hold on a node a reroute move still relocates from or to
// (shardwise's allocation.YoungIndexAge and YoungRelocationSeconds): a copy of an index created
// within youngIndexAge whose files copy within youngRelocation at the recovery rate may leave it.
const (
	youngIndexAge   = 15 * time.Minute
	youngRelocation = 60 * time.Second
)

// YoungQuick reports whether c is such a copy.
func (s *Sim) YoungQuick(c *ShardCopy) bool {
	age := s.NowLocked().Sub(c.Sh.Idx.Created)
	return age >= 0 && age <= youngIndexAge && float64(c.Sh.Idx.ShardBytes) <= s.Config().recoveryRate*youngRelocation.Seconds()
}

// SwapCompletion reports whether a move from one node ord to another is the second half of a swap
// split over two calls: every reroute relocation in flight from or to either node goes the other
// way, from to to from (a staged return follows its hot copy once the copy's files are copied).
func (f Flight) SwapCompletion(from, to int) bool {
	back := f.externalPair[[2]int{to, from}]
	return back > 0 && f.ExternalAt[from] == back && f.ExternalAt[to] == back
}

// InFlight counts the recoveries in flight; refresh must have run.
func (s *Sim) InFlight() Flight {
	f := Flight{Incoming: slices.Clone(s.Incoming), Outgoing: slices.Clone(s.Outgoing), ExternalAt: make([]int, len(s.Nodes))}
	for _, r := range s.Recoveries {
		switch {
		case !r.Relocation:
		case r.external:
			f.external++
			f.ExternalAt[r.Source.Ord]++
			f.ExternalAt[r.Target.Ord]++
			if f.externalPair == nil {
				f.externalPair = map[[2]int]int{}
			}
			f.externalPair[[2]int{r.Source.Ord, r.Target.Ord}]++
		default:
			f.Others++
		}
	}
	return f
}

// Refresh recomputes per-node shard counts, disk use and recovery counts, and per-index counts.
func (s *Sim) Refresh() {
	nn := len(s.Nodes)
	if len(s.Incoming) != nn {
		s.Incoming, s.Outgoing, s.Leaving = make([]int, nn), make([]int, nn), make([]int64, nn)
	}
	clear(s.Incoming)
	clear(s.Outgoing)
	clear(s.Leaving)
	for _, n := range s.Nodes {
		n.ShardCount, n.DiskUsed = 0, 0
	}
	for _, ix := range s.Indices {
		if len(ix.Counts) != nn {
			ix.Counts = make([]int, nn)
		} else {
			clear(ix.Counts)
		}
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.Node == nil {
					continue
				}
				if c.Target != nil {
					// A relocating copy counts toward its target in the balancer's model and on both disks.
					c.Target.ShardCount++
					c.Target.DiskUsed += ix.ShardBytes
					ix.Counts[c.Target.Ord]++
					c.Node.DiskUsed += ix.ShardBytes
					s.Leaving[c.Node.Ord] += ix.ShardBytes
					continue
				}
				c.Node.ShardCount++
				c.Node.DiskUsed += ix.ShardBytes
				ix.Counts[c.Node.Ord]++
			}
		}
	}
	for _, r := range s.Recoveries {
		s.Incoming[r.Target.Ord]++
		if r.Source != nil {
			s.Outgoing[r.Source.Ord]++
		}
	}
}

// Place records a new copy of ix on n in the counts the balancer uses.
func Place(n *Node, ix *Index) {
	n.ShardCount++
	n.DiskUsed += ix.ShardBytes
	ix.Counts[n.Ord]++
}

// Unplace reverses place.
func Unplace(n *Node, ix *Index) {
	n.ShardCount--
	n.DiskUsed -= ix.ShardBytes
	ix.Counts[n.Ord]--
}

// CopiesOn yields the copies on node n with their index, index by index; an index holding none of
// them when its turn comes is passed over.
func (s *Sim) CopiesOn(n *Node) iter.Seq2[*Index, *ShardCopy] {
	return func(yield func(*Index, *ShardCopy) bool) {
		for _, ix := range s.Indices {
			if ix.Counts[n.Ord] == 0 {
				continue
			}
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					if c.Node == n && !yield(ix, c) {
						return
					}
				}
			}
		}
	}
}

// RelocKind says who started a relocation.
type RelocKind int

// The kinds of relocation: the exported ones are those other packages start.
const (
	RelocExternal  RelocKind = iota // a reroute move command
	RelocBuiltin                    // the built-in rebalancer
	relocAllocator                  // the allocator moving a copy that may not remain (cluster filters, watermark)
	RelocBaseline                   // a baseline balancer run in place of OpenSearch's: counted as moves
	// relocFilter is the allocator moving a copy off a node that an index allocation filter set
	// through the settings API excludes: in a simulation, shardwise's allocation-filter strategy,
	// so these are its moves: counted as moves, and as undone when OpenSearch's balancer moves the
	// copy back. A filter the scenario set (the operator's) moves copies as relocAllocator does.
	relocFilter
)

// AllocatorMove is the kind of the allocator's relocation of c off n: relocFilter when its index's
// filters exclude n and the operator's alone would not, else relocAllocator.
func AllocatorMove(c *ShardCopy, n *Node) RelocKind {
	ix := c.Sh.Idx
	if ix.Filters.Check(n, "index") != "" && ix.operatorFilters.Check(n, "index") == "" {
		return relocFilter
	}
	return relocAllocator
}

// RelocatePlaced starts started copy c's relocation to node to and moves it in the counts a
// balancing round places copies by: it counts on to, and its source's disk keeps its bytes until the
// relocation ends.
func (s *Sim) RelocatePlaced(c *ShardCopy, to *Node, kind RelocKind) {
	from, ix := c.Node, c.Sh.Idx
	s.StartRelocation(c, to, kind)
	Unplace(from, ix)
	Place(to, ix)
	from.DiskUsed += ix.ShardBytes
	s.Leaving[from.Ord] += ix.ShardBytes
}

// StartRelocation begins moving started copy c to node to. Its load stays on the source until done.
func (s *Sim) StartRelocation(c *ShardCopy, to *Node, kind RelocKind) {
	ix := c.Sh.Idx
	s.RecSeq++
	r := &Recovery{
		seq: s.RecSeq, copy: c, Relocation: true, Source: c.Node, Target: to,
		Bytes: float64(ix.ShardBytes), external: kind == RelocExternal || kind == relocFilter,
	}
	c.State, c.Target, c.TargetAllocID, c.Rec = StateRelocating, to, RandomID(s.Rng), r
	s.Recoveries = append(s.Recoveries, r)
	s.Incoming[to.Ord]++
	s.Outgoing[c.Node.Ord]++
	switch kind {
	case RelocBuiltin:
		s.Res.BuiltinRelocations++
		switch {
		case c.External && s.TopologyChanged.After(c.ExternalSince):
			s.Res.MovesRebalancedAfterTopology++
		case c.External:
			s.Res.MovesUndoneByBuiltin++
		}
		c.Sh.MovedSinceCmd = true
	case relocAllocator:
		s.Res.AllocatorRelocations++
		c.Sh.MovedSinceCmd = true
	case relocFilter:
		s.Res.AllocatorRelocations++
		s.Res.Moves++
		s.Res.BytesMoved += ix.ShardBytes
	case RelocBaseline:
		s.Res.Moves++
		s.Res.BytesMoved += ix.ShardBytes
		c.Sh.MovedSinceCmd = true
	}
	s.Changed()
}

// Initialize starts unassigned copy c on n: a replica recovers from its primary, a primary starts empty.
func (s *Sim) Initialize(c *ShardCopy, n *Node, external bool) {
	ix := c.Sh.Idx
	s.RecSeq++
	r := &Recovery{seq: s.RecSeq, copy: c, Target: n, external: external}
	if !c.Primary {
		r.Source = RecoverySource(c.Sh)
		r.Bytes = float64(ix.ShardBytes)
	}
	c.State, c.Node, c.AllocID, c.Rec = StateInitializing, n, RandomID(s.Rng), r
	c.UnassignedReason, c.DelayedUntil, c.DataOn = "", s.NowLocked(), nil
	c.ResetCounters()
	s.Recoveries = append(s.Recoveries, r)
	s.Incoming[n.Ord]++
	if r.Source != nil {
		s.Outgoing[r.Source.Ord]++
	}
	c.Sh.MovedSinceCmd = true
	s.Changed()
}

// CancelRecovery stops r; a relocating copy stays started on its source.
func (s *Sim) CancelRecovery(r *Recovery) {
	s.Recoveries = slices.DeleteFunc(s.Recoveries, func(x *Recovery) bool { return x == r })
	c := r.copy
	c.Rec = nil
	if r.Relocation {
		c.State, c.Target, c.TargetAllocID = StateStarted, nil, ""
	}
	s.Changed()
}

// PresentNodes lists the nodes in the cluster, in scenario order.
func (s *Sim) PresentNodes() []*Node {
	out := make([]*Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		if n.Present {
			out = append(out, n)
		}
	}
	return out
}

// settingOr, intSetting and floatSetting read a cluster setting: transient, then persistent, then the
// simulator's defaults.
func (s *Sim) setting(key string) (string, bool) {
	if v, ok := s.Transient[key]; ok {
		return v, true
	}
	if v, ok := s.Persistent[key]; ok {
		return v, true
	}
	v, ok := s.Defaults[key]
	return v, ok
}

// SettingOr is the cluster setting's value (transient over persistent over defaults), or def
// when it is not set.
func (s *Sim) SettingOr(key, def string) string {
	if v, ok := s.setting(key); ok {
		return v
	}
	return def
}

// IntSetting is the cluster setting as an integer, or def when it is not set or not an integer.
func (s *Sim) IntSetting(key string, def int) int {
	if v, ok := s.setting(key); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// FloatSetting is the cluster setting as a number, or def when it is not set or not a number.
func (s *Sim) FloatSetting(key string, def float64) float64 {
	if v, ok := s.setting(key); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}

// NodeAttr is a node's value of an awareness attribute.
func NodeAttr(n *Node, attr string) (string, bool) {
	v, ok := n.Attrs()[attr]
	return v, ok
}
