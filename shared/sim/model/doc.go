// Package model is the simulated cluster's state and clock, and its load, queue and recovery
// model: nodes, indices, shards and copies; New, Step and the run's measures; the loads each copy
// offers, the thread pools' queues and the work they serve; recoveries and their throttling; the
// scenario's events. What decides where copies go (package alloc) and the work inside the nodes
// that is not the indices' own (package plugins) act on it through the Allocator and Plugins it
// is given (Attach); package sim wires them.
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
// # Recovery
//
// A relocation or a new replica's recovery transfers shard_bytes at recovery_bytes_per_second
// (indices.recovery.max_bytes_per_sec when set). A relocation of a copy being written then
// replays from the translog what the copy indexed while its files were copied, as OpenSearch
// does: w × copy seconds / speed seconds for a copy written at w threads (recovery.go). The speed
// is the scenario's cluster.translog_replay_speed, DefaultTranslogReplaySpeed (the measured
// speed) when it is absent; an explicit 0 turns the replay off. Until it ends the copy counts on both nodes' disk and its load stays on the
// source. node_concurrent_recoveries caps the recoveries each node runs in and out at once; the rest wait their turn, oldest first. Reroute moves are accepted even when throttled,
// as OpenSearch does, and queue; the allocator does not start a throttled recovery.
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
// one of its nodes was still relocating (unless every such move goes the other way between the same
// two nodes: the second half of a swap split over two calls), while OpenSearch's own relocations exceeded
// cluster_concurrent_rebalance, or taking a node past node_concurrent_incoming/outgoing_recoveries
// (with the other moves of its request), and the same move (index, shard, from, to) accepted twice
// with no other movement of that shard in between. moves_while_builtin_busy counts accepted moves
// made while OpenSearch had relocations of its own in flight, and moves_refused the move commands an
// allocation decider answered NO (dry run or not). Each tick's report also gives every
// node's offered WRITE load and threads and the heaviest copy's WRITE load, the truth against which
// a Scale Up Needed's bound is checked.
package model
