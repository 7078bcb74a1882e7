package opensearch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// Info is what GET / says about the cluster and its software.
type Info struct {
	NodeName    string
	ClusterName string
	ClusterUUID string
	// Version is the version number, e.g. "2.19.1".
	Version string
	// Distribution is "opensearch" for OpenSearch (Elasticsearch sends none).
	Distribution string
}

var infoFilter = []string{"name", "cluster_name", "cluster_uuid", "version.number", "version.distribution"}

// Info reads GET /.
func (c *Client) Info(ctx context.Context) (Info, error) {
	req := opensearchapi.InfoReq{Params: opensearchapi.InfoParams{FilterPath: infoFilter}}
	return get(ctx, c, "info", req, decodeInfo)
}

func decodeInfo(body []byte) (Info, error) {
	var wire struct {
		Name        string `json:"name"`
		ClusterName string `json:"cluster_name"`
		ClusterUUID string `json:"cluster_uuid"`
		Version     struct {
			Number       string `json:"number"`
			Distribution string `json:"distribution"`
		} `json:"version"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Info{}, fmt.Errorf("decode: %w", err)
	}
	return Info{
		NodeName:     wire.Name,
		ClusterName:  wire.ClusterName,
		ClusterUUID:  wire.ClusterUUID,
		Version:      wire.Version.Number,
		Distribution: wire.Version.Distribution,
	}, nil
}

// Health is GET _cluster/health: the cluster's status and the shards on the move, which the safety
// checks read before any action.
type Health struct {
	ClusterName string `json:"cluster_name"`
	// Status is "green", "yellow" or "red".
	Status                  string `json:"status"`
	TimedOut                bool   `json:"timed_out"`
	NumberOfNodes           int    `json:"number_of_nodes"`
	NumberOfDataNodes       int    `json:"number_of_data_nodes"`
	ActivePrimaryShards     int    `json:"active_primary_shards"`
	ActiveShards            int    `json:"active_shards"`
	RelocatingShards        int    `json:"relocating_shards"`
	InitializingShards      int    `json:"initializing_shards"`
	UnassignedShards        int    `json:"unassigned_shards"`
	DelayedUnassignedShards int    `json:"delayed_unassigned_shards"`
}

var healthFilter = []string{
	"cluster_name", "status", "timed_out", "number_of_nodes", "number_of_data_nodes",
	"active_primary_shards", "active_shards", "relocating_shards", "initializing_shards",
	"unassigned_shards", "delayed_unassigned_shards",
}

// Health reads GET _cluster/health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	req := opensearchapi.ClusterHealthReq{Params: opensearchapi.ClusterHealthParams{FilterPath: healthFilter}}
	return get(ctx, c, "cluster health", req, decodeHealth)
}

func decodeHealth(body []byte) (Health, error) {
	var h Health
	if err := json.Unmarshal(body, &h); err != nil {
		return Health{}, fmt.Errorf("decode: %w", err)
	}
	return h, nil
}
