// Package plugins is the work inside the simulated nodes that is not the indices' own: the
// scenario's tenants, whose searches run as tasks, and the workload-management plugin that tracks
// their groups' usage and cancels or rejects them as the plugin's version does.
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
package plugins
