// Package rest serves the simulated cluster's OpenSearch REST API: one file per API family, each
// answer built as an ordered JSON tree (package wire) under the cluster's lock.
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
package rest
