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

	data      []*cluster.Node
	weighings int               // groups weighed against OpenSearch's balancer (invitesBuiltin), for the search's bound
	dataAt    map[string]int    // node id → its place in data (filled on first use)
	allowed   map[string][]bool // index → the data nodes its filters and the cluster's allow (allowedFor)
	playBuf   struct {
		empty, order []weighed
		nodes        []*cluster.Node
	} // builtinPlay's scratch, reused
	node     map[string]*nodeState // node id → what the view projects for it
	excluded map[string]bool
	hot      map[string]bool
	index    map[string]*cluster.Index
	// indexOn is each index's copies and primaries per node (index → node → share), after the moves
	// planned so far.
	indexOn  map[string]map[string]indexShare
	shards   map[cluster.ShardID]*shardOf
	eligible map[string]int // index → nodes its filters allow (moves do not change it)
	// limits caches IndexBalanceLimit until a move changes the index's counts: the deciders ask
	// for it once per copy and candidate node, and it walks the index's nodes.
	limits map[string]map[string]balanceLimit // index → awareness zone ("" without awareness) → limit

	// undo is the view's one undo stack: every change a move makes to a node pushes what it
	// changed first, and rollback pops back to a checkpoint exactly (try, invitesBuiltin).
	undo []undoStep

	// counted names the shard counts' state: every change (count) gives it a new number from
	// countedSeq, never one used before, and rollback, which puts the counts back exactly, puts
	// their number back too. What is worked out from the counts holds while it stays the same.
	counted, countedSeq int
	// builtin is invitesBuiltin's view of the counts at counted with the weights it was worked
	// out with: the nodes by count and each index's spread.
	builtin struct {
		at     int
		with   BuiltinBalancer
		counts *countState
		deltas map[string]float64 // index → builtinDelta
		// anyway is takenAnyway's answer per index at the counts numbered anywayAt.
		anywayAt int
		anyway   map[string]bool
	}

	// clusterEligible is the nodes the cluster's filters allow, which every index without filters
	// of its own shares (most do), once clusterEligibleKnown.
	clusterEligible      int
	clusterEligibleKnown bool

	// awaiting are the returns OpenSearch's balancer is expected to make and has not started
	// (planner.expectBuiltin, and lone moves planned this cycle relying on one): see preempts.
	awaiting []ExpectedReturn
	// placed holds, by shard, the move this cycle's plan sends one of its copies with (Apply): the
	// copy OpenSearch's balancer would undo if it took it on (builtinPlay).
	placed map[cluster.ShardID]Move
	// settled holds, by shard, the node where one of shardwise's moves within the hour put a copy
	// that is there now (Departure.To; planner.markPlaced): OpenSearch's balancer taking it on
	// would undo that move.
	settled map[cluster.ShardID]string
	// oursIn and settledIn count, by index, the copies in placed and settled, and in settled
	// alone: invitesBuiltin asks for every index on a group's nodes.
	oursIn, settledIn map[string]int

	// countPrimaries: some total_primary_shards_per_node limit is set, so primaries are counted
	// (most clusters set none, and the count is then never read).
	countPrimaries bool
}

// nodeState is what the view projects for one node after the moves planned so far.
type nodeState struct {
	id   string
	node *cluster.Node // nil for a node the snapshot does not list (a relocation's target that left)
	// holds is the shards it holds, incoming relocations included.
	holds map[cluster.ShardID]bool
	// inFlight is the load the snapshot's relocations in flight move onto it (less what they move
	// off it): its counters, and a demand read from them, still show the old placement.
	inFlight float64
	nodeFigures
}

// nodeFigures are a node's projected numbers, which a move changes and rollback puts back.
type nodeFigures struct {
	copies    int     // copies it holds, incoming relocations included
	primaries int     // primaries of every index it holds (counted only when countPrimaries)
	writeLoad float64 // projected write load, threads
	diskUsed  int64   // projected disk bytes
	heapUsed  float64 // projected heap bytes
}

