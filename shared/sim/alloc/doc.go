// Package alloc is OpenSearch's allocator as the simulated cluster runs it, and the baseline
// balancers run in place of its rebalancing: the deciders, the allocation of unassigned copies,
// the moves of copies that may not remain, BalancedShardsAllocator's count balancer, the
// _cluster/reroute commands with their dry run and explanations, and Elasticsearch's
// weight-function and write-load balancers (es-weights, es-writeload).
//
// # Allocation
//
// Between ticks the allocator runs as OpenSearch's reroute does: it assigns unassigned copies
// (primaries first) to the node of least weight, moves started copies off nodes they may no longer
// remain on (allocation filters, disk high watermark, a lowered total_shards_per_node) and, when rebalancing is allowed, rebalances like
// BalancedShardsAllocator: weight(node, index) = 0.45·(shards on node − mean) + 0.55·(shards of the
// index on node − mean for the index), indices most out of balance first (ties in the order of the routing table's
// java.util.HashMap of index names, routing_order.go), moving from the heaviest to
// the lightest node while their difference exceeds the threshold (1.0), at most
// cluster_concurrent_rebalance (2) relocations in flight, and only while no copy is initializing or
// unassigned (allow_rebalance indices_all_active). builtin_balancer false is a cluster with
// cluster.routing.rebalance.enable set to none. Every placement passes the deciders: same shard (no two
// copies of a shard on a node), index- and cluster-level include/exclude/require filters on _name, _id,
// _ip, _host and custom attributes (zone), the disk high watermark, recovery throttling,
// awareness and total_shards_per_node with total_primary_shards_per_node (ShardsLimitAllocationDecider's
// order and counts: a relocating copy counts on its target, also for the later commands of one
// reroute call). The settings that tune them can be changed through PUT
// _cluster/settings. Awareness is OpenSearch's AwarenessAllocationDecider on the zone attribute
// (cluster.awareness_attributes in the scenario sets cluster.routing.allocation.awareness.attributes
// persistently): a shard's copies, relocation targets counted in place of their sources, may hold at
// most ceil(copies / zones of the present nodes) in one zone, and a node without a zone takes none.
//
// # The es-weights baseline
//
// With Options.Rebalancer es-weights, Elasticsearch's stateful BalancedShardsAllocator does each
// round instead, with its WeightFunction: weight(node, index) = θ0·(shards − mean) + θ1·(shards of
// the index − its mean) + θ2·(write load − mean) + θ3·(disk bytes − mean), the factors shard 0.45,
// index 0.55, write_load 10 and disk_usage 2e-11 divided by their sum (11), in float32 as in Java.
// A node's write load sums its copies' write load forecasts: one figure per index, its WRITE load
// at the scenario's start over its shard count, fixed for the run, as Elasticsearch forecasts an
// index's load from its history when a rollover creates it and keeps that figure for the index's
// life (a spike later in the run is what the forecast cannot see). Its disk sums their shard_bytes; a
// relocating copy counts on its target only. Unassigned copies go to the lightest node the deciders allow, with
// Elasticsearch's order and tie-breaks; copies that may not remain go to the lightest node that says
// YES; then balanceByWeights moves copies of each index, most spread first, from the heaviest to the
// lightest node while their difference exceeds the threshold (1.0) times the index's minWeightDelta,
// θ0 + θ1 + θ2·(the index's shard write load forecast) + θ3·shard_bytes, with lessThan's 0.001
// slack. Deciders,
// allow_rebalance and cluster_concurrent_rebalance are OpenSearch's as above; a throttled choice
// changes the balancer's model only, as in Elasticsearch. Its rebalancing relocations count as moves
// and bytes moved (and in a tick's builtin relocations), not in the result's builtin relocations.
// Not modelled: the desired-balance layer recent Elasticsearch versions put around this allocator;
// here it acts on the cluster directly every tick. The starting placement of copies a scenario does
// not place is OpenSearch's allocator's, the same for every balancer.
package alloc
