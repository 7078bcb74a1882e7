package sim

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// Elasticsearch's BalancedShardsAllocator defaults (its SHARD_BALANCE_FACTOR_SETTING,
// INDEX_BALANCE_FACTOR_SETTING, WRITE_LOAD_BALANCE_FACTOR_SETTING, DISK_USAGE_BALANCE_FACTOR_SETTING
// and THRESHOLD_SETTING, whose minimum is also 1.0). The cluster settings of the same names override them.
const (
	esShardBalance     = 0.45
	esIndexBalance     = 0.55
	esWriteLoadBalance = 10.0
	esDiskUsageBalance = 2e-11
	esThreshold        = 1.0
	// esLessThanSlack is Balancer.lessThan's rounding: deltas within 0.001 above the threshold count as under it.
	esLessThanSlack = 0.001
)

// esWeightFunction is Elasticsearch's WeightFunction: the four balance factors normalised by their sum.
// It computes in float32, as the Java code does, so deltas near the threshold round the same way.
type esWeightFunction struct {
	theta0, theta1, theta2, theta3 float32 // shard count, index, write load, disk usage
}

func newESWeightFunction(shard, index, writeLoad, disk float32) esWeightFunction {
	sum := shard + index + writeLoad + disk
	if sum <= 0 {
		// Elasticsearch refuses such settings; fall back to its defaults rather than divide by zero.
		return newESWeightFunction(esShardBalance, esIndexBalance, esWriteLoadBalance, esDiskUsageBalance)
	}
	return esWeightFunction{theta0: shard / sum, theta1: index / sum, theta2: writeLoad / sum, theta3: disk / sum}
}

// nodeWeight is calculateNodeWeight: θ0·(shards − avg) + θ2·(write load − avg) + θ3·(disk bytes − avg).
// The explicit conversions keep each product rounded to float32, as in Java, and stop fused multiply-adds.
func (w esWeightFunction) nodeWeight(shards int, avgShards float32, writeLoad, avgWriteLoad, disk, avgDisk float64) float32 {
	weightShard := float32(shards) - avgShards
	ingest := float32(writeLoad - avgWriteLoad)
	diskUsage := float32(disk - avgDisk)
	return float32(w.theta0*weightShard) + float32(w.theta2*ingest) + float32(w.theta3*diskUsage)
}

// withIndex is calculateNodeWeightWithIndex: the node's weight plus θ1·(shards of the index − avg for it).
func (w esWeightFunction) withIndex(nodeWeight float32, indexShards int, avgIndexShards float32) float32 {
	return nodeWeight + float32(w.theta1*(float32(indexShards)-avgIndexShards))
}

// minWeightDelta is the weight one shard of the index moves: θ0 + θ1 + θ2·shard write load + θ3·shard bytes.
// Elasticsearch multiplies the threshold setting by it for each index.
func (w esWeightFunction) minWeightDelta(shardWriteLoad, shardBytes float32) float32 {
	return w.theta0*1 + w.theta1*1 + float32(w.theta2*shardWriteLoad) + float32(w.theta3*shardBytes)
}

// esLessThan is Balancer.lessThan.
func esLessThan(delta, threshold float32) bool { return delta <= threshold+esLessThanSlack }

// esBalancer is one round of Elasticsearch's Balancer over the simulated cluster. Its model (shard,
// write load and disk sums per node, shards per index and node) follows buildModelFromAssigned: a
// relocating copy counts on its target only. Throttled decisions change the model and not the
// cluster, as in Elasticsearch; the deciders see only the cluster.
type esBalancer struct {
	s         *Sim
	fn        esWeightFunction
	threshold float32

	// nodes is the ModelNode array every sort permutes in place; weights is parallel to it.
	nodes   []*node
	weights []float32

	avgShards         float32
	avgWrite, avgDisk float64

	shards    []int     // by node ord
	write     []float64 // by node ord
	disk      []float64 // by node ord
	nodeW     []float32 // by node ord, nodeWeight of the three sums above
	counts    [][]int   // [index ord][node ord]
	shardLoad [][]float64
	meanLoad  []float64 // per index: its mean shard write load, Elasticsearch's one forecast per index
	// modelAt holds copies the model placed where the cluster has not (throttled allocations and
	// moves); they are no longer started in the model, so a round moves a copy at most once.
	modelAt map[*shardCopy]*node
	// budget is how many rebalance relocations cluster_concurrent_rebalance still allows.
	budget int
	// wl is the write-load decider's view for es-writeload (eswriteload.go); nil for es-weights.
	wl *esWriteLoadRound
}

