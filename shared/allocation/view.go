package allocation

import (
	"math"

	"github.com/shardwise/shardwise/shared/cluster"
)

// View indexes a snapshot for the deciders and tracks what planned moves change, so each decision
// sees the cluster as it will be after the moves already planned this cycle.
type View struct {
	Snap     *cluster.Snapshot
	Cfg      Config
	deciders []Decider

	data       []*cluster.Node
	nodes      map[string]*cluster.Node
	excluded   map[string]bool
	hot        map[string]bool
	index      map[string]*cluster.Index
	onNode     map[string]map[cluster.ShardID]bool // node → shards it holds (incl. incoming relocations)
	indexCount map[string]map[string]int           // index → node → copies
	nodeCount  map[string]int                      // node → copies
	primaries  map[string]map[string]int           // index → node → primaries ("" → node → all indices' primaries)
	writeLoad  map[string]float64                  // node → projected write load
	diskUsed   map[string]int64                    // node → projected disk bytes
	heapUsed   map[string]float64                  // node → projected heap bytes
	shards     map[cluster.ShardID]*shardOf
	eligible   map[string]int // index → nodes its filters allow (moves do not change it)
	// limits caches IndexBalanceLimit until a move changes the index's counts: the deciders ask
	// for it once per copy and candidate node, and it walks the index's nodes.
	limits map[string]map[string]balanceLimit // index → awareness zone ("" without awareness) → limit

	// counted names the shard counts' state: every change (count) gives it a new number from
	// countedSeq, never one used before, and try's restore, which puts the counts back exactly,
	// puts their number back too. What is worked out from the counts holds while it stays the
	// same.
	counted, countedSeq int
	// builtin is invitesBuiltin's view of the counts at counted with the weights it was worked
	// out with: the nodes by count and each index's spread.
	builtin struct {
		at     int
		with   BuiltinBalancer
		counts *countState
		deltas map[string]float64 // index → builtinDelta
	}

	// clusterEligible is the nodes the cluster's filters allow, which every index without filters
	// of its own shares (most do), once clusterEligibleKnown.
	clusterEligible      int
	clusterEligibleKnown bool

	// countPrimaries: some total_primary_shards_per_node limit is set, so primaries are counted
	// (most clusters set none, and the count is then never read).
	countPrimaries bool
}

// shardOf is what the view knows of one shard.
type shardOf struct {
	// load is the indexing its primary bears: every copy bears it under document replication, a
	// replica SegmentReplicaShare of it under segment replication (CopyLoad).
	load   float64
	copies []*cluster.Copy // its assigned copies
}

