// Package cluster is shardwise's model of an OpenSearch cluster: nodes, indices and shard copies,
// together with the signals measured from counter deltas (write and search load per copy, WRITE pool
// utilization and queue latency per node). Everything that decides works on a Snapshot.
package cluster

import (
	"sort"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/duration"
)

// Shard copy states as OpenSearch reports them in the routing table.
const (
	StateStarted      = "STARTED"
	StateRelocating   = "RELOCATING"
	StateInitializing = "INITIALIZING"
	StateUnassigned   = "UNASSIGNED"
)

// DefaultDiskHighWatermark is OpenSearch's default cluster.routing.allocation.disk.watermark.high
// (DiskThresholdSettings): 90 % of a disk used. The one home of this default for the client, the
// planner and the simulator.
const DefaultDiskHighWatermark = 0.9

// Replication types, index.replication.type as OpenSearch writes it.
const (
	// ReplicationDocument: every copy indexes every document (OpenSearch's default).
	ReplicationDocument = "DOCUMENT"
	// ReplicationSegment: only the primary indexes; its replicas copy its segments.
	ReplicationSegment = "SEGMENT"
)

// SegmentReplicaShare is the part of its shard's write load that each replica bears under segment
// replication, where only the primary indexes and the replicas copy its segments: WRITE-pool use
// on a replica's node over that on the primary's node, for the same shard under a steady bulk
// load. Measured 0.02 to 0.12 on a three-node OpenSearch 2.19 in the first runs, and 0.116, 0.118,
// 0.126, 0.140, 0.145 and 0.160 in the last six `make it` runs (docs/calibration.md): a segment
// replica's WRITE thread only appends to its translog. 0.13 is within 25 % of all six. The
// simulator's default (sim.DefaultSegmentReplicaShare) and the planner's estimate of a replica it
// has no rate for are this one figure.
const SegmentReplicaShare = 0.13

// Snapshot is one consistent view of a cluster at At: topology, settings and measured signals.
type Snapshot struct {
	Cluster string    `json:"cluster"`
	At      time.Time `json:"at"`
	// IntervalSeconds is the time since the previous sample by the collector's clock; 0 when this
	// is the first sample and no rate is known yet. Rates divide by each node's own stats
	// timestamp interval instead (see Derive).
	IntervalSeconds float64  `json:"interval_seconds"`
	Health          string   `json:"health"`
	Settings        Settings `json:"settings"`
	Nodes           []Node   `json:"nodes"`
	Indices         []Index  `json:"indices"`
	Copies          []Copy   `json:"copies"`
}

// Settings are the cluster-level settings the deciders read.
type Settings struct {
	// DiskHighWatermark is a used ratio (0.9) when DiskHighWatermarkFreeBytes is 0; 0 means
	// DefaultDiskHighWatermark.
	DiskHighWatermark          float64  `json:"disk_high_watermark"`
	DiskHighWatermarkFreeBytes int64    `json:"disk_high_watermark_free_bytes,omitempty"`
	AwarenessAttributes        []string `json:"awareness_attributes,omitempty"`
	// ForcedAwareness maps an awareness attribute to the values it must spread over.
	ForcedAwareness  map[string][]string `json:"forced_awareness,omitempty"`
	Filters          Filters             `json:"filters"`
	SameShardHost    bool                `json:"same_shard_host,omitempty"`
	AllocationEnable string              `json:"allocation_enable,omitempty"`
	// Recoveries are the cluster's limits on recoveries in flight.
	Recoveries RecoveryLimits `json:"recoveries"`
	// TotalShardsPerNode is cluster.routing.allocation.total_shards_per_node (0 = unlimited).
	TotalShardsPerNode int `json:"total_shards_per_node,omitempty"`
	// TotalPrimaryShardsPerNode is cluster.routing.allocation.total_primary_shards_per_node (0 =
	// unlimited): the most primaries of all indices a node may hold (OpenSearch 3.0 and later).
	TotalPrimaryShardsPerNode int `json:"total_primary_shards_per_node,omitempty"`
	// RecoveryBytesPerSecond is indices.recovery.max_bytes_per_sec, one limit per node shared by
	// its concurrent recoveries; 0 when not read (a snapshot stored before it was), and
	// DefaultRecoveryBytesPerSecond then applies (RecoveryRate).
	RecoveryBytesPerSecond int64 `json:"recovery_bytes_per_second,omitempty"`
}