// allocateESWeights is BalancedShardsAllocator.allocate run with Elasticsearch's weight function in
// place of OpenSearch's: allocate unassigned copies, move those that may not remain, then balance.
// refresh must have run. It returns the relocations its rebalancing started.
func (s *Sim) allocateESWeights() int {
	b := s.newESBalancer()
	b.allocateUnassigned()
	b.moveShards()
	if v := s.canRebalance(false); v.typ != decYes || len(b.nodes) < 2 {
		return 0
	}
	return b.balance()
}

// forecastWriteLoad is Elasticsearch's write load forecast for a shard of ix, in WRITE threads: one
// figure per index, the same for each of its shards (IndexMetadata's forecasted write load, read by
// the balancer through WriteLoadForecaster). Elasticsearch forecasts it from the index's history when
// the index is created by a rollover, and it stays fixed for the index's life; the simulator's
// indices do not roll over, so their history is the load they carry at the scenario's start. A spike
// later in the run is what the forecast cannot see, as in Elasticsearch.
func forecastWriteLoad(ix *index) float64 {
	if len(ix.shards) == 0 {
		return 0
	}
	w, _ := ix.loads(0)
	return w / float64(len(ix.shards))
}

// liveWriteLoad is a shard's true WRITE load this tick, in threads: what RebalancerESWeightsLive
// gives the weight function in place of the forecast, knowledge Elasticsearch does not have.
func liveWriteLoad(sh *shard) float64 {
	w := 0.0
	for _, c := range sh.copies {
		w = max(w, c.writeDemand)
	}
	return w
}

func (s *Sim) newESBalancer() *esBalancer {
	cfg := s.config()
	nn := len(s.nodes)
	b := &esBalancer{
		s: s,
		fn: newESWeightFunction(
			float32(s.floatSetting("cluster.routing.allocation.balance.shard", esShardBalance)),
			float32(s.floatSetting("cluster.routing.allocation.balance.index", esIndexBalance)),
			float32(s.floatSetting("cluster.routing.allocation.balance.write_load", esWriteLoadBalance)),
			float32(s.floatSetting("cluster.routing.allocation.balance.disk_usage", esDiskUsageBalance))),
		threshold: float32(max(s.floatSetting("cluster.routing.allocation.balance.threshold", esThreshold), esThreshold)),
		shards:    make([]int, nn),
		write:     make([]float64, nn),
		disk:      make([]float64, nn),
		nodeW:     make([]float32, nn),
		counts:    make([][]int, len(s.indices)),
		shardLoad: make([][]float64, len(s.indices)),
		meanLoad:  make([]float64, len(s.indices)),
		modelAt:   map[*shardCopy]*node{},
		budget:    math.MaxInt,
	}
	if cfg.concurrentRebalance >= 0 {
		b.budget = cfg.concurrentRebalance - s.relocatingCount()
	}
	for _, n := range s.nodeOrder {
		if n.present {
			b.nodes = append(b.nodes, n)
		}
	}
	b.weights = make([]float32, len(b.nodes))
	totalShards, totalWrite, totalDisk := 0, 0.0, 0.0
	for _, ix := range s.indices {
		b.counts[ix.ord] = make([]int, nn)
		b.shardLoad[ix.ord] = make([]float64, len(ix.shards))
		copies := ix.replicas + 1
		indexLoad := 0.0
		forecast := forecastWriteLoad(ix)
		for _, sh := range ix.shards {
			load := forecast
			if s.rebalancer == RebalancerESWeightsLive {
				load = liveWriteLoad(sh)
			}
			b.shardLoad[ix.ord][sh.num] = load
			indexLoad += load
			for _, c := range sh.copies {
				at := c.node
				if c.target != nil {
					at = c.target
				}
				if at != nil && at.present {
					b.add(at, ix, load)
				}
			}
		}
		if len(ix.shards) > 0 {
			b.meanLoad[ix.ord] = indexLoad / float64(len(ix.shards))
		}
		// WeightFunction's averages count every copy the metadata has, assigned or not.
		totalShards += len(ix.shards) * copies
		totalWrite += indexLoad * float64(copies)
		totalDisk += float64(ix.shardBytes) * float64(len(ix.shards)*copies)
	}
	if len(b.nodes) > 0 {
		b.avgShards = float32(totalShards) / float32(len(b.nodes))
		b.avgWrite = totalWrite / float64(len(b.nodes))
		b.avgDisk = totalDisk / float64(len(b.nodes))
	}
	for _, n := range b.nodes {
		b.reweigh(n)
	}
	return b
}

