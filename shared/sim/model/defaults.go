package model

import (
	"cmp"
	"time"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// Defaults of the model, in one place, each with where its number comes from.
const (
	// writeTaskSeconds is the service time of one WRITE-pool task (docs/scenarios.md, "The model": 50 ms tasks).
	writeTaskSeconds = 0.050
	// SearchTaskSeconds is the service time of one shard-level search task (docs/scenarios.md: 20 ms tasks).
	SearchTaskSeconds = 0.020
	// QueueCapacity is the WRITE and search queue size beyond which tasks are rejected
	// (docs/scenarios.md, "The model": 10,000 tasks; OpenSearch's thread_pool.write.queue_size default is 10000).
	QueueCapacity = 10000
	// SearchQueueSize is the search pool's queue_size reported by _nodes (OpenSearch default 1000);
	// the model itself queues up to queueCapacity for both pools as docs/scenarios.md says.
	SearchQueueSize = 1000
	// queryShare is the part of a search task spent in the query phase; the rest is fetch.
	// An assumption of this model: counters must advance in both, and query dominates for typical searches.
	queryShare = 0.8
	// hotQueueSeconds is the true queue latency at or over which a node counts as hot
	// (docs/scenarios.md, "The run result": hot_node_seconds uses 3 s, the default hotspot threshold).
	hotQueueSeconds = 3.0
	// searchHotQueueSeconds is the search queue wait at or over which a node counts as hot for
	// search_hot_node_seconds (docs/scenarios.md, "The run result": a 1 s queue wait).
	searchHotQueueSeconds = 1.0

	// defaultWriteThreads and defaultSearchThreads match docs/scenarios.md's node_defaults example
	// (OpenSearch sizes WRITE at allocated processors and search at ((processors*3)/2)+1: 8 → 13).
	defaultWriteThreads  = 8
	defaultSearchThreads = 13
	// DefaultHeapBytes (8 GiB) and defaultDiskBytes (1 TiB) match docs/scenarios.md's node_defaults example.
	DefaultHeapBytes = 8 << 30
	DefaultDiskBytes = 1 << 40

	// defaultRecoveryBytesPerSecond is OpenSearch's indices.recovery.max_bytes_per_sec default, 40mb.
	defaultRecoveryBytesPerSecond = 40 << 20
	// defaultNodeConcurrentRecoveries is OpenSearch's
	// cluster.routing.allocation.node_concurrent_recoveries default.
	defaultNodeConcurrentRecoveries = 2
	// diskLowWatermark and diskFloodStage are OpenSearch's defaults, reported under include_defaults.
	diskLowWatermark = "85%"
	diskFloodStage   = "95%"

	// Balancer constants are OpenSearch's BalancedShardsAllocator defaults:
	// cluster.routing.allocation.balance.index 0.55, .shard 0.45, .threshold 1.0, and
	// cluster.routing.allocation.cluster_concurrent_rebalance 2.
	defaultIndexBalance               = 0.55
	defaultShardBalance               = 0.45
	defaultBalanceThreshold           = 1.0
	defaultClusterConcurrentRebalance = 2

	// nodeLeftDelay is OpenSearch's index.unassigned.node_left.delayed_timeout default (1m): replicas
	// lost with a node wait this long before being reallocated elsewhere.
	nodeLeftDelay = time.Minute

	// heapBaseFraction is the heap a node uses with no load: an assumption (an idle OpenSearch node
	// settles around a quarter of an 8 GiB heap after GC).
	heapBaseFraction = 0.25
	// HeapPerStoreByte is heap held per byte of shard data on the node (terms index, segment
	// metadata): an assumption of 0.1 %, the order of magnitude Lucene's on-heap structures take.
	HeapPerStoreByte = 0.001
	// HeapIndexingBufferFraction is the heap the indexing buffer takes at full WRITE utilisation:
	// OpenSearch's indices.memory.index_buffer_size default, 10 % of heap.
	HeapIndexingBufferFraction = 0.10
	// avgDocBytes converts shard_bytes into a starting document count: an assumption of 1 KiB documents.
	avgDocBytes = 1024

	// VersionLucene and friends describe the OpenSearch release the simulator answers as
	// (versionNumber).
	VersionLucene       = "9.12.2"
	VersionBuildHash    = "a9ce3f2ba5ff43aeb8d3ac0dc4d5d4f7a8c3b5a1"
	VersionBuildDate    = "2025-07-17T10:57:51.469416Z"
	VersionMinWire      = "7.10.0"
	VersionMinIndex     = "7.0.0"
	VersionIDCreated    = "136408127" // Version.V_2_19_3.id (2_19_03_99) with OpenSearch's MASK bit set
	ClusterName         = "shardwise-sim"
	firstTransportPort  = 9300
	defaultEpochRFC3339 = "2026-01-01T00:00:00Z"
)

// OsVersion is the version the simulator answers as.
func (s *Sim) OsVersion() string {
	return cmp.Or(s.Spec.Cluster.OpenSearchVersion, scenario.VersionNumber)
}

// ReplaySpeed is the translog replay speed the run's relocations replay at (recovery.go): the
// scenario's cluster.translog_replay_speed, DefaultTranslogReplaySpeed when it is absent, and 0 (no
// replay, a relocation takes its bytes alone) when the scenario sets 0.
func (s *Sim) ReplaySpeed() float64 {
	if v := s.Spec.Cluster.TranslogReplaySpeed; v != nil {
		return *v
	}
	return DefaultTranslogReplaySpeed
}