// NewView indexes snap. hot marks the nodes currently judged hot (may be nil).
func NewView(snap *cluster.Snapshot, cfg Config, hot map[string]bool) *View {
	v := &View{
		Snap: snap, Cfg: cfg, deciders: Deciders(),
		nodes:      make(map[string]*cluster.Node, len(snap.Nodes)),
		excluded:   map[string]bool{},
		hot:        map[string]bool{},
		index:      make(map[string]*cluster.Index, len(snap.Indices)),
		onNode:     make(map[string]map[cluster.ShardID]bool, len(snap.Nodes)),
		indexCount: make(map[string]map[string]int, len(snap.Indices)),
		nodeCount:  make(map[string]int, len(snap.Nodes)),
		primaries:  map[string]map[string]int{},
		writeLoad:  make(map[string]float64, len(snap.Nodes)),
		diskUsed:   make(map[string]int64, len(snap.Nodes)),
		heapUsed:   make(map[string]float64, len(snap.Nodes)),
		shards:     make(map[cluster.ShardID]*shardOf, len(snap.Copies)/2),
		eligible:   map[string]int{},
		limits:     make(map[string]map[string]balanceLimit, len(snap.Indices)),
	}
	for id, h := range hot {
		v.hot[id] = h
	}
	per := make(map[string]int, len(snap.Nodes))
	for i := range snap.Copies {
		per[snap.Copies[i].Node]++
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		v.nodes[n.ID] = n
		if n.IsData() {
			v.data = append(v.data, n)
		}
		v.onNode[n.ID] = make(map[cluster.ShardID]bool, per[n.ID]+8)
		v.writeLoad[n.ID] = n.Write.Load
		v.diskUsed[n.ID] = n.DiskUsedBytes()
		v.heapUsed[n.ID] = float64(n.HeapUsedBytes)
	}
	for _, ref := range cfg.ExcludedNodes {
		if n := snap.NodeByRef(ref); n != nil {
			v.excluded[n.ID] = true
		}
	}
	v.countPrimaries = snap.Settings.TotalPrimaryShardsPerNode > 0
	for i := range snap.Indices {
		v.index[snap.Indices[i].Name] = &snap.Indices[i]
		v.countPrimaries = v.countPrimaries || snap.Indices[i].TotalPrimaryShardsPerNode > 0
	}
	// A shard's copies, and an index's shards, are side by side in a sorted snapshot: the entry of
	// the copy before is looked up again only when the shard or the index changes. The shards'
	// entries come from one slab, of at most one per copy.
	var (
		slab     = make([]shardOf, 0, len(snap.Copies))
		id       cluster.ShardID
		sh       *shardOf
		segment  bool           // id's index uses segment replication
		counts   map[string]int // countsOf's copies per node
		countsOf string
	)
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if sh == nil || c.Shard != id.Shard || c.Index != id.Index {
			id, segment = c.ID(), v.segment(c.Index)
			if sh = v.shards[id]; sh == nil {
				slab = append(slab, shardOf{})
				sh = &slab[len(slab)-1]
				v.shards[id] = sh
			}
		}
		if c.LoadKnown {
			// Under segment replication a replica's rate is its share of the primary's: read back,
			// it gives the shard's load while the primary has no rate of its own (it just moved).
			load := c.WriteLoad
			if !c.Primary && segment {
				load /= cluster.SegmentReplicaShare
			}
			sh.load = max(sh.load, load)
		}
		if c.Node == "" {
			continue
		}
		sh.copies = append(sh.copies, c)
		holder := c.Node
		if c.State == cluster.StateRelocating && c.RelocatingNode != "" {
			// The target already holds the incoming copy for the same-shard rule and counts it for
			// balance, as OpenSearch does.
			holder = c.RelocatingNode
			v.mark(c.RelocatingNode, id)
		}
		v.mark(c.Node, id)
		if counts == nil || c.Index != countsOf {
			countsOf = c.Index
			if counts = v.indexCount[c.Index]; counts == nil {
				counts = map[string]int{}
				v.indexCount[c.Index] = counts
			}
		}
		counts[holder]++
		v.nodeCount[holder]++
		if c.Primary {
			v.countPrimary(c.Index, holder, 1)
		}
	}
	// Index time undercounts a saturated WRITE pool (a bulk request's parsing, routing and translog
	// work is not indexing time); a hot node is queueing, so every thread is busy: its projected load
	// is at least its active threads, as hotspot detection already counts it.
	for _, n := range v.data {
		if v.hot[n.ID] {
			v.writeLoad[n.ID] = math.Max(v.writeLoad[n.ID], float64(min(n.Write.Active, n.Write.Threads)))
		}
	}
	// A relocation in flight moves its copy's load: the source is projected without it and the
	// target with it, so relief already under way is counted once and no target is filled twice.
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.State == cluster.StateRelocating && c.Node != "" && v.nodes[c.RelocatingNode] != nil {
			load := v.CopyLoad(c)
			v.writeLoad[c.Node] -= load
			v.writeLoad[c.RelocatingNode] += load
		}
	}
	// A copy whose rate is unknown this sample (it just arrived, or its counters reset) still bears
	// its part of the shard's write load (CopyLoad). Without this a node that just received a hot
	// copy would look cold and attract another one.
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.Active() && c.Node != "" && !c.LoadKnown {
			v.writeLoad[c.Node] += v.CopyLoad(c)
		}
	}
	return v
}

func (v *View) mark(node string, id cluster.ShardID) {
	m := v.onNode[node]
	if m == nil {
		m = map[cluster.ShardID]bool{}
		v.onNode[node] = m
	}
	m[id] = true
}

func (v *View) count(index, node string, d int) {
	m := v.indexCount[index]
	if m == nil {
		m = map[string]int{}
		v.indexCount[index] = m
	}
	m[node] += d
	v.nodeCount[node] += d
	v.countedSeq++
	v.counted = v.countedSeq
	delete(v.limits, index)
}

