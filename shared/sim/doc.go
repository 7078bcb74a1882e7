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
// # Packages, by what changes together
//
// The simulator is split by the reason its parts change; this package wires them and is what
// callers use:
//
//   - scenario: the scenario format (docs/scenarios.md): parsing, validation, load profiles,
//     events and tenants;
//   - model: the cluster's state and clock, and the load, queue and recovery model (New, Step,
//     the run's measures, the events);
//   - alloc: OpenSearch's allocator and count balancer, _cluster/reroute, and the baselines run
//     in place of its rebalancing (es-weights, es-writeload);
//   - plugins: the tenants' searches as tasks, and the workload-management plugin;
//   - rest: the REST API, one file per API family;
//   - wire: OpenSearch's JSON answers: ordered JSON trees, filter_path, error bodies;
//   - settings: cluster and index settings: their checks, flattening and rendering.
//
// model is the core the others import; it reaches the allocator and the plugins only through the
// Allocator and Plugins interfaces it declares, so no package imports one above it.
package sim