// DefaultRecoveryBytesPerSecond is OpenSearch's indices.recovery.max_bytes_per_sec default, 40mb.
const DefaultRecoveryBytesPerSecond = 40 << 20

// RecoveryRate is each node's recovery rate in bytes a second, OpenSearch's default when it was
// not read.
func (s Settings) RecoveryRate() float64 {
	if s.RecoveryBytesPerSecond > 0 {
		return float64(s.RecoveryBytesPerSecond)
	}
	return DefaultRecoveryBytesPerSecond
}

// OpenSearch's defaults for the recovery limits (cluster.routing.allocation.node_concurrent_recoveries
// and cluster_concurrent_rebalance are both 2).
const (
	DefaultNodeConcurrentRecoveries   = 2
	DefaultClusterConcurrentRebalance = 2
)

// RecoveryLimits are cluster.routing.allocation.node_concurrent_incoming_recoveries,
// node_concurrent_outgoing_recoveries (both default to node_concurrent_recoveries) and
// cluster_concurrent_rebalance (-1: unlimited). Known is false when they were not read (a snapshot
// stored before they were), and OpenSearch's defaults then apply.
type RecoveryLimits struct {
	NodeIncoming     int  `json:"node_incoming"`
	NodeOutgoing     int  `json:"node_outgoing"`
	ClusterRebalance int  `json:"cluster_rebalance"`
	Known            bool `json:"known"`
}

// Effective returns the limits, OpenSearch's defaults when they were not read.
func (r RecoveryLimits) Effective() RecoveryLimits {
	if r.Known {
		return r
	}
	return RecoveryLimits{NodeIncoming: DefaultNodeConcurrentRecoveries, NodeOutgoing: DefaultNodeConcurrentRecoveries,
		ClusterRebalance: DefaultClusterConcurrentRebalance, Known: true}
}

// Filters are allocation filters: attribute (`_name`, `_id`, `_ip`, `_host`, or a custom node
// attribute) to a comma-separated list of values with `*` wildcards, as OpenSearch takes them.
type Filters struct {
	Include map[string]string `json:"include,omitempty"`
	Exclude map[string]string `json:"exclude,omitempty"`
	Require map[string]string `json:"require,omitempty"`
}

// Empty reports whether no filter is set.
func (f Filters) Empty() bool {
	return len(f.Include) == 0 && len(f.Exclude) == 0 && len(f.Require) == 0
}

// Node is one OpenSearch node with its resources and measured signals.
type Node struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Host       string            `json:"host,omitempty"`
	IP         string            `json:"ip,omitempty"`
	Roles      []string          `json:"roles,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`

	HeapUsedBytes      int64 `json:"heap_used_bytes"`
	HeapMaxBytes       int64 `json:"heap_max_bytes"`
	DiskTotalBytes     int64 `json:"disk_total_bytes"`
	DiskAvailableBytes int64 `json:"disk_available_bytes"`

	Write  Pool `json:"write"`
	Search Pool `json:"search"`
	// SearchLatencyMs is the mean query time over the interval (Δquery_time / Δquery_total), the
	// figure Sway's circuit breaker holds to 200 ms; SearchLatencyKnown is false without two samples.
	SearchLatencyMs    float64 `json:"search_latency_ms"`
	SearchLatencyKnown bool    `json:"search_latency_known"`

	// StatsAt is the node's own stats timestamp; Age in seconds tells how stale its figures are.
	StatsAt time.Time `json:"stats_at"`
	// IntervalSeconds is the time since the previous sample by the node's own stats timestamps,
	// the clock its rates are derived by (Derive); 0 without a previous sample or when the
	// timestamp did not advance. The snapshot's IntervalSeconds is the collector's.
	IntervalSeconds float64 `json:"interval_seconds,omitempty"`
}