// countPrimary counts a primary of index on node, for the index and for the node over all indices,
// when a primary limit is set.
func (v *View) countPrimary(index, node string, d int) {
	if !v.countPrimaries {
		return
	}
	for _, key := range [2]string{index, ""} {
		m := v.primaries[key]
		if m == nil {
			m = map[string]int{}
			v.primaries[key] = m
		}
		m[node] += d
	}
}

// copyOn returns the snapshot's copy of index[shard] assigned to node, or nil.
func (v *View) copyOn(index string, shard int, node string) *cluster.Copy {
	if sh := v.shards[cluster.ShardID{Index: index, Shard: shard}]; sh != nil {
		for _, c := range sh.copies {
			if c.Node == node {
				return c
			}
		}
	}
	return nil
}

// Node returns a node by id.
func (v *View) Node(id string) *cluster.Node { return v.nodes[id] }

// Index returns index metadata by name.
func (v *View) Index(name string) *cluster.Index { return v.index[name] }

// Holds reports whether the node holds (or is receiving) a copy of the shard.
func (v *View) Holds(node string, id cluster.ShardID) bool { return v.onNode[node][id] }

// WriteLoad is the node's projected write load in threads.
func (v *View) WriteLoad(node string) float64 { return v.writeLoad[node] }

// Utilization is the node's projected WRITE pool utilization.
func (v *View) Utilization(node string) float64 {
	n := v.nodes[node]
	if n == nil || n.Write.Threads <= 0 {
		return 0
	}
	return v.writeLoad[node] / float64(n.Write.Threads)
}

// IndexCopies returns how many copies of the index the node holds after planned moves.
func (v *View) IndexCopies(index, node string) int { return v.indexCount[index][node] }

// NodeCopies returns how many copies the node holds after planned moves.
func (v *View) NodeCopies(node string) int { return v.nodeCount[node] }

// IndexPrimaries returns how many primaries of the index the node holds after planned moves.
func (v *View) IndexPrimaries(index, node string) int { return v.primaries[index][node] }

// NodePrimaries returns how many primaries of all indices the node holds after planned moves.
func (v *View) NodePrimaries(node string) int { return v.primaries[""][node] }

// DataNodes returns the nodes that may hold copies, in snapshot order. The slice is shared: do not
// modify it.
func (v *View) DataNodes() []*cluster.Node { return v.data }

// EligibleNodes counts the data nodes the index's and the cluster's filters allow.
func (v *View) EligibleNodes(index string) int {
	if n, ok := v.eligible[index]; ok {
		return n
	}
	n := v.eligibleNodes(index)
	v.eligible[index] = n
	return n
}

func (v *View) eligibleNodes(index string) int {
	ix := v.index[index]
	own := ix != nil && !ix.Filters.Empty()
	if !own && v.clusterEligibleKnown {
		return v.clusterEligible
	}
	n := 0
	for _, node := range v.DataNodes() {
		if v.excluded[node.ID] {
			continue
		}
		if own {
			if ok, _ := FiltersAllow(ix.Filters, node); !ok {
				continue
			}
		}
		if ok, _ := FiltersAllow(v.Snap.Settings.Filters, node); !ok {
			continue
		}
		n++
	}
	if !own {
		v.clusterEligible, v.clusterEligibleKnown = n, true
	}
	return n
}

// balanceLimit is an IndexBalanceLimit and the balance factor it was worked out with.
type balanceLimit struct {
	limit  int
	factor float64
}

// IndexBalanceLimit is how many copies of the index the node may hold before the index-balance
// decider prefers not: ceil(ceil(copies / eligible nodes) × factor). With allocation awareness the
// copies are spread over the zones first (forced awareness names the zones, present or not), so
// the count is the zone's share, ceil(copies / zones), over the eligible nodes of the node's zone:
// a 2-node zone of three must hold a third of the copies on its two nodes, whatever the
// cluster-wide average says.
func (v *View) IndexBalanceLimit(index, node string) int {
	zone := v.zoneOf(node)
	if l, ok := v.limits[index][zone]; ok && l.factor == v.Cfg.IndexBalanceFactor {
		return l.limit
	}
	limit := v.indexBalanceLimit(index, zone)
	if v.limits[index] == nil {
		v.limits[index] = map[string]balanceLimit{}
	}
	v.limits[index][zone] = balanceLimit{limit: limit, factor: v.Cfg.IndexBalanceFactor}
	return limit
}

