package opensearch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// ClusterState is the part of GET _cluster/state/metadata,routing_table,nodes shardwise reads.
type ClusterState struct {
	Version   int64
	StateUUID string
	// Nodes, Indices and Routing are sorted (by name; by index, shard, primary first, node).
	Nodes   []StateNode
	Indices []IndexMetadata
	Routing []ShardRouting
}

// StateNode is a node as the cluster state lists it.
type StateNode struct {
	ID               string
	Name             string
	TransportAddress string
	Attributes       map[string]string
}

// IndexMetadata is one index's settings that allocation and replica decisions depend on.
type IndexMetadata struct {
	Name string
	// State is "open" or "close".
	State                  string
	NumberOfShards         int
	NumberOfReplicas       int
	NumberOfSearchReplicas int
	// AutoExpandReplicas is index.auto_expand_replicas ("0-all"); "" or "false" when off. An index
	// with it on has its replicas managed by OpenSearch.
	AutoExpandReplicas string
	Hidden             bool
	// CreationDate is index.creation_date.
	CreationDate time.Time
	// Filters are index.routing.allocation.{include,exclude,require}.*.
	Filters AllocationFilters
	// TotalShardsPerNode is index.routing.allocation.total_shards_per_node; -1 (OpenSearch's
	// default) means no limit.
	TotalShardsPerNode int
	// TotalPrimaryShardsPerNode is index.routing.allocation.total_primary_shards_per_node
	// (OpenSearch 3.0 and later); -1 (its default) means no limit.
	TotalPrimaryShardsPerNode int
	// NodeLeftDelayedTimeout is index.unassigned.node_left.delayed_timeout; NodeLeftDelayedTimeoutSet
	// is false when the index does not set it (OpenSearch's default, 1m, applies).
	NodeLeftDelayedTimeout    time.Duration
	NodeLeftDelayedTimeoutSet bool
	// ReplicationType is index.replication.type, upper-cased (cluster.ReplicationDocument or
	// cluster.ReplicationSegment); "" when the index does not say (document replication).
	ReplicationType string
	// Settings holds every returned setting flat ("index.routing.allocation.enable" → "primaries").
	Settings map[string]string
}

// ShardRouting is one shard copy in the routing table.
type ShardRouting struct {
	Index   string
	Shard   int
	Primary bool
	// SearchOnly marks a search replica (index.number_of_search_replicas).
	SearchOnly bool
	// State is STARTED, RELOCATING, INITIALIZING or UNASSIGNED.
	State string
	// Node and RelocatingNode are node IDs; Node is empty for an unassigned copy.
	Node           string
	RelocatingNode string
	// UnassignedReason is unassigned_info.reason (e.g. NODE_LEFT) for an unassigned copy.
	UnassignedReason string
}

var clusterStateFilter = joinFilters(
	[]string{"version", "state_uuid"},
	prefixed("nodes.*.", "name", "transport_address", "attributes"),
	[]string{"metadata.indices.*.state"},
	// The cluster state sends settings nested, so filter_path can walk into them.
	prefixed("metadata.indices.*.settings.index.",
		"number_of_shards", "number_of_replicas", "number_of_search_replicas", "auto_expand_replicas",
		"hidden", "creation_date", "routing.allocation", "unassigned.node_left.delayed_timeout", "replication.type"),
	prefixed("routing_table.indices.*.shards.*.",
		"state", "primary", "searchOnly", "node", "relocating_node", "unassigned_info.reason"),
)

// ClusterState reads GET _cluster/state/metadata,routing_table,nodes.
func (c *Client) ClusterState(ctx context.Context) (ClusterState, error) {
	req := opensearchapi.ClusterStateReq{
		Metrics: []string{"metadata", "routing_table", "nodes"},
		Params:  opensearchapi.ClusterStateParams{FilterPath: clusterStateFilter},
	}
	return get(ctx, c, "cluster state", req, func(body []byte) (ClusterState, error) {
		return decodeClusterStateMemo(body, unmarshalLarge, &c.states)
	})
}

func decodeClusterState(body []byte) (ClusterState, error) {
	return decodeClusterStateMemo(body, unmarshalLarge, nil)
}

// decodeClusterStateWith decodes with the given unmarshal, which the tests vary.
func decodeClusterStateWith(body []byte, unmarshal func([]byte, any) error) (ClusterState, error) {
	return decodeClusterStateMemo(body, unmarshal, nil)
}