// Pool is a thread pool's configuration and the signals derived from its counters.
type Pool struct {
	Threads int `json:"threads"`
	Queue   int `json:"queue"`
	Active  int `json:"active"`

	// Load is Σ of the copies' loads on this node in busy threads; LoadKnown is false when any copy's
	// rate is unknown this sample (reset, new copy) and Load is then a lower bound.
	Load      float64 `json:"load"`
	LoadKnown bool    `json:"load_known"`
	// Utilization = Load / Threads.
	Utilization float64 `json:"utilization"`
	// CompletedPerSecond is Δcompleted/Δt; RateKnown is false on the first sample or after a reset.
	CompletedPerSecond float64 `json:"completed_per_second"`
	RateKnown          bool    `json:"rate_known"`
	// QueueLatencySeconds is an ESTIMATE by Little's law (OpenSearch reports no WRITE wait time):
	// queue / completion rate. Stalled is true when tasks wait and none completed.
	QueueLatencySeconds float64 `json:"queue_latency_seconds"`
	Stalled             bool    `json:"stalled,omitempty"`
	// Rejected is Δrejected over the interval.
	Rejected int64 `json:"rejected"`
	// BacklogServed is the part of Load the pool spent on tasks queued before the interval: a queue
	// that shrank was served beyond what arrived. 0 when the queue did not shrink (or is not known
	// for both samples). See Arrived.
	BacklogServed float64 `json:"backlog_served,omitempty"`
}

// Arrived is the load the counters show arrived over the interval: what the pool served, less what
// it served from a backlog queued before the interval. It is a lower bound of what the node is asked
// for: a saturated pool's growing queue and its rejections are asked for too, and counters do not
// show them.
func (p *Pool) Arrived() float64 { return max(p.Load-p.BacklogServed, 0) }

// IsData reports whether the node can hold shard copies.
func (n *Node) IsData() bool {
	if len(n.Roles) == 0 {
		return true
	}
	for _, r := range n.Roles {
		if r == "data" || strings.HasPrefix(r, "data_") {
			return true
		}
	}
	return false
}

// HeapRatio is used over max heap, 0 when unknown.
func (n *Node) HeapRatio() float64 {
	if n.HeapMaxBytes <= 0 {
		return 0
	}
	return float64(n.HeapUsedBytes) / float64(n.HeapMaxBytes)
}

// DiskUsedBytes is total minus available.
func (n *Node) DiskUsedBytes() int64 { return n.DiskTotalBytes - n.DiskAvailableBytes }

// Attr returns a filterable attribute of the node: `_name`, `_id`, `_ip`, `_host`, or a custom one.
func (n *Node) Attr(name string) (string, bool) {
	switch name {
	case "_name":
		return n.Name, true
	case "_id":
		return n.ID, true
	case "_ip":
		return n.IP, n.IP != ""
	case "_host":
		return n.Host, n.Host != ""
	}
	v, ok := n.Attributes[name]
	return v, ok
}

// Index is one index's metadata.
type Index struct {
	Name           string  `json:"name"`
	Primaries      int     `json:"primaries"`
	Replicas       int     `json:"replicas"`
	SearchReplicas int     `json:"search_replicas,omitempty"`
	Filters        Filters `json:"filters"`
	Hidden         bool    `json:"hidden,omitempty"`
	// TotalShardsPerNode is index.routing.allocation.total_shards_per_node (0 = unlimited).
	TotalShardsPerNode int `json:"total_shards_per_node,omitempty"`
	// TotalPrimaryShardsPerNode is index.routing.allocation.total_primary_shards_per_node (0 =
	// unlimited): the most primaries of the index a node may hold (OpenSearch 3.0 and later).
	TotalPrimaryShardsPerNode int `json:"total_primary_shards_per_node,omitempty"`
	// NodeLeftDelayedTimeout is index.unassigned.node_left.delayed_timeout; NodeLeftDelayedTimeoutSet
	// is false when the index does not set it and OpenSearch's default applies.
	NodeLeftDelayedTimeout    duration.Duration `json:"node_left_delayed_timeout,omitempty"`
	NodeLeftDelayedTimeoutSet bool              `json:"node_left_delayed_timeout_set,omitempty"`
	// ReplicationType is index.replication.type (ReplicationDocument or ReplicationSegment); ""
	// when the index does not say, which is document replication.
	ReplicationType string `json:"replication_type,omitempty"`
	// Created is index.creation_date; zero when the snapshot does not say. A young index (a
	// rollover's, most often) is one the planner may spread at once (allocation.YoungIndexAge).
	Created time.Time `json:"created,omitzero"`
}

