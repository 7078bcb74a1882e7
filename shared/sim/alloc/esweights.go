package alloc

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/shardwise/shardwise/shared/sim/model"
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

// ESBalancer is one round of Elasticsearch's Balancer over the simulated cluster. Its model (shard,
// write load and disk sums per node, shards per index and node) follows buildModelFromAssigned: a
// relocating copy counts on its target only. Throttled decisions change the model and not the
// cluster, as in Elasticsearch; the deciders see only the cluster.
type ESBalancer struct {
	s         *Allocator
	fn        esWeightFunction
	threshold float32

	// nodes is the ModelNode array every sort permutes in place; weights is parallel to it.
	nodes   []*model.Node
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
	modelAt map[*model.ShardCopy]*model.Node
	// budget is how many rebalance relocations cluster_concurrent_rebalance still allows.
	budget int
	// wl is the write-load decider's view for es-writeload (eswriteload.go); nil for es-weights.
	wl *EsWriteLoadRound
}

// allocateESWeights is BalancedShardsAllocator.allocate run with Elasticsearch's weight function in
// place of OpenSearch's: allocate unassigned copies, move those that may not remain, then balance.
// refresh must have run. It returns the relocations its rebalancing started.
func (s *Allocator) allocateESWeights() int {
	b := s.NewESBalancer()
	b.allocateUnassigned()
	b.moveShards()
	if v := s.CanRebalance(false); v.Typ != DecYes || len(b.nodes) < 2 {
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
func forecastWriteLoad(ix *model.Index) float64 {
	if len(ix.Shards) == 0 {
		return 0
	}
	w, _ := ix.Loads(0)
	return w / float64(len(ix.Shards))
}

// liveWriteLoad is a shard's true WRITE load this tick, in threads: what RebalancerESWeightsLive
// gives the weight function in place of the forecast, knowledge Elasticsearch does not have.
func liveWriteLoad(sh *model.Shard) float64 {
	w := 0.0
	for _, c := range sh.Copies {
		w = max(w, c.WriteDemand)
	}
	return w
}

// NewESBalancer builds one round's Balancer from the cluster's balance settings and its routing.
func (s *Allocator) NewESBalancer() *ESBalancer {
	cfg := s.Config()
	nn := len(s.Nodes)
	b := &ESBalancer{
		s: s,
		fn: newESWeightFunction(
			float32(s.FloatSetting("cluster.routing.allocation.balance.shard", esShardBalance)),
			float32(s.FloatSetting("cluster.routing.allocation.balance.index", esIndexBalance)),
			float32(s.FloatSetting("cluster.routing.allocation.balance.write_load", esWriteLoadBalance)),
			float32(s.FloatSetting("cluster.routing.allocation.balance.disk_usage", esDiskUsageBalance))),
		threshold: float32(max(s.FloatSetting("cluster.routing.allocation.balance.threshold", esThreshold), esThreshold)),
		shards:    make([]int, nn),
		write:     make([]float64, nn),
		disk:      make([]float64, nn),
		nodeW:     make([]float32, nn),
		counts:    make([][]int, len(s.Indices)),
		shardLoad: make([][]float64, len(s.Indices)),
		meanLoad:  make([]float64, len(s.Indices)),
		modelAt:   map[*model.ShardCopy]*model.Node{},
		budget:    math.MaxInt,
	}
	if cfg.ConcurrentRebalance >= 0 {
		b.budget = cfg.ConcurrentRebalance - s.RelocatingCount()
	}
	for _, n := range s.NodeOrder {
		if n.Present {
			b.nodes = append(b.nodes, n)
		}
	}
	b.weights = make([]float32, len(b.nodes))
	totalShards, totalWrite, totalDisk := 0, 0.0, 0.0
	for _, ix := range s.Indices {
		b.counts[ix.Ord] = make([]int, nn)
		b.shardLoad[ix.Ord] = make([]float64, len(ix.Shards))
		copies := ix.Replicas + 1
		indexLoad := 0.0
		forecast := forecastWriteLoad(ix)
		for _, sh := range ix.Shards {
			load := forecast
			if s.Rebalancer == model.RebalancerESWeightsLive {
				load = liveWriteLoad(sh)
			}
			b.shardLoad[ix.Ord][sh.Num] = load
			indexLoad += load
			for _, c := range sh.Copies {
				at := c.Node
				if c.Target != nil {
					at = c.Target
				}
				if at != nil && at.Present {
					b.add(at, ix, load)
				}
			}
		}
		if len(ix.Shards) > 0 {
			b.meanLoad[ix.Ord] = indexLoad / float64(len(ix.Shards))
		}
		// WeightFunction's averages count every copy the metadata has, assigned or not.
		totalShards += len(ix.Shards) * copies
		totalWrite += indexLoad * float64(copies)
		totalDisk += float64(ix.ShardBytes) * float64(len(ix.Shards)*copies)
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
func (b *ESBalancer) add(n *model.Node, ix *model.Index, load float64) {
	b.shards[n.Ord]++
	b.write[n.Ord] += load
	b.disk[n.Ord] += float64(ix.ShardBytes)
	b.counts[ix.Ord][n.Ord]++
	b.reweigh(n)
}

func (b *ESBalancer) remove(n *model.Node, ix *model.Index, load float64) {
	b.shards[n.Ord]--
	b.write[n.Ord] -= load
	b.disk[n.Ord] -= float64(ix.ShardBytes)
	b.counts[ix.Ord][n.Ord]--
	b.reweigh(n)
}

func (b *ESBalancer) reweigh(n *model.Node) {
	b.nodeW[n.Ord] = b.fn.nodeWeight(b.shards[n.Ord], b.avgShards, b.write[n.Ord], b.avgWrite, b.disk[n.Ord], b.avgDisk)
}

// Weight is calculateNodeWeightWithIndex for n and ix in the model.
func (b *ESBalancer) Weight(n *model.Node, ix *model.Index) float32 {
	avgIndex := float32(len(ix.Shards)*(ix.Replicas+1)) / float32(len(b.nodes))
	return b.fn.withIndex(b.nodeW[n.Ord], b.counts[ix.Ord][n.Ord], avgIndex)
}

// LocalThreshold is the threshold setting times minWeightDelta for ix, with the index's largest
// shard size (maxShardSizeBytes) and its shard write load forecast: every shard of an index carries
// the same forecast, so no single move shifts more weight than the threshold.
func (b *ESBalancer) LocalThreshold(ix *model.Index) float32 {
	return b.fn.minWeightDelta(float32(b.meanLoad[ix.Ord]), float32(ix.ShardBytes)) * b.threshold
}

// byWeight sorts nodes[from:to] and weights[from:to] together, lightest first, as NodeSorter does;
// ties keep their order.
type byWeight struct {
	nodes   []*model.Node
	weights []float32
}

func (w byWeight) Len() int           { return len(w.nodes) }
func (w byWeight) Less(i, j int) bool { return w.weights[i] < w.weights[j] }
func (w byWeight) Swap(i, j int) {
	w.nodes[i], w.nodes[j] = w.nodes[j], w.nodes[i]
	w.weights[i], w.weights[j] = w.weights[j], w.weights[i]
}

// reset is NodeSorter.reset(index, from, to): weigh nodes[from:to] for ix and sort them.
func (b *ESBalancer) reset(ix *model.Index, from, to int) {
	for i := from; i < to; i++ {
		b.weights[i] = b.Weight(b.nodes[i], ix)
	}
	b.sort(from, to)
}

func (b *ESBalancer) sort(from, to int) {
	sort.Stable(byWeight{nodes: b.nodes[from:to], weights: b.weights[from:to]})
}

// located is where the model has c: where the model moved it, else a relocation's target, else its node.
func (b *ESBalancer) located(c *model.ShardCopy) *model.Node {
	if n, ok := b.modelAt[c]; ok {
		return n
	}
	if c.Target != nil {
		return c.Target
	}
	return c.Node
}

// startedOn reports whether c is a started copy on n in the model.
func (b *ESBalancer) startedOn(c *model.ShardCopy, n *model.Node) bool {
	_, moved := b.modelAt[c]
	return !moved && c.State == model.StateStarted && c.Node == n
}

// highestPrimary is ModelNode.highestPrimary: the highest shard number of a primary of ix on n, or -1.
func (b *ESBalancer) highestPrimary(n *model.Node, ix *model.Index) int {
	hi := -1
	for _, sh := range ix.Shards {
		for _, c := range sh.Copies {
			if c.Primary && b.located(c) == n {
				hi = max(hi, sh.Num)
			}
		}
	}
	return hi
}

// allocateUnassigned is Balancer.allocateUnassigned: primaries first, then by index (name descending,
// PriorityComparator's last tie-break, every index here having the same priority and creation date)
// and shard number. After one replica of a shard is assigned, its other replicas wait for the next
// pass; when one cannot be, the others are not tried.
func (b *ESBalancer) allocateUnassigned() {
	s := b.s
	pending := s.allocatable()
	order := func(x, y *model.ShardCopy) int {
		if x.Primary != y.Primary {
			if x.Primary {
				return -1
			}
			return 1
		}
		if x.Sh.Idx != y.Sh.Idx {
			return cmp.Compare(y.Sh.Idx.Name, x.Sh.Idx.Name)
		}
		return cmp.Compare(x.Sh.Num, y.Sh.Num)
	}
	slices.SortStableFunc(pending, order)
	for len(pending) > 0 {
		var next []*model.ShardCopy
		for i := 0; i < len(pending); i++ {
			c := pending[i]
			n, t := b.decideAllocateUnassigned(c)
			if t == DecYes {
				s.Initialize(c, n, false)
				model.Place(n, c.Sh.Idx)
				b.add(n, c.Sh.Idx, b.shardLoad[c.Sh.Idx.Ord][c.Sh.Num])
			} else if n != nil {
				// Throttled: the model holds the copy there; the cluster leaves it unassigned.
				b.modelAt[c] = n
				b.add(n, c.Sh.Idx, b.shardLoad[c.Sh.Idx.Ord][c.Sh.Num])
			}
			if c.Primary {
				continue
			}
			// The shard's other replicas wait for the next pass, or are given up with this one.
			for i < len(pending)-1 && order(pending[i], pending[i+1]) == 0 {
				i++
				if t == DecYes {
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
func (b *ESBalancer) decideAllocateUnassigned(c *model.ShardCopy) (*model.Node, DecisionType) {
	sh, ix := c.Sh, c.Sh.Idx
	minWeight := float32(math.Inf(1))
	var minNode *model.Node
	minType := DecNo
	for _, n := range b.nodes {
		w := b.Weight(n, ix)
		if w > minWeight {
			continue
		}
		t := b.s.CanAllocate(sh, c, n, false, false).Typ
		if t == DecNo {
			continue
		}
		update := w < minWeight
		if w == minWeight {
			if t == minType {
				rep, nodeHigh, minHigh := sh.Num, b.highestPrimary(n, ix), b.highestPrimary(minNode, ix)
				update = (((nodeHigh > rep && minHigh > rep) || (nodeHigh < rep && minHigh < rep)) && nodeHigh < minHigh) ||
					(nodeHigh > rep && minHigh < rep)
			} else {
				update = t == DecYes
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
func (b *ESBalancer) moveShards() {
	s := b.s
	perNode := make([][]*model.ShardCopy, len(b.nodes))
	for i, n := range b.nodes {
		for _, c := range s.CopiesOn(n) {
			perNode[i] = append(perNode[i], c)
		}
	}
	var order []*model.ShardCopy
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
		if !b.startedOn(c, c.Node) || s.CanRemain(c, false).Typ != DecNo {
			continue
		}
		ix, from := c.Sh.Idx, c.Node
		b.reset(ix, 0, len(b.nodes))
		for _, to := range b.nodes {
			if to == from || s.CanAllocate(c.Sh, c, to, false, false).Typ != DecYes {
				continue
			}
			s.RelocatePlaced(c, to, model.AllocatorMove(c, from))
			load := b.shardLoad[ix.Ord][c.Sh.Num]
			b.remove(from, ix, load)
			b.add(to, ix, load)
			break
		}
	}
}

// balance runs balanceByWeights over the one partition a stateful cluster has and returns the
// relocations it started.
func (b *ESBalancer) balance() int {
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
func (b *ESBalancer) weightOrderedIndices() []*model.Index {
	type indexDelta struct {
		ix    *model.Index
		delta float32
	}
	order := make([]indexDelta, 0, len(b.s.Indices))
	for _, ix := range b.s.routingOrder() {
		b.reset(ix, 0, len(b.nodes))
		order = append(order, indexDelta{ix, b.weights[len(b.weights)-1] - b.weights[0]})
	}
	slices.SortStableFunc(order, func(x, y indexDelta) int { return cmp.Compare(y.delta, x.delta) })
	out := make([]*model.Index, len(order))
	for i, od := range order {
		out[i] = od.ix
	}
	return out
}

// balanceIndex is balanceByWeights' loop for one index: while the heaviest node holding a copy
// outweighs the lightest by more than the index's threshold, relocate a copy between them; when no
// copy can go, narrow the window from the light end, then from the heavy end.
func (b *ESBalancer) balanceIndex(ix *model.Index) int {
	cfg := b.s.Config()
	// Nodes that hold a copy or that the index's filters allow come first.
	relevant := 0
	for i, n := range b.nodes {
		if b.counts[ix.Ord][n.Ord] > 0 || (ix.Filters.Check(n, "index") == "" && cfg.Filters.Check(n, "cluster") == "") {
			b.nodes[i], b.nodes[relevant] = b.nodes[relevant], n
			relevant++
		}
	}
	if relevant < 2 {
		return 0
	}
	b.reset(ix, 0, relevant)
	lo, hi := 0, relevant-1
	threshold := b.LocalThreshold(ix)
	started := 0
	for {
		minNode, maxNode := b.nodes[lo], b.nodes[hi]
		if b.counts[ix.Ord][maxNode.Ord] > 0 {
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
					b.weights[lo] = b.Weight(minNode, ix)
					b.weights[hi] = b.Weight(maxNode, ix)
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
func (b *ESBalancer) tryRelocate(minNode, maxNode *model.Node, ix *model.Index) (moved, relocated bool) {
	s := b.s
	if b.counts[ix.Ord][maxNode.Ord] == 0 {
		return false, false
	}
	for i := len(ix.Shards) - 1; i >= 0; i-- {
		sh := ix.Shards[i]
		for _, c := range sh.Copies {
			if !b.startedOn(c, maxNode) || !b.mayRebalance(c) {
				continue
			}
			t := s.CanAllocate(sh, c, minNode, false, false).Typ
			if t == DecNo || !b.wl.accepts(sh, minNode) {
				continue
			}
			if b.budget <= 0 {
				t = DecThrottle // ConcurrentRebalanceAllocationDecider's canRebalance
			}
			load := b.shardLoad[ix.Ord][sh.Num]
			b.remove(maxNode, ix, load)
			b.add(minNode, ix, load)
			b.modelAt[c] = minNode
			if t != DecYes {
				return true, false
			}
			s.RelocatePlaced(c, minNode, model.RelocBaseline)
			b.budget--
			return true, true
		}
	}
	return false, false
}

// mayRebalance is EnableAllocationDecider.canRebalance for c under cluster.routing.rebalance.enable.
func (b *ESBalancer) mayRebalance(c *model.ShardCopy) bool {
	switch b.s.Config().RebalanceEnable {
	case "none":
		return false
	case "primaries":
		return c.Primary
	case "replicas":
		return !c.Primary
	}
	return true
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
