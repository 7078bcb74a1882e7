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
	writeLoad  map[string]float64                  // node → projected write load
	diskUsed   map[string]int64                    // node → projected disk bytes
	heapUsed   map[string]float64                  // node → projected heap bytes
	copies     map[cluster.ShardID][]*cluster.Copy // shard → its assigned copies
	eligible   map[string]int                      // index → nodes its filters allow (moves do not change it)
	shardSize  map[cluster.ShardID]int64
	copyLoad   map[cluster.ShardID]float64 // shard → write load of one copy (all copies bear it)
	// limits caches IndexBalanceLimit until a move changes the index's counts: the deciders ask
	// for it once per copy and candidate node, and it walks the index's nodes.
	limits map[string]map[string]balanceLimit // index → awareness zone ("" without awareness) → limit

	// clusterEligible is the nodes the cluster's filters allow, which every index without filters
	// of its own shares (most do), once clusterEligibleKnown.
	clusterEligible      int
	clusterEligibleKnown bool
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
		writeLoad:  make(map[string]float64, len(snap.Nodes)),
		diskUsed:   make(map[string]int64, len(snap.Nodes)),
		heapUsed:   make(map[string]float64, len(snap.Nodes)),
		copies:     make(map[cluster.ShardID][]*cluster.Copy, len(snap.Copies)/2),
		eligible:   map[string]int{},
		shardSize:  make(map[cluster.ShardID]int64, len(snap.Copies)/2),
		copyLoad:   make(map[cluster.ShardID]float64, len(snap.Copies)/2),
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
	for i := range snap.Indices {
		v.index[snap.Indices[i].Name] = &snap.Indices[i]
	}
	for i := range snap.Copies {
		c := &snap.Copies[i]
		id := c.ID()
		if c.SizeBytes > v.shardSize[id] {
			v.shardSize[id] = c.SizeBytes
		}
		if c.LoadKnown && c.WriteLoad > v.copyLoad[id] {
			v.copyLoad[id] = c.WriteLoad
		}
		if c.Node == "" {
			continue
		}
		v.copies[id] = append(v.copies[id], c)
		holder := c.Node
		if c.State == cluster.StateRelocating && c.RelocatingNode != "" {
			// The target already holds the incoming copy for the same-shard rule and counts it for
			// balance, as OpenSearch does.
			holder = c.RelocatingNode
			v.mark(c.RelocatingNode, id)
		}
		v.mark(c.Node, id)
		v.count(c.Index, holder, 1)
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
			load := v.copyLoad[c.ID()]
			v.writeLoad[c.Node] -= load
			v.writeLoad[c.RelocatingNode] += load
		}
	}
	// A copy whose rate is unknown this sample (it just arrived, or its counters reset) still bears
	// its shard's write load: every copy of a shard indexes the same documents. Without this a node
	// that just received a hot copy would look cold and attract another one.
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.Active() && c.Node != "" && !c.LoadKnown {
			v.writeLoad[c.Node] += v.copyLoad[c.ID()]
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
	delete(v.limits, index)
}

// copyOn returns the snapshot's copy of index[shard] assigned to node, or nil.
func (v *View) copyOn(index string, shard int, node string) *cluster.Copy {
	for _, c := range v.copies[cluster.ShardID{Index: index, Shard: shard}] {
		if c.Node == node {
			return c
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

// ShardLoad is the write load one copy of the shard carries.
func (v *View) ShardLoad(id cluster.ShardID) float64 { return v.copyLoad[id] }

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
		}
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
	v.writeLoad[m.From] -= m.WriteLoad
	v.writeLoad[m.To] += m.WriteLoad
	v.diskUsed[m.To] += m.SizeBytes
	// The source keeps its bytes until the relocation finishes; heap moves with the copy.
	h := v.heapPerCopy(m.From)
	v.heapUsed[m.From] -= h
	v.heapUsed[m.To] += h
}