// Segment reports whether the index uses segment replication: only its primaries index, and each
// replica bears SegmentReplicaShare of its shard's write load.
func (ix *Index) Segment() bool { return strings.EqualFold(ix.ReplicationType, ReplicationSegment) }

// System reports whether shardwise leaves the index alone (dot-prefixed or hidden).
func (ix *Index) System() bool { return ix.Hidden || strings.HasPrefix(ix.Name, ".") }

// Copy is one shard copy.
type Copy struct {
	Index          string `json:"index"`
	Shard          int    `json:"shard"`
	Primary        bool   `json:"primary"`
	State          string `json:"state"`
	Node           string `json:"node,omitempty"`
	RelocatingNode string `json:"relocating_node,omitempty"`
	SizeBytes      int64  `json:"size_bytes"`
	// WriteLoad and SearchLoad are busy threads (thread-seconds per second) this copy kept its node's
	// WRITE and search pools busy over the interval. LoadKnown is false when its counters reset or
	// it is new on this node: the rate is unknown for this sample, never negative or huge.
	WriteLoad  float64 `json:"write_load"`
	SearchLoad float64 `json:"search_load"`
	LoadKnown  bool    `json:"load_known"`
}

// ShardID names a shard of an index.
type ShardID struct {
	Index string `json:"index"`
	Shard int    `json:"shard"`
}

// ID returns the copy's shard.
func (c *Copy) ID() ShardID { return ShardID{Index: c.Index, Shard: c.Shard} }

// Active reports whether the copy serves requests (STARTED or the source of a relocation).
func (c *Copy) Active() bool { return c.State == StateStarted || c.State == StateRelocating }

// NodeByID returns the node with that id, or nil.
func (s *Snapshot) NodeByID(id string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].ID == id {
			return &s.Nodes[i]
		}
	}
	return nil
}

// NodeByRef finds a node by id or by name, as OpenSearch's APIs accept either.
func (s *Snapshot) NodeByRef(ref string) *Node {
	if n := s.NodeByID(ref); n != nil {
		return n
	}
	for i := range s.Nodes {
		if s.Nodes[i].Name == ref {
			return &s.Nodes[i]
		}
	}
	return nil
}

// IndexByName returns the index, or nil.
func (s *Snapshot) IndexByName(name string) *Index {
	for i := range s.Indices {
		if s.Indices[i].Name == name {
			return &s.Indices[i]
		}
	}
	return nil
}

// Counts tallies the routing states of all copies.
type Counts struct {
	Relocating   int `json:"relocating"`
	Initializing int `json:"initializing"`
	Unassigned   int `json:"unassigned"`
	Started      int `json:"started"`
}

// Counts returns the number of copies in each state.
func (s *Snapshot) Counts() Counts {
	var c Counts
	for i := range s.Copies {
		switch s.Copies[i].State {
		case StateRelocating:
			c.Relocating++
		case StateInitializing:
			c.Initializing++
		case StateUnassigned:
			c.Unassigned++
		case StateStarted:
			c.Started++
		}
	}
	return c
}

// Sort puts nodes, indices and copies in a stable order so output and plans are deterministic.
func (s *Snapshot) Sort() {
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].Name < s.Nodes[j].Name })
	sort.Slice(s.Indices, func(i, j int) bool { return s.Indices[i].Name < s.Indices[j].Name })
	sort.Slice(s.Copies, func(i, j int) bool {
		a, b := &s.Copies[i], &s.Copies[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Primary != b.Primary {
			return a.Primary
		}
		return a.Node < b.Node
	})
}
