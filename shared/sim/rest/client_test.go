package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// TestOpenSearchGoClient runs the production client, opensearch-go v4, against the simulator over HTTP:
// a third-party client must not notice it is not OpenSearch.
func TestOpenSearchGoClient(t *testing.T) {
	s := simtest.MustSim(t, simtest.Minimal)
	simtest.StepN(s, 3)
	srv := httptest.NewServer(s.REST.Handler())
	t.Cleanup(srv.Close)
	client, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{srv.URL}}})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	ctx := context.Background()
	idA, idB, idC := simtest.NodeID(t, s, "a"), simtest.NodeID(t, s, "b"), simtest.NodeID(t, s, "c")

	t.Run("info", func(t *testing.T) {
		info, err := client.Info(ctx, nil)
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if info.Version.Distribution != "opensearch" || info.Version.Number != "2.19.3" {
			t.Errorf("version: got %s %s, want opensearch 2.19.3", info.Version.Distribution, info.Version.Number)
		}
	})
	t.Run("health", func(t *testing.T) {
		h, err := client.Cluster.Health(ctx, nil)
		if err != nil {
			t.Fatalf("Health: %v", err)
		}
		if h.Status != "green" || h.NumberOfDataNodes != 3 || h.ActiveShards != 4 || h.ActivePrimaryShards != 2 {
			t.Errorf("health: got %+v, want green, 3 data nodes, 4 active shards, 2 primaries", h)
		}
	})
	t.Run("nodes stats", func(t *testing.T) {
		st, err := client.Nodes.Stats(ctx, &opensearchapi.NodesStatsReq{Metric: []string{"thread_pool", "indices", "jvm", "fs"}})
		if err != nil {
			t.Fatalf("Nodes.Stats: %v", err)
		}
		if len(st.Nodes) != 3 {
			t.Fatalf("nodes: got %d, want 3", len(st.Nodes))
		}
		a := st.Nodes[idA]
		if a.Name != "a" || a.ThreadPool["write"].Threads != 8 || a.ThreadPool["write"].Completed == 0 {
			t.Errorf("node a: got name %q write pool %+v, want a with 8 threads and completed tasks", a.Name, a.ThreadPool["write"])
		}
		if a.JVM.Mem.HeapMaxInBytes != model.DefaultHeapBytes || a.FS.Total.TotalInBytes != model.DefaultDiskBytes {
			t.Errorf("node a: heap max %d disk %d, want %d and %d", a.JVM.Mem.HeapMaxInBytes, a.FS.Total.TotalInBytes, model.DefaultHeapBytes, model.DefaultDiskBytes)
		}
		if a.Indices.Indexing.IndexTimeInMillis == 0 {
			t.Errorf("node a: index_time_in_millis is 0 after three ticks of write load")
		}
	})
	t.Run("nodes info", func(t *testing.T) {
		info, err := client.Nodes.Info(ctx, nil)
		if err != nil {
			t.Fatalf("Nodes.Info: %v", err)
		}
		if got := info.Nodes[idB].Name; got != "b" {
			t.Errorf("node b name: got %q", got)
		}
	})
	t.Run("cluster state", func(t *testing.T) {
		st, err := client.Cluster.State(ctx, nil)
		if err != nil {
			t.Fatalf("Cluster.State: %v", err)
		}
		shards := st.RoutingTable.Indices["x"].Shards["0"]
		if len(shards) != 2 || shards[0].Node == nil || *shards[0].Node != idA || !shards[0].Primary || shards[0].State != "STARTED" {
			t.Errorf("routing of x[0]: got %+v, want primary STARTED on a and a replica", shards)
		}
		if st.ClusterManagerNode == "" || st.Nodes[idC].Name != "c" {
			t.Errorf("cluster_manager_node %q, node c %+v", st.ClusterManagerNode, st.Nodes[idC])
		}
	})
	t.Run("indices stats", func(t *testing.T) {
		st, err := client.Indices.Stats(ctx, &opensearchapi.IndicesStatsReq{Indices: []string{"x"}})
		if err != nil {
			t.Fatalf("Indices.Stats: %v", err)
		}
		if st.Indices["x"].Total.Indexing.IndexTotal == 0 {
			t.Errorf("x total index_total is 0")
		}
	})
	t.Run("cat shards", func(t *testing.T) {
		cs, err := client.Cat.Shards(ctx, nil)
		if err != nil {
			t.Fatalf("Cat.Shards: %v", err)
		}
		if len(cs.Shards) != 4 {
			t.Errorf("cat shards: got %d rows, want 4", len(cs.Shards))
		}
	})
	t.Run("settings", func(t *testing.T) {
		_, err := client.Cluster.PutSettings(ctx, opensearchapi.ClusterPutSettingsReq{
			Body: strings.NewReader(`{"transient":{"cluster.routing.allocation.cluster_concurrent_rebalance":"3"}}`),
		})
		if err != nil {
			t.Fatalf("PutSettings: %v", err)
		}
		got, err := client.Cluster.GetSettings(ctx, &opensearchapi.ClusterGetSettingsReq{
			Params: opensearchapi.ClusterGetSettingsParams{FlatSettings: new(true), IncludeDefaults: new(true)},
		})
		if err != nil {
			t.Fatalf("GetSettings: %v", err)
		}
		// Defaults hold list settings as JSON arrays, as OpenSearch sends them: not all are strings.
		var transient map[string]string
		var defaults map[string]any
		if err := json.Unmarshal(got.Transient, &transient); err != nil {
			t.Fatalf("transient settings: %v", err)
		}
		if err := json.Unmarshal(got.Defaults, &defaults); err != nil {
			t.Fatalf("default settings: %v", err)
		}
		if v := transient["cluster.routing.allocation.cluster_concurrent_rebalance"]; v != "3" {
			t.Errorf("transient setting: got %q, want \"3\"", v)
		}
		if v := defaults["cluster.routing.allocation.disk.watermark.high"]; v != "90%" {
			t.Errorf("default high watermark: got %v, want \"90%%\"", v)
		}
		if v, ok := defaults["cluster.routing.allocation.awareness.attributes"].([]any); !ok || len(v) != 0 {
			t.Errorf("default awareness attributes: got %#v, want [] (OpenSearch prints list defaults as arrays)", defaults["cluster.routing.allocation.awareness.attributes"])
		}
	})
	t.Run("reroute", func(t *testing.T) {
		resp, err := client.Cluster.Reroute(ctx, opensearchapi.ClusterRerouteReq{
			Body: strings.NewReader(`{"commands":[{"move":{"index":"x","shard":0,"from_node":"a","to_node":"c"}}]}`),
		})
		if err != nil {
			t.Fatalf("Reroute: %v", err)
		}
		if !resp.Acknowledged {
			t.Errorf("acknowledged: got false")
		}
		if got := simtest.CopyOn(s, "x", 0, "a"); got != "RELOCATING" {
			t.Errorf("x[0] on a: got %q, want RELOCATING", got)
		}
	})
	t.Run("refused reroute surfaces as an error", func(t *testing.T) {
		_, err := client.Cluster.Reroute(ctx, opensearchapi.ClusterRerouteReq{
			Body: strings.NewReader(`{"commands":[{"move":{"index":"x","shard":1,"from_node":"b","to_node":"c"}}]}`),
		})
		var se *opensearch.StructError
		if !errors.As(err, &se) {
			t.Fatalf("Reroute onto a node holding a copy: got %v, want *opensearch.StructError", err)
		}
		if se.Status != 400 || se.Err.Type != "illegal_argument_exception" || !strings.Contains(se.Err.Reason, "a copy of this shard is already allocated to this node") {
			t.Errorf("error: got status %d type %q reason %q", se.Status, se.Err.Type, se.Err.Reason)
		}
	})
	t.Run("tasks", func(t *testing.T) {
		if _, err := client.Tasks.List(ctx, &opensearchapi.TasksListReq{Params: opensearchapi.TasksListParams{Detailed: new(true)}}); err != nil {
			t.Fatalf("Tasks.List: %v", err)
		}
	})
}