// add and remove are ModelNode.addShard and removeShard for a copy of ix with the given write load.
func (b *esBalancer) add(n *node, ix *index, load float64) {
	b.shards[n.ord]++
	b.write[n.ord] += load
	b.disk[n.ord] += float64(ix.shardBytes)
	b.counts[ix.ord][n.ord]++
	b.reweigh(n)
}

func (b *esBalancer) remove(n *node, ix *index, load float64) {
	b.shards[n.ord]--
	b.write[n.ord] -= load
	b.disk[n.ord] -= float64(ix.shardBytes)
	b.counts[ix.ord][n.ord]--
	b.reweigh(n)
}

func (b *esBalancer) reweigh(n *node) {
	b.nodeW[n.ord] = b.fn.nodeWeight(b.shards[n.ord], b.avgShards, b.write[n.ord], b.avgWrite, b.disk[n.ord], b.avgDisk)
}

// weight is calculateNodeWeightWithIndex for n and ix in the model.
func (b *esBalancer) weight(n *node, ix *index) float32 {
	avgIndex := float32(len(ix.shards)*(ix.replicas+1)) / float32(len(b.nodes))
	return b.fn.withIndex(b.nodeW[n.ord], b.counts[ix.ord][n.ord], avgIndex)
}

// localThreshold is the threshold setting times minWeightDelta for ix, with the index's largest
// shard size (maxShardSizeBytes) and its shard write load forecast: every shard of an index carries
// the same forecast, so no single move shifts more weight than the threshold.
func (b *esBalancer) localThreshold(ix *index) float32 {
	return b.fn.minWeightDelta(float32(b.meanLoad[ix.ord]), float32(ix.shardBytes)) * b.threshold
}

// byWeight sorts nodes[from:to] and weights[from:to] together, lightest first, as NodeSorter does;
// ties keep their order.
type byWeight struct {
	nodes   []*node
	weights []float32
}

func (w byWeight) Len() int           { return len(w.nodes) }
func (w byWeight) Less(i, j int) bool { return w.weights[i] < w.weights[j] }
func (w byWeight) Swap(i, j int) {
	w.nodes[i], w.nodes[j] = w.nodes[j], w.nodes[i]
	w.weights[i], w.weights[j] = w.weights[j], w.weights[i]
}

// reset is NodeSorter.reset(index, from, to): weigh nodes[from:to] for ix and sort them.
func (b *esBalancer) reset(ix *index, from, to int) {
	for i := from; i < to; i++ {
		b.weights[i] = b.weight(b.nodes[i], ix)
	}
	b.sort(from, to)
}

func (b *esBalancer) sort(from, to int) {
	sort.Stable(byWeight{nodes: b.nodes[from:to], weights: b.weights[from:to]})
}

// located is where the model has c: where the model moved it, else a relocation's target, else its node.
func (b *esBalancer) located(c *shardCopy) *node {
	if n, ok := b.modelAt[c]; ok {
		return n
	}
	if c.target != nil {
		return c.target
	}
	return c.node
}

// startedOn reports whether c is a started copy on n in the model.
func (b *esBalancer) startedOn(c *shardCopy, n *node) bool {
	_, moved := b.modelAt[c]
	return !moved && c.state == stateStarted && c.node == n
}

// highestPrimary is ModelNode.highestPrimary: the highest shard number of a primary of ix on n, or -1.
func (b *esBalancer) highestPrimary(n *node, ix *index) int {
	hi := -1
	for _, sh := range ix.shards {
		for _, c := range sh.copies {
			if c.primary && b.located(c) == n {
				hi = max(hi, sh.num)
			}
		}
	}
	return hi
}

