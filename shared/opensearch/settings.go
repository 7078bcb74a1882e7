package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/size"
)

// Cluster setting keys the helpers read.
const (
	settingDiskThresholdEnabled = "cluster.routing.allocation.disk.threshold_enabled"
	settingDiskHighWatermark    = "cluster.routing.allocation.disk.watermark.high"
	settingAwarenessAttributes  = "cluster.routing.allocation.awareness.attributes"
	settingForcedAwarenessPre   = "cluster.routing.allocation.awareness.force."
	settingAllocationEnable     = "cluster.routing.allocation.enable"
	settingNodeRecoveries       = "cluster.routing.allocation.node_concurrent_recoveries"
	settingNodeIncoming         = "cluster.routing.allocation.node_concurrent_incoming_recoveries"
	settingNodeOutgoing         = "cluster.routing.allocation.node_concurrent_outgoing_recoveries"
	settingConcurrentRebalance  = "cluster.routing.allocation.cluster_concurrent_rebalance"
	settingRecoveryRate         = "indices.recovery.max_bytes_per_sec"
	clusterAllocationPrefix     = "cluster.routing.allocation."
	indexAllocationPrefix       = "index.routing.allocation."
)

// ClusterSettings is the effective cluster configuration as one flat map ("cluster.routing.
// allocation.enable" → "all"): transient over persistent over defaults. Defaults are those under
// cluster.* and indices.* only (filter_path), which is all shardwise reads.
type ClusterSettings map[string]string

// clusterSettingsFilter keeps persistent and transient whole (they are small) and, of the defaults,
// only cluster.* and indices.* (indices.recovery.max_bytes_per_sec). With flat_settings the keys
// hold dots, which filter_path cannot walk through; "cluster*" is one glob segment matching every
// flat key that starts with "cluster".
var clusterSettingsFilter = []string{"persistent", "transient", "defaults.cluster*", "defaults.indices*"}

// ClusterSettings reads GET _cluster/settings?include_defaults=true&flat_settings=true.
func (c *Client) ClusterSettings(ctx context.Context) (ClusterSettings, error) {
	req := opensearchapi.ClusterGetSettingsReq{Params: opensearchapi.ClusterGetSettingsParams{
		IncludeDefaults: new(true),
		FlatSettings:    new(true),
		FilterPath:      clusterSettingsFilter,
	}}
	return get(ctx, c, "cluster settings", req, decodeClusterSettings)
}