// zoneOf is the node's value of the first awareness attribute, or "" without awareness.
func (v *View) zoneOf(node string) string {
	attrs := v.Snap.Settings.AwarenessAttributes
	n := v.nodes[node]
	if len(attrs) == 0 || n == nil {
		return ""
	}
	return n.Attributes[attrs[0]]
}

func (v *View) indexBalanceLimit(index, zone string) int {
	ix := v.index[index]
	copies := 0
	if ix != nil {
		copies = ix.Primaries * (1 + ix.Replicas)
	}
	for _, c := range v.indexCount[index] {
		copies = max(copies, c)
	}
	eligible := max(v.EligibleNodes(index), 1)
	if zone != "" {
		zones, inZone := v.zones(index, zone)
		copies = (copies + zones - 1) / max(zones, 1)
		eligible = max(inZone, 1)
	}
	perNode := math.Ceil(float64(copies) / float64(eligible))
	return int(math.Ceil(perNode * v.Cfg.IndexBalanceFactor))
}

// zones counts the values of the first awareness attribute copies spread over (the forced values
// and those of the nodes in service) and the nodes in zone the index's and the cluster's filters
// allow.
func (v *View) zones(index, zone string) (values, inZone int) {
	attr := v.Snap.Settings.AwarenessAttributes[0]
	seen := map[string]bool{}
	for _, fv := range v.Snap.Settings.ForcedAwareness[attr] {
		seen[fv] = true
	}
	ix := v.index[index]
	for _, n := range v.DataNodes() {
		if v.excluded[n.ID] {
			continue
		}
		nv, ok := n.Attributes[attr]
		if !ok {
			continue
		}
		seen[nv] = true
		if nv != zone {
			continue
		}
		if ix != nil && !ix.Filters.Empty() {
			if ok, _ := FiltersAllow(ix.Filters, n); !ok {
				continue
			}
		}
		if ok, _ := FiltersAllow(v.Snap.Settings.Filters, n); !ok {
			continue
		}
		inZone++
	}
	return len(seen), inZone
}

// ShardLoad is the shard's indexing load: what its primary bears, and every copy under document
// replication.
func (v *View) ShardLoad(id cluster.ShardID) float64 {
	if sh := v.shards[id]; sh != nil {
		return sh.load
	}
	return 0
}

// CopyLoad is the write load the copy bears wherever it is: its shard's load (ShardLoad), except a
// replica of a segment-replication index, which copies the primary's segments instead of indexing
// and bears cluster.SegmentReplicaShare of it. A reroute move of a primary relocates it and it
// stays primary, so a copy carries this load to any node.
func (v *View) CopyLoad(c *cluster.Copy) float64 {
	if !c.Primary && v.segment(c.Index) {
		return v.ShardLoad(c.ID()) * cluster.SegmentReplicaShare
	}
	return v.ShardLoad(c.ID())
}

// ReplicaLoad is the write load a new replica of the shard would bear: the shard's load, or its
// segment-replication share.
func (v *View) ReplicaLoad(id cluster.ShardID) float64 {
	if v.segment(id.Index) {
		return v.ShardLoad(id) * cluster.SegmentReplicaShare
	}
	return v.ShardLoad(id)
}

// segment reports whether the index uses segment replication (index.replication.type SEGMENT).
func (v *View) segment(index string) bool {
	ix := v.index[index]
	return ix != nil && ix.Segment()
}

// heapPerCopy estimates the heap one copy costs on a node: the node's heap use spread over its copies.
// OpenSearch exposes no per-shard heap figure, so this is the average, conservative for small shards.
func (v *View) heapPerCopy(node string) float64 {
	n := v.nodes[node]
	if n == nil {
		return 0
	}
	c := v.nodeCount[node]
	if c <= 0 {
		return 0
	}
	return float64(n.HeapUsedBytes) / float64(c)
}