// allocateUnassigned is Balancer.allocateUnassigned: primaries first, then by index (name descending,
// PriorityComparator's last tie-break, every index here having the same priority and creation date)
// and shard number. After one replica of a shard is assigned, its other replicas wait for the next
// pass; when one cannot be, the others are not tried.
func (b *esBalancer) allocateUnassigned() {
	s := b.s
	pending := s.allocatable()
	order := func(x, y *shardCopy) int {
		if x.primary != y.primary {
			if x.primary {
				return -1
			}
			return 1
		}
		if x.sh.idx != y.sh.idx {
			return cmp.Compare(y.sh.idx.name, x.sh.idx.name)
		}
		return cmp.Compare(x.sh.num, y.sh.num)
	}
	slices.SortStableFunc(pending, order)
	for len(pending) > 0 {
		var next []*shardCopy
		for i := 0; i < len(pending); i++ {
			c := pending[i]
			n, t := b.decideAllocateUnassigned(c)
			if t == decYes {
				s.initialize(c, n, false)
				place(n, c.sh.idx)
				b.add(n, c.sh.idx, b.shardLoad[c.sh.idx.ord][c.sh.num])
			} else if n != nil {
				// Throttled: the model holds the copy there; the cluster leaves it unassigned.
				b.modelAt[c] = n
				b.add(n, c.sh.idx, b.shardLoad[c.sh.idx.ord][c.sh.num])
			}
			if c.primary {
				continue
			}
			// The shard's other replicas wait for the next pass, or are given up with this one.
			for i < len(pending)-1 && order(pending[i], pending[i+1]) == 0 {
				i++
				if t == decYes {
					next = append(next, pending[i])
				}
			}
		}
		pending = next
	}
}

// decideAllocateUnassigned is Balancer.decideAllocateUnassigned: the node of least weight whose
// deciders say YES or THROTTLE. On equal weights YES beats THROTTLE; between equal decisions the
// tie goes by the highest primary of the index each node holds, building the ring 1 2 0 / 2 0 1 / 0 1 2.
func (b *esBalancer) decideAllocateUnassigned(c *shardCopy) (*node, decisionType) {
	sh, ix := c.sh, c.sh.idx
	minWeight := float32(math.Inf(1))
	var minNode *node
	minType := decNo
	for _, n := range b.nodes {
		w := b.weight(n, ix)
		if w > minWeight {
			continue
		}
		t := b.s.canAllocate(sh, c, n, false, false).typ
		if t == decNo {
			continue
		}
		update := w < minWeight
		if w == minWeight {
			if t == minType {
				rep, nodeHigh, minHigh := sh.num, b.highestPrimary(n, ix), b.highestPrimary(minNode, ix)
				update = (((nodeHigh > rep && minHigh > rep) || (nodeHigh < rep && minHigh < rep)) && nodeHigh < minHigh) ||
					(nodeHigh > rep && minHigh < rep)
			} else {
				update = t == decYes
			}
		}
		if update {
			minNode, minWeight, minType = n, w, t
		}
	}
	return minNode, minType
}

// moveShards is Balancer.moveShards: over started copies, one node's at a time in turn
// (nodeInterleavedShardIterator), a copy that may not remain moves to the first node, lightest first
// for its index, whose deciders say YES.
func (b *esBalancer) moveShards() {
	s := b.s
	perNode := make([][]*shardCopy, len(b.nodes))
	for i, n := range b.nodes {
		for _, c := range s.copiesOn(n) {
			perNode[i] = append(perNode[i], c)
		}
	}
	var order []*shardCopy
	for k := 0; ; k++ {
		more := false
		for _, cs := range perNode {
			if k < len(cs) {
				order = append(order, cs[k])
				more = true
			}
		}
		if !more {
			break
		}
	}
	for _, c := range order {
		if !b.startedOn(c, c.node) || s.canRemain(c, false).typ != decNo {
			continue
		}
		ix, from := c.sh.idx, c.node
		b.reset(ix, 0, len(b.nodes))
		for _, to := range b.nodes {
			if to == from || s.canAllocate(c.sh, c, to, false, false).typ != decYes {
				continue
			}
			s.relocatePlaced(c, to, allocatorMove(c, from))
			load := b.shardLoad[ix.ord][c.sh.num]
			b.remove(from, ix, load)
			b.add(to, ix, load)
			break
		}
	}
}

// balance runs balanceByWeights over the one partition a stateful cluster has and returns the
// relocations it started.
func (b *esBalancer) balance() int {
	started := 0
	for _, ix := range b.weightOrderedIndices() {
		if b.budget <= 0 {
			// Every later move would be throttled by cluster_concurrent_rebalance, which Elasticsearch
			// makes in its model only: nothing more reaches the cluster.
			break
		}
		started += b.balanceIndex(ix)
	}
	return started
}