// decodeClusterStateMemo decodes body, taking from memo (nil: none) what an earlier answer's same
// bytes decoded to, and keeping this answer's decoding there.
func decodeClusterStateMemo(body []byte, unmarshal func([]byte, any) error, memo *stateMemo) (ClusterState, error) {
	var sum digest
	if memo != nil {
		sum = digestOf(body)
		if cs, ok := memo.whole(sum); ok {
			return cs, nil
		}
	}
	var wire clusterStateWire
	if err := unmarshal(body, &wire); err != nil {
		return ClusterState{}, fmt.Errorf("decode: %w", err)
	}
	out := ClusterState{Version: wire.Version, StateUUID: wire.StateUUID}

	for id, n := range wire.Nodes {
		out.Nodes = append(out.Nodes, StateNode{ID: id, Name: n.Name, TransportAddress: n.TransportAddress, Attributes: n.Attributes})
	}
	slices.SortFunc(out.Nodes, func(a, b StateNode) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})

	last := memo.lastIndices()
	var seen map[string]memoIndex
	if memo != nil {
		seen = make(map[string]memoIndex, len(wire.Metadata.Indices))
	}
	for name, idx := range wire.Metadata.Indices {
		if was, ok := last[name]; ok && was.state == idx.State && bytes.Equal(was.settings, idx.Settings) {
			// The settings this index had in the last answer: decoded then, copied now.
			out.Indices = append(out.Indices, cloneIndexMetadata(was.meta))
			seen[name] = was
			continue
		}
		meta, err := indexMetadata(name, idx.State, idx.Settings)
		if err != nil {
			return ClusterState{}, err
		}
		out.Indices = append(out.Indices, meta)
		if seen != nil {
			seen[name] = memoIndex{state: idx.State, settings: idx.Settings, fresh: true}
		}
	}
	slices.SortFunc(out.Indices, func(a, b IndexMetadata) int { return cmp.Compare(a.Name, b.Name) })

	// Sized up front: grown by append, the 30,000 copies' list was a tenth of a production-size
	// run's allocation.
	if n := wire.RoutingTable.Indices.count(); n > 0 {
		out.Routing = make([]ShardRouting, 0, n)
	}
	in := make(interner)
	err := wire.RoutingTable.Indices.each(func(index string, shard int, w routingCopyWire) {
		out.Routing = append(out.Routing, ShardRouting{
			Index:            index,
			Shard:            shard,
			Primary:          w.Primary,
			SearchOnly:       w.SearchOnly,
			State:            in.get(w.State),
			Node:             in.get(w.Node),
			RelocatingNode:   in.get(w.RelocatingNode),
			UnassignedReason: in.get(w.UnassignedInfo.Reason),
		})
	})
	if err != nil {
		return ClusterState{}, fmt.Errorf("routing table: %w", err)
	}
	sortShards(out.Routing, func(r *ShardRouting) copyKey { return copyKey{r.Index, r.Shard, r.Primary, r.Node} })
	if memo != nil {
		memo.keep(sum, out, seen)
	}
	return out, nil
}

// clusterStateWire is the cluster state answer as it is decoded.
type clusterStateWire struct {
	Version   int64                    `json:"version"`
	StateUUID string                   `json:"state_uuid"`
	Nodes     map[string]stateNodeWire `json:"nodes"`
	Metadata  struct {
		Indices map[string]indexMetaWire `json:"indices"`
	} `json:"metadata"`
	RoutingTable struct {
		Indices shardTable[routingCopyWire] `json:"indices"`
	} `json:"routing_table"`
}

// stateNodeWire is one node of the cluster state.
type stateNodeWire struct {
	Name             string            `json:"name"`
	TransportAddress string            `json:"transport_address"`
	Attributes       map[string]string `json:"attributes"`
}

// indexMetaWire is one index's metadata, its settings left to flattenSettings.
type indexMetaWire struct {
	State    string          `json:"state"`
	Settings json.RawMessage `json:"settings"`
}

// routingCopyWire is one shard copy of the routing table.
type routingCopyWire struct {
	State          string `json:"state"`
	Primary        bool   `json:"primary"`
	SearchOnly     bool   `json:"searchOnly"`
	Node           string `json:"node"`
	RelocatingNode string `json:"relocating_node"`
	UnassignedInfo struct {
		Reason string `json:"reason"`
	} `json:"unassigned_info"`
}

func indexMetadata(name, state string, raw json.RawMessage) (IndexMetadata, error) {
	flat, err := flattenSettings(raw)
	if err != nil {
		return IndexMetadata{}, fmt.Errorf("index %q: %w", name, err)
	}
	meta := IndexMetadata{
		Name:               name,
		State:              state,
		AutoExpandReplicas: flat["index.auto_expand_replicas"],
		Filters:            filtersFrom(flat, indexAllocationPrefix),
		TotalShardsPerNode: -1,
		Settings:           flat,
		// OpenSearch's default for both limits is -1, no limit.
		TotalPrimaryShardsPerNode: -1,
	}
	if v, ok := flat["index.replication.type"]; ok {
		switch t := strings.ToUpper(v); t {
		case cluster.ReplicationDocument, cluster.ReplicationSegment:
			meta.ReplicationType = t
		default:
			return IndexMetadata{}, fmt.Errorf("index %q: index.replication.type: unknown type %q (want %s or %s)", name, v, cluster.ReplicationDocument, cluster.ReplicationSegment)
		}
	}
	if v, ok := flat["index.unassigned.node_left.delayed_timeout"]; ok {
		d, err := duration.ParseTimeValue(v)
		if err != nil {
			return IndexMetadata{}, fmt.Errorf("index %q: index.unassigned.node_left.delayed_timeout: %w", name, err)
		}
		meta.NodeLeftDelayedTimeout, meta.NodeLeftDelayedTimeoutSet = max(d, 0), true
	}
	ints := []struct {
		key string
		dst *int
	}{
		{"index.number_of_shards", &meta.NumberOfShards},
		{"index.number_of_replicas", &meta.NumberOfReplicas},
		{"index.number_of_search_replicas", &meta.NumberOfSearchReplicas},
		{"index.routing.allocation.total_shards_per_node", &meta.TotalShardsPerNode},
		{"index.routing.allocation.total_primary_shards_per_node", &meta.TotalPrimaryShardsPerNode},
	}
	for _, f := range ints {
		v, ok := flat[f.key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return IndexMetadata{}, fmt.Errorf("index %q: %s: %w", name, f.key, err)
		}
		*f.dst = n
	}
	if v, ok := flat["index.hidden"]; ok {
		if meta.Hidden, err = strconv.ParseBool(v); err != nil {
			return IndexMetadata{}, fmt.Errorf("index %q: index.hidden: %w", name, err)
		}
	}
	if v, ok := flat["index.creation_date"]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return IndexMetadata{}, fmt.Errorf("index %q: index.creation_date: %w", name, err)
		}
		meta.CreationDate = millisToTime(ms)
	}
	return meta, nil
}
