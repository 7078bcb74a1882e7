// Package sim is shardwise's built-in OpenSearch cluster simulator. It is the project's embedded
// default, not a mock: it serves the OpenSearch 2.19 REST subset the functions use over HTTP, so the
// production client (opensearch-go v4) runs against it unchanged, and it models load, queueing,
// relocation time and OpenSearch's own count balancer well enough to show whether a balancer helps.
//
// A Scenario (docs/scenarios.md) describes the cluster, its loads over time and its events. New builds a
// Sim; Step advances a virtual clock by tick_seconds; Handler serves the REST API at the current
// virtual time; Result reports what the simulator measures itself. Everything random (node ids,
// allocation ids, placement tie-breaks, api_errors draws) comes from math/rand/v2's PCG seeded with
// the scenario's seed, so the same scenario and the same requests give the same run.
//
// # Load
//
// An index's write_load is the WRITE threads it keeps busy (thread-seconds per second). It is split
// over its primaries by shard_weights (set_shard_weights changes them during a run), and every
// active copy of a shard — primary, replica, or the source of a relocation — bears its shard's
// whole write load, as document replication makes every copy index every document. Under segment
// replication (replication_type segment) only the primary indexes and each replica bears
// DefaultSegmentReplicaShare of it, the cost of copying segments (calibration.go). search_load is
// spread evenly over the index's active copies, or with shard_search_weights split over the shards
// first and then evenly over each shard's active copies. A copy's load is in threads of the
// reference instance type; a node of speed k takes k times as long per task, so it offers k times
// the load to its pools and its tasks last 50·k and 20·k ms (loadmodel.go). Shards grow by
// shard_bytes_growth_per_hour at each tick's end. An index_groups entry's
// loads are totals split over its indices evenly or by a zipf law. Profiles are functions of scenario
// time; set_write_load and set_search_load events replace them.
//
// # Queues
//
// Each node's WRITE pool is an M/M/c queue: c = write_threads servers, 50 ms tasks, λ = load/0.05
// tasks per second. Its wait is the larger of two parts. The settled part is Erlang C's
// W = C(c, a)·s/(c − a), computed with the Erlang B recursion (stable for any c), bounded by the wait
// a queue at exactly saturation builds in one tick from empty, 2·√(s·dt/(π·c)) by the heavy-traffic
// approximation (0.49 s for 8 threads and 30 s ticks): near c Erlang C's wait diverges, but so does
// the time the queue takes to reach it. The backlog part is a fluid queue: each tick the backlog
// grows by arrivals minus capacity (c/s tasks per second) and shrinks when load falls; its wait is
// backlog/(c/s). Both parts are continuous and non-decreasing in the load, so the wait is too, at c
// included. The queue length is Little's min(λ, c/s)·W for the settled part, or the backlog. The
// queue holds 10,000 tasks; the excess is rejected and counted. The search pool works the same way
// with search_threads and 20 ms tasks (80 % query phase, 20 % fetch). When a pool is saturated,
// what it served is split over its copies in proportion to their demand. Counters — indexing
// index_total and index_time_in_millis, search query and fetch totals and times, thread_pool
// completed, rejected, queue, active, largest, and the search pool's total_wait_time_in_nanos —
// advance by work actually served. Per-copy counters live with the copy and start at 0 when a copy
// is created on a node: a moved shard's counters restart, as in OpenSearch.
//
// A node is hot while its true queue wait is at least 3 s. OpenSearch reports no WRITE queue wait,
// only queue length and completions; shardwise estimates the wait by Little's law from those, and the
// simulator's true wait is what its estimate is judged against.
//
// # Tenants
//
// A scenario's tenants search one index each at search_load queries per second (evenly spaced, the
// rate read at each tick's start), each query tagged X-Opaque-Id: opaque_id. A query is a
// coordinating search task on a node taken in turn from the present nodes and one shard-level query
// task per shard on one of the shard's active copies, taken in turn, its child across nodes when
// they differ. Each shard-level task offers task_seconds of search-thread work over
// [arrival, arrival + task_seconds) to its node's search pool, beside the index's own load, waits
// that pool's queue wait and runs task_seconds. Queries still running at a tick's end are kept with
// stable ids, so the tasks API lists them with running_time growing and resource_stats from the
// service they have had (CPU 80 % of it, heap growing to task_heap_bytes); shorter ones count in
// load and latency only. Cancelling a tenant's task stops it at once: its work not yet offered
// leaves the pool's load, its work queued and not yet served leaves the pool's backlog, and a
// coordinating task takes its shard-level tasks with it. A tenant's latency is task_seconds plus the
// longest queue wait of the nodes its query ran on, sampled per query completed uncancelled. Queue
// rejections are counted in the pool; a tenant's rejected queries are not failed.
//
// # Relocation, recovery and allocation
//
// A relocation or a new replica's recovery transfers shard_bytes at recovery_bytes_per_second
// (indices.recovery.max_bytes_per_sec when set). Where the scenario sets
// cluster.translog_replay_speed, a relocation of a copy being written then replays from the
// translog what the copy indexed while its files were copied: w × copy seconds / speed seconds
// for a copy written at w threads (recovery.go; DefaultTranslogReplaySpeed is the measured speed).
// Until it ends
// the copy counts on both nodes' disk and its load stays on the source. node_concurrent_recoveries caps the recoveries each node runs in and
// out at once; the rest wait their turn, oldest first. Reroute moves are accepted even when throttled,
// as OpenSearch does, and queue; the allocator does not start a throttled recovery.
//
// Between ticks the allocator runs as OpenSearch's reroute does: it assigns unassigned copies
// (primaries first) to the node of least weight, moves started copies off nodes they may no longer
// remain on (allocation filters, disk high watermark) and, when rebalancing is allowed, rebalances like
// BalancedShardsAllocator: weight(node, index) = 0.45·(shards on node − mean) + 0.55·(shards of the
// index on node − mean for the index), indices most out of balance first (ties in the order of the routing table's
// java.util.HashMap of index names, routing_order.go), moving from the heaviest to
// the lightest node while their difference exceeds the threshold (1.0), at most
// cluster_concurrent_rebalance (2) relocations in flight, and only while no copy is initializing or
// unassigned (allow_rebalance indices_all_active). builtin_balancer false is a cluster with
// cluster.routing.rebalance.enable set to none. Every placement passes the deciders: same shard (no two
// copies of a shard on a node), index- and cluster-level include/exclude/require filters on _name, _id,
// _ip, _host and custom attributes (zone), the disk high watermark, recovery throttling,
// awareness and total_shards_per_node. The settings that tune them can be changed through PUT
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
//
// # Events
//
// node_leave loses the node's copies: an active replica of a lost primary is promoted (primary term
// bumped), a shard with no copy left stays unassigned and red (only allocate_empty_primary brings it
// back), and lost replicas wait index.unassigned.node_left.delayed_timeout (1m) before the allocator
// recovers them elsewhere. node_join adds an empty node. api_errors, api_latency and reroute_rejects
// are windows [at_seconds, until_seconds) of virtual time in which requests fail with OpenSearch's 503
// error body at the given rate (drawn from the seeded stream), are delayed by ms of real time, or
// POST _cluster/reroute is refused with Amazon OpenSearch Service's 403.
//
// # Measures
//
// sim serve (RunRealtime) computes each tick's loads and work at the tick's start and ends the
// tick (recoveries, allocator) at its end; a request in between sees the clock and the cumulative
// counters that part of the way through the tick, so counters move continuously (live.go).
//
// Result holds what the simulator can measure: moves and bytes moved by accepted non-dry-run reroute
// move commands, or by the es-weights baseline's rebalancing; built-in relocations of a copy an
// external move placed (moves undone); hot node seconds; the maximum and the nearest-rank p99 of
// true queue wait over node-ticks of nodes with write load; rejected writes; hotspot episodes
// (consecutive ticks with any hot node), their count, median and longest, each counted as its
// ticks × tick_seconds; search hot node seconds (search queue wait at least 1 s); replica
// changes (indices whose number_of_replicas a PUT changed) and replica node hours (assigned replica
// copies × hours); the p99 and p50 of 20 ms + search queue wait over node-ticks weighted by search
// tasks;
// tasks cancelled, in all and per tenant, and each tenant's p99 search latency;
// and safety violations, checked on every tick and every reroute
// in the simulator's own truth: two copies of a shard on one node, a shard left with no active copy by
// a reroute, a move accepted while health was not green, while an earlier reroute move from or to
// one of its nodes was still relocating, while OpenSearch's own relocations exceeded
// cluster_concurrent_rebalance, or taking a node past node_concurrent_incoming/outgoing_recoveries
// (with the other moves of its request), and the same move (index, shard, from, to) accepted twice
// with no other movement of that shard in between. moves_while_builtin_busy counts accepted moves
// made while OpenSearch had relocations of its own in flight. Each tick's report also gives every
// node's offered WRITE load and threads and the heaviest copy's WRITE load, the truth against which
// a Scale Up Needed's bound is checked.
//
// # REST API
//
// GET /, _cluster/health, _cluster/state[/{metrics}[/{indices}]], GET/PUT _cluster/settings,
// POST _cluster/reroute, GET/POST _cluster/allocation/explain, _cat/shards, _cat/nodes, _cat/indices,
// _nodes and _nodes/stats in their path forms, _stats and {index}/_stats (level cluster, indices,
// shards), GET/PUT {index}/_settings, GET {index}, and _tasks with cancellation answer with OpenSearch's
// shapes and errors; filter_path applies to every JSON answer. Responses are built as ordered JSON
// trees, filtered once, generically, and streamed; each copy's entry in _stats?level=shards is built
// only when the writer or filter_path reaches it, so a 60,000-copy answer is never held whole.
// Every node has roles data and ingest, host and ip 127.0.0.1, transport port 9300 + its order, and
// the first node present acts as elected cluster manager.
//
// # Files, by what changes together
//
// The package is one because its parts share the cluster's state under one lock; its files group
// by the reason they change:
//
//   - the scenario format: scenario.go (parsing, validation, profiles, index groups, events and
//     tenants);
//   - the cluster's state and clock: state.go (nodes, indices, shards, copies), sim.go (New, Step,
//     recoveries, node joins and leaves, the result), defaults.go (OpenSearch's defaults);
//   - the load and queue model: queue.go (M/M/c waits, backlogs, rejections), the load split in
//     sim.go, loadmodel.go (segment replication, search weights, shard growth, node speed),
//     recovery.go (hot-copy recovery), live.go (sim serve's counters within a tick);
//   - tenants: tenants.go (their queries as tasks, their load, cancellation and latency);
//   - OpenSearch's allocator and count balancer: alloc.go (deciders, allocation of unassigned
//     copies, moves of copies that may not remain, balanceByWeights), filters.go (allocation
//     filters, matched by shared/cluster's one implementation), reroute.go (_cluster/reroute
//     commands, dry run and explain), settings.go (validating cluster and index settings);
//   - Elasticsearch's weight-function balancer, the es-weights baseline: esweights.go;
//   - the REST surface: http.go (routing, errors, API faults), api_cluster.go, api_nodes.go,
//     api_indices.go, api_cat.go, api_tasks.go (one file per API family), jsontree.go and
//     filterpath.go (ordered JSON trees and filter_path).
package sim