// indexShare is an index's copies and primaries on one node (primaries counted only when
// countPrimaries). Each count is an int32, so a share takes the 8 bytes of the one int count
// it replaced, though primaries are counted in it too.
type indexShare struct {
	copies, primaries int32
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
		node:     make(map[string]*nodeState, len(snap.Nodes)),
		excluded: map[string]bool{},
		hot:      map[string]bool{},
		index:    make(map[string]*cluster.Index, len(snap.Indices)),
		indexOn:  make(map[string]map[string]indexShare, len(snap.Indices)),
		shards:   make(map[cluster.ShardID]*shardOf, len(snap.Copies)/2),
		eligible: map[string]int{},
		limits:   make(map[string]map[string]balanceLimit, len(snap.Indices)),
	}
	for id, h := range hot {
		v.hot[id] = h
	}
	per := make(map[string]int, len(snap.Nodes))
	for i := range snap.Copies {
		per[snap.Copies[i].Node]++
	}
	states := make([]nodeState, len(snap.Nodes))
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		st := &states[i]
		*st = nodeState{id: n.ID, node: n, holds: make(map[cluster.ShardID]bool, per[n.ID]+8),
			nodeFigures: nodeFigures{writeLoad: n.Write.Load, diskUsed: n.DiskUsedBytes(), heapUsed: float64(n.HeapUsedBytes)}}
		v.node[n.ID] = st
		if n.IsData() {
			v.data = append(v.data, n)
		}
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
	// entries come from one slab, of at most one per copy, and so do their lists of copies when a
	// shard's copies are side by side.
	var (
		slab     = make([]shardOf, 0, len(snap.Copies))
		held     = make([]*cluster.Copy, 0, len(snap.Copies))
		id       cluster.ShardID
		sh       *shardOf
		segment  bool                  // id's index uses segment replication
		shares   map[string]indexShare // sharesOf's copies per node
		sharesOf string
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
		if n := len(sh.copies); n == 0 || &sh.copies[n-1] == &held[len(held)-1] {
			// The shard's copies so far end the slab: it grows by one in place, capped so
			// that no append elsewhere writes into the slab.
			held = append(held, c)
			sh.copies = held[len(held)-n-1 : len(held) : len(held)]
		} else {
			sh.copies = append(sh.copies, c)
		}
		source := v.stateOf(c.Node)
		holder := source
		if c.State == cluster.StateRelocating && c.RelocatingNode != "" {
			// The target already holds the incoming copy for the same-shard rule and counts it for
			// balance, as OpenSearch does.
			holder = v.stateOf(c.RelocatingNode)
			holder.holds[id] = true
		}
		source.holds[id] = true
		if shares == nil || c.Index != sharesOf {
			sharesOf = c.Index
			if shares = v.indexOn[c.Index]; shares == nil {
				shares = map[string]indexShare{}
				v.indexOn[c.Index] = shares
			}
		}
		share := shares[holder.id]
		share.copies++
		holder.copies++
		if c.Primary && v.countPrimaries {
			share.primaries++
			holder.primaries++
		}
		shares[holder.id] = share
	}
	// Index time undercounts a saturated WRITE pool (a bulk request's parsing, routing and translog
	// work is not indexing time); a hot node is queueing, so every thread is busy: its projected load
	// is at least its active threads, as hotspot detection already counts it.
	for _, n := range v.data {
		if v.hot[n.ID] {
			st := v.node[n.ID]
			st.writeLoad = math.Max(st.writeLoad, float64(min(n.Write.Active, n.Write.Threads)))
		}
	}
	// A relocation in flight moves its copy's load: the source is projected without it and the
	// target with it, so relief already under way is counted once and no target is filled twice.
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.State == cluster.StateRelocating && c.Node != "" && v.Node(c.RelocatingNode) != nil {
			load := v.CopyLoad(c)
			src, dst := v.stateOf(c.Node), v.stateOf(c.RelocatingNode)
			src.writeLoad -= load
			src.inFlight -= load
			dst.writeLoad += load
			dst.inFlight += load
		}
	}
	// A copy whose rate is unknown this sample (it just arrived, or its counters reset) still bears
	// its part of the shard's write load (CopyLoad). Without this a node that just received a hot
	// copy would look cold and attract another one.
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.Active() && c.Node != "" && !c.LoadKnown {
			v.stateOf(c.Node).writeLoad += v.CopyLoad(c)
		}
	}
	return v
}

// stateOf returns the node's projection, made empty for a node the snapshot does not list.
func (v *View) stateOf(node string) *nodeState {
	st := v.node[node]
	if st == nil {
		st = &nodeState{id: node, holds: map[cluster.ShardID]bool{}}
		v.node[node] = st
	}
	return st
}