// weightOrderedIndices is buildWeightOrderedIndices: indices by the spread of their node weights,
// widest first.
func (b *esBalancer) weightOrderedIndices() []*index {
	type indexDelta struct {
		ix    *index
		delta float32
	}
	order := make([]indexDelta, 0, len(b.s.indices))
	for _, ix := range b.s.routingOrder() {
		b.reset(ix, 0, len(b.nodes))
		order = append(order, indexDelta{ix, b.weights[len(b.weights)-1] - b.weights[0]})
	}
	slices.SortStableFunc(order, func(x, y indexDelta) int { return cmp.Compare(y.delta, x.delta) })
	out := make([]*index, len(order))
	for i, od := range order {
		out[i] = od.ix
	}
	return out
}

// balanceIndex is balanceByWeights' loop for one index: while the heaviest node holding a copy
// outweighs the lightest by more than the index's threshold, relocate a copy between them; when no
// copy can go, narrow the window from the light end, then from the heavy end.
func (b *esBalancer) balanceIndex(ix *index) int {
	cfg := b.s.config()
	// Nodes that hold a copy or that the index's filters allow come first.
	relevant := 0
	for i, n := range b.nodes {
		if b.counts[ix.ord][n.ord] > 0 || (ix.filters.check(n, "index") == "" && cfg.filters.check(n, "cluster") == "") {
			b.nodes[i], b.nodes[relevant] = b.nodes[relevant], n
			relevant++
		}
	}
	if relevant < 2 {
		return 0
	}
	b.reset(ix, 0, relevant)
	lo, hi := 0, relevant-1
	threshold := b.localThreshold(ix)
	started := 0
	for {
		minNode, maxNode := b.nodes[lo], b.nodes[hi]
		if b.counts[ix.ord][maxNode.ord] > 0 {
			delta := b.weights[hi] - b.weights[lo]
			if esLessThan(delta, threshold) {
				// Past a node the deciders keep from the lightest (awareness, say), a wider gap may remain.
				if !(lo > 0 && hi-1 > 0 && abs32(b.weights[hi-1]-b.weights[0]) > threshold) {
					return started
				}
			} else if delta > threshold {
				if moved, relocated := b.tryRelocate(minNode, maxNode, ix); moved {
					if relocated {
						started++
						if b.budget <= 0 {
							return started
						}
					}
					b.weights[lo] = b.weight(minNode, ix)
					b.weights[hi] = b.weight(maxNode, ix)
					b.sort(0, relevant)
					lo, hi = 0, relevant-1
					continue
				}
			}
		}
		switch {
		case lo < hi-1:
			lo++
		case lo > 0:
			lo, hi = 0, hi-1
		default:
			return started
		}
	}
}

// tryRelocate is tryRelocateShard: the started copies of ix on maxNode, highest shard number first,
// the first that may rebalance and that the deciders allow on minNode moves there. Under THROTTLE
// the move is made in the model only; relocated reports whether the cluster relocates it.
func (b *esBalancer) tryRelocate(minNode, maxNode *node, ix *index) (moved, relocated bool) {
	s := b.s
	if b.counts[ix.ord][maxNode.ord] == 0 {
		return false, false
	}
	for i := len(ix.shards) - 1; i >= 0; i-- {
		sh := ix.shards[i]
		for _, c := range sh.copies {
			if !b.startedOn(c, maxNode) || !b.mayRebalance(c) {
				continue
			}
			t := s.canAllocate(sh, c, minNode, false, false).typ
			if t == decNo || !b.wl.accepts(sh, minNode) {
				continue
			}
			if b.budget <= 0 {
				t = decThrottle // ConcurrentRebalanceAllocationDecider's canRebalance
			}
			load := b.shardLoad[ix.ord][sh.num]
			b.remove(maxNode, ix, load)
			b.add(minNode, ix, load)
			b.modelAt[c] = minNode
			if t != decYes {
				return true, false
			}
			s.relocatePlaced(c, minNode, relocBaseline)
			b.budget--
			return true, true
		}
	}
	return false, false
}

// mayRebalance is EnableAllocationDecider.canRebalance for c under cluster.routing.rebalance.enable.
func (b *esBalancer) mayRebalance(c *shardCopy) bool {
	switch b.s.config().rebalanceEnable {
	case "none":
		return false
	case "primaries":
		return c.primary
	case "replicas":
		return !c.primary
	}
	return true
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