// SetDemand raises a hot node's projected load to the demand its growing backlog shows (see
// Hotspot.Demand): its counters only show what a saturated pool served.
func (v *View) SetDemand(node string, threads float64) {
	if _, ok := v.writeLoad[node]; ok && threads > v.writeLoad[node] {
		v.writeLoad[node] = threads
	}
}

// addGrowth raises a rising node's projected load by the threads its climb adds by the time its
// relief lands (Rise.Growth), over what the view holds for it: relocations in flight off it stay
// counted.
func (v *View) addGrowth(node string, threads float64) {
	if _, ok := v.writeLoad[node]; ok && threads > 0 {
		v.writeLoad[node] += threads
	}
}

// Apply records a planned move so later decisions see it.
func (v *View) Apply(m Move) { v.apply(m) }

// undo is what apply changed, to put back when a tried plan is dropped.
type undo struct {
	m                        Move
	held                     bool
	fromLoad, toLoad         float64
	fromDisk, toDisk         int64
	fromHeap, toHeap         float64
	fromIdx, toIdx           int
	fromCount, toCount       int
	fromIdxSet, toIdxSet     bool
	fromCountSet, toCountSet bool
}

// try applies moves and returns a function that takes them back, in reverse order, exactly.
func (v *View) try(moves []Move) (restore func()) {
	counted := v.counted
	us := make([]undo, 0, len(moves))
	for _, m := range moves {
		u := undo{m: m, fromLoad: v.writeLoad[m.From], toLoad: v.writeLoad[m.To], fromDisk: v.diskUsed[m.From], toDisk: v.diskUsed[m.To],
			fromHeap: v.heapUsed[m.From], toHeap: v.heapUsed[m.To]}
		id := cluster.ShardID{Index: m.Index, Shard: m.Shard}
		u.held = v.onNode[m.To][id]
		u.fromIdx, u.fromIdxSet = v.indexCount[m.Index][m.From]
		u.toIdx, u.toIdxSet = v.indexCount[m.Index][m.To]
		u.fromCount, u.fromCountSet = v.nodeCount[m.From]
		u.toCount, u.toCountSet = v.nodeCount[m.To]
		v.apply(m)
		us = append(us, u)
	}
	return func() {
		for i := len(us) - 1; i >= 0; i-- {
			u := us[i]
			m := u.m
			id := cluster.ShardID{Index: m.Index, Shard: m.Shard}
			v.writeLoad[m.From], v.writeLoad[m.To] = u.fromLoad, u.toLoad
			v.diskUsed[m.From], v.diskUsed[m.To] = u.fromDisk, u.toDisk
			v.heapUsed[m.From], v.heapUsed[m.To] = u.fromHeap, u.toHeap
			v.mark(m.From, id)
			if !u.held {
				delete(v.onNode[m.To], id)
			}
			restoreInt(v.indexCount[m.Index], m.From, u.fromIdx, u.fromIdxSet)
			restoreInt(v.indexCount[m.Index], m.To, u.toIdx, u.toIdxSet)
			delete(v.limits, m.Index)
			restoreInt(v.nodeCount, m.From, u.fromCount, u.fromCountSet)
			restoreInt(v.nodeCount, m.To, u.toCount, u.toCountSet)
			if m.Primary {
				v.countPrimary(m.Index, m.From, 1)
				v.countPrimary(m.Index, m.To, -1)
			}
		}
		v.counted = counted
	}
}

func restoreInt(m map[string]int, k string, val int, set bool) {
	if set {
		m[k] = val
	} else {
		delete(m, k)
	}
}

func (v *View) apply(m Move) {
	id := cluster.ShardID{Index: m.Index, Shard: m.Shard}
	delete(v.onNode[m.From], id)
	v.mark(m.To, id)
	v.count(m.Index, m.From, -1)
	v.count(m.Index, m.To, 1)
	if m.Primary {
		v.countPrimary(m.Index, m.From, -1)
		v.countPrimary(m.Index, m.To, 1)
	}
	v.writeLoad[m.From] -= m.WriteLoad
	v.writeLoad[m.To] += m.WriteLoad
	v.diskUsed[m.To] += m.SizeBytes
	// The source keeps its bytes until the relocation finishes; heap moves with the copy.
	h := v.heapPerCopy(m.From)
	v.heapUsed[m.From] -= h
	v.heapUsed[m.To] += h
}