// figures returns the node's projected numbers, zero for a node the view does not know.
func (v *View) figures(node string) nodeFigures {
	if st := v.node[node]; st != nil {
		return st.nodeFigures
	}
	return nodeFigures{}
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
func (v *View) Node(id string) *cluster.Node {
	if st := v.node[id]; st != nil {
		return st.node
	}
	return nil
}

// NodeName is the name of the node with id, or the id when the snapshot does not list it.
func (v *View) NodeName(id string) string {
	if n := v.Node(id); n != nil {
		return n.Name
	}
	return id
}

// Index returns index metadata by name.
func (v *View) Index(name string) *cluster.Index { return v.index[name] }

// Holds reports whether the node holds (or is receiving) a copy of the shard.
func (v *View) Holds(node string, id cluster.ShardID) bool {
	st := v.node[node]
	return st != nil && st.holds[id]
}

// WriteLoad is the node's projected write load in threads.
func (v *View) WriteLoad(node string) float64 { return v.figures(node).writeLoad }

// Utilization is the node's projected WRITE pool utilization.
func (v *View) Utilization(node string) float64 {
	st := v.node[node]
	if st == nil || st.node == nil || st.node.Write.Threads <= 0 {
		return 0
	}
	return st.writeLoad / float64(st.node.Write.Threads)
}

// IndexCopies returns how many copies of the index the node holds after planned moves.
func (v *View) IndexCopies(index, node string) int { return int(v.indexOn[index][node].copies) }

// IndexCopiesOf returns IndexCopies for one index, its entry found once: a lookup by node for
// callers that ask about every node. It reads the view as it is when called.
func (v *View) IndexCopiesOf(index string) func(node string) int {
	shares := v.indexOn[index]
	return func(node string) int { return int(shares[node].copies) }
}

// NodeCopies returns how many copies the node holds after planned moves.
func (v *View) NodeCopies(node string) int { return v.figures(node).copies }

// IndexPrimaries returns how many primaries of the index the node holds after planned moves.
func (v *View) IndexPrimaries(index, node string) int { return int(v.indexOn[index][node].primaries) }

// NodePrimaries returns how many primaries of all indices the node holds after planned moves.
func (v *View) NodePrimaries(node string) int { return v.figures(node).primaries }

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
	n := v.Node(node)
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
	for _, share := range v.indexOn[index] {
		copies = max(copies, int(share.copies))
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

// segmentReplica reports whether c is a replica of a segment-replication index: it copies its
// primary's segments instead of indexing.
func (v *View) segmentReplica(c *cluster.Copy) bool { return !c.Primary && v.segment(c.Index) }

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
	st := v.node[node]
	if st == nil || st.node == nil || st.copies <= 0 {
		return 0
	}
	return float64(st.node.HeapUsedBytes) / float64(st.copies)
}

// SetDemand raises a hot node's projected load to the demand its growing backlog shows (see
// Hotspot.Demand): its counters only show what a saturated pool served. The demand is what the
// node is asked for with the copies it serves now, so the relocations in flight are moved out of
// it (and into it) as they are out of its served load: a copy relocating off a hot node is relief
// under way, and a view that forgot it planned a further group every cycle, which the move
// function held back while the copy relocated (random seeds 1, 13, 24).
func (v *View) SetDemand(node string, threads float64) {
	if st := v.node[node]; st != nil && threads+st.inFlight > st.writeLoad {
		st.writeLoad = threads + st.inFlight
	}
}

// demandUtil is a node's WRITE utilization were it asked for threads with the copies it serves now:
// the relocations in flight moved out of it and into it, as SetDemand does.
func (v *View) demandUtil(node string, threads float64) float64 {
	st := v.node[node]
	if st == nil || st.node == nil || st.node.Write.Threads <= 0 {
		return 0
	}
	return (threads + st.inFlight) / float64(st.node.Write.Threads)
}

// addGrowth raises a rising node's projected load by the threads its climb adds by the time its
// relief lands (Rise.Growth), over what the view holds for it: relocations in flight off it stay
// counted.
func (v *View) addGrowth(node string, threads float64) {
	if st := v.node[node]; st != nil && threads > 0 {
		st.writeLoad += threads
	}
}

// Apply records a planned move so later decisions see it.
func (v *View) Apply(m Move) {
	if v.placed == nil {
		v.placed = map[cluster.ShardID]Move{}
	}
	id := cluster.ShardID{Index: m.Index, Shard: m.Shard}
	if _, ok := v.placed[id]; !ok {
		v.markOurs(m.Index, false)
	}
	v.placed[id] = m
	v.apply(m)
}

// markOurs counts a copy of index that shardwise placed (oursIn), and one placed in an earlier cycle
// (settledIn) when settled.
func (v *View) markOurs(index string, settled bool) {
	if v.oursIn == nil {
		v.oursIn, v.settledIn = map[string]int{}, map[string]int{}
	}
	v.oursIn[index]++
	if settled {
		v.settledIn[index]++
	}
}

// undoStep is one entry of the view's undo stack: a node's figures, whether it held a shard and its
// share of the shard's index, as they were before a move changed them.
type undoStep struct {
	st       *nodeState
	was      nodeFigures
	shard    cluster.ShardID
	held     bool       // st held shard
	share    indexShare // st's share of shard's index
	hadShare bool       // the index's shares listed st
}

// checkpoint is a point of the undo stack to roll back to, and the counts' number there.
type checkpoint struct{ steps, counted int }

func (v *View) checkpoint() checkpoint { return checkpoint{steps: len(v.undo), counted: v.counted} }

// save pushes what a move of shard is about to change on node, and returns the node's projection.
func (v *View) save(node string, id cluster.ShardID) *nodeState {
	st := v.stateOf(node)
	share, had := v.indexOn[id.Index][node]
	v.undo = append(v.undo, undoStep{st: st, was: st.nodeFigures, shard: id, held: st.holds[id], share: share, hadShare: had})
	return st
}

// rollback pops the undo stack back to cp, putting every figure back exactly, newest first.
func (v *View) rollback(cp checkpoint) {
	for i := len(v.undo) - 1; i >= cp.steps; i-- {
		u := &v.undo[i]
		u.st.nodeFigures = u.was
		if u.held {
			u.st.holds[u.shard] = true
		} else {
			delete(u.st.holds, u.shard)
		}
		if u.hadShare {
			v.indexOn[u.shard.Index][u.st.id] = u.share
		} else {
			delete(v.indexOn[u.shard.Index], u.st.id)
		}
		delete(v.limits, u.shard.Index)
		*u = undoStep{}
	}
	if cp.steps < len(v.undo) {
		v.undo = v.undo[:cp.steps]
	}
	v.counted = cp.counted
}

// try applies moves and returns a function that takes them back, in reverse order, exactly.
func (v *View) try(moves []Move) (restore func()) {
	cp := v.checkpoint()
	for _, m := range moves {
		v.apply(m)
	}
	return func() { v.rollback(cp) }
}

// count moves one copy of index (a primary when primary, and primaries are counted) off from and
// onto to. Both are saved on the undo stack first.
func (v *View) count(index string, from, to *nodeState, primary bool) {
	shares := v.indexOn[index]
	if shares == nil {
		shares = map[string]indexShare{}
		v.indexOn[index] = shares
	}
	primary = primary && v.countPrimaries
	for _, c := range [2]struct {
		st *nodeState
		d  int
	}{{from, -1}, {to, 1}} {
		share := shares[c.st.id]
		share.copies += int32(c.d)
		c.st.copies += c.d
		if primary {
			share.primaries += int32(c.d)
			c.st.primaries += c.d
		}
		shares[c.st.id] = share
	}
	v.countedSeq++
	v.counted = v.countedSeq
	delete(v.limits, index)
}

// apply moves m's copy in the projection, saving what it changes on the undo stack.
func (v *View) apply(m Move) {
	id := cluster.ShardID{Index: m.Index, Shard: m.Shard}
	from, to := v.save(m.From, id), v.save(m.To, id)
	delete(from.holds, id)
	to.holds[id] = true
	v.count(m.Index, from, to, m.Primary)
	from.writeLoad -= m.WriteLoad
	to.writeLoad += m.WriteLoad
	to.diskUsed += m.SizeBytes
	// The source keeps its bytes until the relocation finishes; heap moves with the copy.
	h := v.heapPerCopy(m.From)
	from.heapUsed -= h
	to.heapUsed += h
}