func decodeClusterSettings(body []byte) (ClusterSettings, error) {
	var wire struct {
		Persistent json.RawMessage `json:"persistent"`
		Transient  json.RawMessage `json:"transient"`
		Defaults   json.RawMessage `json:"defaults"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	merged := make(ClusterSettings)
	// Later layers win: OpenSearch applies transient over persistent over the node's defaults.
	for _, layer := range []struct {
		name string
		raw  json.RawMessage
	}{{"defaults", wire.Defaults}, {"persistent", wire.Persistent}, {"transient", wire.Transient}} {
		flat, err := flattenSettings(layer.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", layer.name, err)
		}
		maps.Copy(merged, flat)
	}
	return merged, nil
}

// DiskThresholdEnabled reports cluster.routing.allocation.disk.threshold_enabled (default true):
// when false OpenSearch ignores the disk watermarks.
func (s ClusterSettings) DiskThresholdEnabled() (bool, error) {
	v, ok := s[settingDiskThresholdEnabled]
	if !ok {
		return true, nil
	}
	enabled, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %w", settingDiskThresholdEnabled, err)
	}
	return enabled, nil
}

// DiskHighWatermark parses cluster.routing.allocation.disk.watermark.high, a ratio ("90%", "0.9")
// or an absolute free-space floor ("10gb"); OpenSearch's default (cluster.DefaultDiskHighWatermark)
// when unset.
func (s ClusterSettings) DiskHighWatermark() (Watermark, error) {
	v, ok := s[settingDiskHighWatermark]
	if !ok {
		return Watermark{UsedRatio: cluster.DefaultDiskHighWatermark}, nil
	}
	w, err := ParseWatermark(v)
	if err != nil {
		return Watermark{}, fmt.Errorf("%s: %w", settingDiskHighWatermark, err)
	}
	return w, nil
}

// AwarenessAttributes lists cluster.routing.allocation.awareness.attributes (e.g. ["zone"]).
func (s ClusterSettings) AwarenessAttributes() []string {
	return splitList(s[settingAwarenessAttributes])
}

// ForcedAwareness maps each attribute of cluster.routing.allocation.awareness.force.<attr>.values
// to its values: copies must spread over all of them even while some have no node.
func (s ClusterSettings) ForcedAwareness() map[string][]string {
	out := make(map[string][]string)
	for k, v := range s {
		rest, ok := strings.CutPrefix(k, settingForcedAwarenessPre)
		if !ok {
			continue
		}
		attr, ok := strings.CutSuffix(rest, ".values")
		if !ok || attr == "" {
			continue
		}
		if values := splitList(v); len(values) > 0 {
			out[attr] = values
		}
	}
	return out
}

// Filters returns the cluster-wide allocation filters cluster.routing.allocation.{include,
// exclude,require}.<attr>.
func (s ClusterSettings) Filters() AllocationFilters {
	return filtersFrom(s, clusterAllocationPrefix)
}

// AllocationEnable returns cluster.routing.allocation.enable: all (default), primaries,
// new_primaries or none.
func (s ClusterSettings) AllocationEnable() string {
	if v, ok := s[settingAllocationEnable]; ok && v != "" {
		return strings.ToLower(v)
	}
	return defaultAllocationEnable
}

// UnlimitedRecoveryBytesPerSecond is what indices.recovery.max_bytes_per_sec 0 (no limit) reads as:
// a recovery then runs as fast as the nodes' disks and network carry it, about a gibibyte a second.
const UnlimitedRecoveryBytesPerSecond = 1 << 30

// RecoveryBytesPerSecond reads indices.recovery.max_bytes_per_sec, each node's limit on the bytes
// its recoveries together copy a second: 0 when absent (the caller's default, OpenSearch's 40mb,
// applies) and UnlimitedRecoveryBytesPerSecond when set to 0.
func (s ClusterSettings) RecoveryBytesPerSecond() (int64, error) {
	v, ok := s[settingRecoveryRate]
	if !ok || strings.TrimSpace(v) == "" {
		return 0, nil
	}
	b, err := size.Parse(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", settingRecoveryRate, err)
	}
	if b == 0 {
		return UnlimitedRecoveryBytesPerSecond, nil
	}
	return int64(b), nil
}

// RecoveryLimits are the limits on recoveries in flight: incoming and outgoing per node
// (node_concurrent_incoming/outgoing_recoveries, each defaulting to node_concurrent_recoveries,
// whose default is 2) and cluster_concurrent_rebalance (default 2, -1 for unlimited).
type RecoveryLimits struct {
	NodeIncoming, NodeOutgoing, ClusterRebalance int
}

// TotalShardsPerNode reads cluster.routing.allocation.total_shards_per_node: the most shard copies
// of all indices together a node may hold; -1 (the default) means no limit.
func (s ClusterSettings) TotalShardsPerNode() (int, error) {
	return s.shardLimit("cluster.routing.allocation.total_shards_per_node")
}

// TotalPrimaryShardsPerNode reads cluster.routing.allocation.total_primary_shards_per_node
// (OpenSearch 3.0 and later): the most primaries of all indices together a node may hold; -1 (the
// default) means no limit.
func (s ClusterSettings) TotalPrimaryShardsPerNode() (int, error) {
	return s.shardLimit("cluster.routing.allocation.total_primary_shards_per_node")
}

func (s ClusterSettings) shardLimit(key string) (int, error) {
	v, ok := s[key]
	if !ok || strings.TrimSpace(v) == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return n, nil
}

// RecoveryLimits reads the recovery limits, OpenSearch's defaults where a setting is absent.
func (s ClusterSettings) RecoveryLimits() (RecoveryLimits, error) {
	num := func(key string, def int) (int, error) {
		v, ok := s[key]
		if !ok || strings.TrimSpace(v) == "" {
			return def, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return n, nil
	}
	node, err := num(settingNodeRecoveries, 2)
	if err != nil {
		return RecoveryLimits{}, err
	}
	// include_defaults reports the incoming and outgoing defaults as 2 even when
	// node_concurrent_recoveries is set, and the flat map no longer tells a default from a set
	// value: the lower of the two is the safe reading.
	var r RecoveryLimits
	if r.NodeIncoming, err = num(settingNodeIncoming, node); err != nil {
		return RecoveryLimits{}, err
	}
	if r.NodeOutgoing, err = num(settingNodeOutgoing, node); err != nil {
		return RecoveryLimits{}, err
	}
	r.NodeIncoming, r.NodeOutgoing = min(r.NodeIncoming, node), min(r.NodeOutgoing, node)
	if r.ClusterRebalance, err = num(settingConcurrentRebalance, 2); err != nil {
		return RecoveryLimits{}, err
	}
	return r, nil
}

// AllocationFilters are allocation filters: attribute (_name, _id, _ip, _host, or a custom node
// attribute such as zone) to a comma-separated list of values with * wildcards, as OpenSearch
// takes them.
type AllocationFilters struct {
	Include map[string]string
	Exclude map[string]string
	Require map[string]string
}

// Empty reports whether no filter is set.
func (f AllocationFilters) Empty() bool {
	return len(f.Include) == 0 && len(f.Exclude) == 0 && len(f.Require) == 0
}

// filtersFrom collects <prefix>{include,exclude,require}.<attr> from flat settings; empty values
// are unset filters.
func filtersFrom(flat map[string]string, prefix string) AllocationFilters {
	var f AllocationFilters
	for k, v := range flat {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		kind, attr, ok := strings.Cut(rest, ".")
		if !ok || attr == "" {
			continue
		}
		var target *map[string]string
		switch kind {
		case "include":
			target = &f.Include
		case "exclude":
			target = &f.Exclude
		case "require":
			target = &f.Require
		default:
			continue
		}
		if *target == nil {
			*target = make(map[string]string)
		}
		(*target)[attr] = v
	}
	return f
}

// IndexSettings reads GET <index>/_settings?flat_settings=true: every setting of the one index
// (an alias must resolve to one index), flat ("index.number_of_replicas" → "1").
func (c *Client) IndexSettings(ctx context.Context, index string) (map[string]string, error) {
	if err := checkIndexName(index); err != nil {
		return nil, fmt.Errorf("index settings: %w", err)
	}
	req := opensearchapi.SettingsGetReq{
		Indices: []string{index},
		Params:  opensearchapi.SettingsGetParams{FlatSettings: new(true)},
	}
	return get(ctx, c, "index settings "+index, req, decodeIndexSettings)
}

func decodeIndexSettings(body []byte) (map[string]string, error) {
	var wire map[string]struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if len(wire) != 1 {
		return nil, fmt.Errorf("want the settings of one index, got %d", len(wire))
	}
	var settings json.RawMessage
	for _, idx := range wire {
		settings = idx.Settings
	}
	return flattenSettings(settings)
}

// PutIndexSettings sends PUT <index>/_settings with settings as the body, e.g.
// {"index.number_of_replicas": 2}. It refuses patterns: a stray "*" would change every index.
// It is sent once: the caller's read-modify-write may have been overtaken, so after an error it
// reads the settings again rather than repeating a write built on the old ones.
func (c *Client) PutIndexSettings(ctx context.Context, index string, settings map[string]any) error {
	if err := checkIndexName(index); err != nil {
		return fmt.Errorf("put index settings: %w", err)
	}
	if len(settings) == 0 {
		return fmt.Errorf("put index settings %s: no settings given", index)
	}
	payload, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("put index settings %s: encode: %w", index, err)
	}
	req := opensearchapi.SettingsPutReq{Indices: []string{index}, Body: bytes.NewReader(payload)}
	body, err := c.callOnce(ctx, "put index settings "+index, http.MethodPut, req)
	if err != nil {
		return err
	}
	return decodeAcknowledged("put index settings "+index, body)
}

// decodeAcknowledged reads {"acknowledged": bool}; false becomes ErrNotAcknowledged.
func decodeAcknowledged(name string, body []byte) error {
	var ack struct {
		Acknowledged bool `json:"acknowledged"`
	}
	if err := json.Unmarshal(body, &ack); err != nil {
		return fmt.Errorf("%s: decode: %w", name, err)
	}
	if !ack.Acknowledged {
		return fmt.Errorf("%s: %w", name, ErrNotAcknowledged)
	}
	return nil
}

// PutClusterSettings sends PUT _cluster/settings with settings as its persistent part, e.g.
// {"cluster.routing.allocation.exclude._name": "node-3"}; a nil value resets a setting. It is
// sent once, as PutIndexSettings is: after an error read the settings again.
func (c *Client) PutClusterSettings(ctx context.Context, settings map[string]any) error {
	if len(settings) == 0 {
		return errors.New("put cluster settings: no settings given")
	}
	payload, err := json.Marshal(map[string]any{"persistent": settings})
	if err != nil {
		return fmt.Errorf("put cluster settings: encode: %w", err)
	}
	req := opensearchapi.ClusterPutSettingsReq{Body: bytes.NewReader(payload)}
	body, err := c.callOnce(ctx, "put cluster settings", http.MethodPut, req)
	if err != nil {
		return err
	}
	return decodeAcknowledged("put cluster settings", body)
}
