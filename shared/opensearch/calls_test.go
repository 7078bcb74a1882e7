package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	node0 = "Qm8kKmrzTdqjtgqbh0N9tQ"
	node1 = "x3F-8mN2QfWq6nQYk1xJ5A"
	node2 = "c4tTNPzcRsi2iqSLw9Xh3g"
)

// allRoutes maps every call shardwise makes to a fixture holding the full, unfiltered OpenSearch
// 2.19 response.
var allRoutes = map[string]route{
	"GET /":                {fixture: "info.json"},
	"GET /_cluster/health": {fixture: "health.json"},
	"GET /_nodes/stats/jvm,fs,thread_pool,indices": {fixture: "nodes_stats.json"},
	"GET /_nodes": {fixture: "nodes_info.json"},
	"GET /_stats": {fixture: "shard_stats.json"},
	"GET /_cluster/state/metadata,routing_table,nodes":  {fixture: "cluster_state.json"},
	"GET /_cluster/settings":                            {fixture: "cluster_settings.json"},
	"GET /logs-a/_settings":                             {fixture: "index_settings.json"},
	"PUT /logs-a/_settings":                             {fixture: "acknowledged.json"},
	"POST /_cluster/reroute":                            {fixture: "reroute_explain.json"},
	"POST /_cluster/allocation/explain":                 {fixture: "allocation_explain.json"},
	"GET /_tasks":                                       {fixture: "tasks.json"},
	"POST /_tasks/Qm8kKmrzTdqjtgqbh0N9tQ:90211/_cancel": {fixture: "cancel_task.json"},
}

func fixtureClient(t *testing.T) (*Client, *fakeCluster) {
	t.Helper()
	fc, srv := newFakeCluster(t, allRoutes)
	return newTestClient(t, testConfig(srv.URL)), fc
}

func checkEqual[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.MarshalIndent(got, "", "  ")
		wantJSON, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("got %s\nwant %s", gotJSON, wantJSON)
	}
}

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }

func TestInfo(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, Info{
		NodeName: "node-0", ClusterName: "shardwise-test", ClusterUUID: "lV3DcN9TQ0yqvW3pH5cmIw",
		Version: "2.19.1", Distribution: "opensearch",
	})
}

func TestHealth(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, Health{
		ClusterName: "shardwise-test", Status: "yellow", NumberOfNodes: 3, NumberOfDataNodes: 3,
		ActivePrimaryShards: 4, ActiveShards: 7, RelocatingShards: 1, UnassignedShards: 1,
	})
}

func TestNodesStats(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.NodesStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{"cluster_manager", "data", "ingest", "remote_cluster_client"}
	checkEqual(t, got, NodesStats{
		ClusterName: "shardwise-test",
		Failed:      1,
		Failures: []Failure{{
			NodeID: "Zk3p0aWbR9yR2dLqPz7mXg", Type: "failed_node_exception",
			Reason: "Failed node [Zk3p0aWbR9yR2dLqPz7mXg]; caused by node_not_connected_exception: [node-3][10.0.0.13:9300] Node not connected",
		}},
		Nodes: []NodeStats{
			{
				ID: node0, Name: "node-0", Host: "10.0.0.10", IP: "10.0.0.10:9300", Roles: roles,
				Attributes: map[string]string{"shard_indexing_pressure_enabled": "true", "zone": "a"},
				Timestamp:  ms(1740000030000), HeapUsedBytes: 4294967296, HeapMaxBytes: 8589934592,
				DiskTotalBytes: 107374182400, DiskAvailableBytes: 53687091200, DiskFreeBytes: 59055800320,
				Write:           ThreadPoolStats{Threads: 8, Queue: 412, Active: 8, Largest: 8, Rejected: 17, Completed: 1200345},
				Search:          ThreadPoolStats{Threads: 13, Active: 2, Largest: 13, Completed: 80211, TotalWaitTimeNanos: 912000000},
				IndexTimeMillis: 7200000, QueryTimeMillis: 120000, FetchTimeMillis: 30000,
			},
			{
				ID: node1, Name: "node-1", Host: "10.0.0.11", IP: "10.0.0.11:9300", Roles: roles,
				Attributes: map[string]string{"shard_indexing_pressure_enabled": "true", "zone": "b"},
				Timestamp:  ms(1740000030120), HeapUsedBytes: 3221225472, HeapMaxBytes: 8589934592,
				DiskTotalBytes: 107374182400, DiskAvailableBytes: 85899345920, DiskFreeBytes: 91268055040,
				Write:           ThreadPoolStats{Threads: 8, Active: 1, Largest: 8, Completed: 800211},
				Search:          ThreadPoolStats{Threads: 13, Largest: 13, Completed: 90001},
				IndexTimeMillis: 1800000, QueryTimeMillis: 150000, FetchTimeMillis: 40000,
			},
			{
				ID: node2, Name: "node-2", Host: "10.0.0.12", IP: "10.0.0.12:9300", Roles: []string{"data"},
				Attributes: map[string]string{"shard_indexing_pressure_enabled": "true", "zone": "a"},
				Timestamp:  ms(1740000029950), HeapUsedBytes: 2147483648, HeapMaxBytes: 4294967296,
				DiskTotalBytes: 107374182400, DiskAvailableBytes: 96636764160, DiskFreeBytes: 102005473280,
				Write:           ThreadPoolStats{Threads: 4, Largest: 4, Completed: 300001},
				Search:          ThreadPoolStats{Threads: 7, Largest: 7, Completed: 50000},
				IndexTimeMillis: 300000, QueryTimeMillis: 90000, FetchTimeMillis: 20000,
			},
		},
	})
}

func TestNodesInfo(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.NodesInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{"cluster_manager", "data", "ingest", "remote_cluster_client"}
	attrs := func(zone string) map[string]string {
		return map[string]string{"shard_indexing_pressure_enabled": "true", "zone": zone}
	}
	checkEqual(t, got, NodesInfo{
		ClusterName: "shardwise-test",
		Nodes: []NodeInfo{
			{ID: node0, Name: "node-0", Host: "10.0.0.10", IP: "10.0.0.10", Version: "2.19.1", Roles: roles,
				Attributes: attrs("a"), HeapMaxBytes: 8589934592,
				Write: ThreadPoolInfo{Size: 8, QueueSize: 10000}, Search: ThreadPoolInfo{Size: 13, QueueSize: 1000}},
			{ID: node1, Name: "node-1", Host: "10.0.0.11", IP: "10.0.0.11", Version: "2.19.1", Roles: roles,
				Attributes: attrs("b"), HeapMaxBytes: 8589934592,
				Write: ThreadPoolInfo{Size: 8, QueueSize: 10000}, Search: ThreadPoolInfo{Size: 13, QueueSize: 1000}},
			{ID: node2, Name: "node-2", Host: "10.0.0.12", IP: "10.0.0.12", Version: "2.19.1", Roles: []string{"data"},
				Attributes: attrs("a"), HeapMaxBytes: 4294967296,
				Write: ThreadPoolInfo{Size: 4, QueueSize: 10000}, Search: ThreadPoolInfo{Size: 7, QueueSize: 1000}},
		},
	})
}

func TestShardStats(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.ShardStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, ShardStats{
		ShardsTotal: 8, ShardsSuccessful: 7,
		Copies: []ShardCopyStats{
			{Index: ".ds-metrics-000001", Shard: 0, Primary: true, State: "STARTED", Node: node2,
				IndexTimeMillis: 600000, IndexTotal: 300000, QueryTimeMillis: 20000, FetchTimeMillis: 2000, QueryTotal: 2000,
				StoreBytes: 1073741824, Docs: 1000},
			{Index: ".ds-metrics-000001", Shard: 0, State: "STARTED", Node: node0,
				IndexTimeMillis: 600000, IndexTotal: 300000, QueryTimeMillis: 10000, FetchTimeMillis: 4000, QueryTotal: 1000,
				StoreBytes: 1073741824, Docs: 1000},
			{Index: "logs-a", Shard: 0, Primary: true, State: "STARTED", Node: node0,
				IndexTimeMillis: 900000, IndexTotal: 400000, QueryTimeMillis: 25000, FetchTimeMillis: 5000, QueryTotal: 2000,
				StoreBytes: 1288490188, Docs: 1200},
			{Index: "logs-a", Shard: 0, State: "RELOCATING", Node: node1, RelocatingNode: node2,
				IndexTimeMillis: 700000, IndexTotal: 400000, QueryTimeMillis: 15000, FetchTimeMillis: 3000, QueryTotal: 1000,
				StoreBytes: 1288490188, Docs: 1200},
			{Index: "logs-a", Shard: 1, Primary: true, State: "STARTED", Node: node1,
				IndexTimeMillis: 250000, IndexTotal: 200000, QueryTimeMillis: 10000, FetchTimeMillis: 2000, QueryTotal: 1500,
				StoreBytes: 858993460, Docs: 800},
			{Index: "logs-a", Shard: 1, State: "STARTED", Node: node0,
				IndexTimeMillis: 300000, IndexTotal: 200000, QueryTimeMillis: 20000, FetchTimeMillis: 4000, QueryTotal: 1500,
				StoreBytes: 858993459, Docs: 800},
		},
	})
}

func TestClusterState(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.ClusterState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	attrs := func(zone string) map[string]string {
		return map[string]string{"shard_indexing_pressure_enabled": "true", "zone": zone}
	}
	checkEqual(t, got, ClusterState{
		Version:   4812,
		StateUUID: "s7Xq0pQwR1m2n3b4v5c6dA",
		Nodes: []StateNode{
			{ID: node0, Name: "node-0", TransportAddress: "10.0.0.10:9300", Attributes: attrs("a")},
			{ID: node1, Name: "node-1", TransportAddress: "10.0.0.11:9300", Attributes: attrs("b")},
			{ID: node2, Name: "node-2", TransportAddress: "10.0.0.12:9300", Attributes: attrs("a")},
		},
		Indices: []IndexMetadata{
			{
				Name: ".ds-metrics-000001", State: "open", NumberOfShards: 1, NumberOfReplicas: 1,
				AutoExpandReplicas: "0-1", Hidden: true, CreationDate: ms(1739995000000), TotalShardsPerNode: -1, TotalPrimaryShardsPerNode: -1,
				Settings: map[string]string{
					"index.number_of_shards": "1", "index.number_of_replicas": "1", "index.auto_expand_replicas": "0-1",
					"index.hidden": "true", "index.creation_date": "1739995000000",
				},
			},
			{
				Name: "archive-2024", State: "close", NumberOfShards: 1, CreationDate: ms(1704067200000), TotalShardsPerNode: -1, TotalPrimaryShardsPerNode: -1,
				Settings: map[string]string{
					"index.number_of_shards": "1", "index.number_of_replicas": "0", "index.creation_date": "1704067200000",
				},
			},
			{
				Name: "logs-a", State: "open", NumberOfShards: 2, NumberOfReplicas: 1, NumberOfSearchReplicas: 1,
				CreationDate: ms(1739990000000), TotalShardsPerNode: 2, TotalPrimaryShardsPerNode: 1,
				NodeLeftDelayedTimeout: 5 * time.Minute, NodeLeftDelayedTimeoutSet: true, ReplicationType: "SEGMENT",
				Filters: AllocationFilters{
					Include: map[string]string{"zone": "a,b"},
					Exclude: map[string]string{"_name": "node-9"},
				},
				Settings: map[string]string{
					"index.number_of_shards": "2", "index.number_of_replicas": "1", "index.number_of_search_replicas": "1",
					"index.creation_date": "1739990000000", "index.routing.allocation.include.zone": "a,b",
					"index.routing.allocation.exclude._name": "node-9", "index.routing.allocation.total_shards_per_node": "2",
					"index.routing.allocation.total_primary_shards_per_node": "1",
					"index.unassigned.node_left.delayed_timeout":             "5m", "index.replication.type": "SEGMENT",
				},
			},
		},
		Routing: []ShardRouting{
			{Index: ".ds-metrics-000001", Shard: 0, Primary: true, State: "STARTED", Node: node2},
			{Index: ".ds-metrics-000001", Shard: 0, State: "UNASSIGNED", UnassignedReason: "NODE_LEFT"},
			{Index: "archive-2024", Shard: 0, Primary: true, State: "STARTED", Node: node1},
			{Index: "logs-a", Shard: 0, Primary: true, State: "STARTED", Node: node0},
			{Index: "logs-a", Shard: 0, SearchOnly: true, State: "UNASSIGNED", UnassignedReason: "INDEX_CREATED"},
			{Index: "logs-a", Shard: 0, State: "RELOCATING", Node: node1, RelocatingNode: node2},
			{Index: "logs-a", Shard: 1, Primary: true, State: "STARTED", Node: node1},
			{Index: "logs-a", Shard: 1, SearchOnly: true, State: "UNASSIGNED", UnassignedReason: "INDEX_CREATED"},
			{Index: "logs-a", Shard: 1, State: "STARTED", Node: node0},
		},
	})
}

func TestClusterSettings(t *testing.T) {
	c, _ := fixtureClient(t)
	got, err := c.ClusterSettings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, ClusterSettings{
		// persistent
		"action.auto_create_index":                               "true",
		"cluster.routing.allocation.awareness.attributes":        "zone",
		"cluster.routing.allocation.awareness.force.zone.values": "a,b,c",
		"cluster.routing.allocation.exclude._name":               "node-9",
		// transient over persistent over defaults
		"cluster.routing.allocation.disk.watermark.high": "50gb",
		"cluster.routing.allocation.enable":              "primaries",
		// defaults, cluster.* and indices.* only
		"cluster.name":                                            "shardwise-test",
		"indices.recovery.max_bytes_per_sec":                      "40mb",
		"cluster.routing.allocation.balance.index":                "0.55",
		"cluster.routing.allocation.balance.shard":                "0.45",
		"cluster.routing.allocation.balance.threshold":            "1.0",
		"cluster.routing.allocation.cluster_concurrent_rebalance": "2",
		"cluster.routing.allocation.disk.threshold_enabled":       "true",
		"cluster.routing.allocation.disk.watermark.flood_stage":   "95%",
		"cluster.routing.allocation.disk.watermark.low":           "85%",
		"cluster.routing.allocation.node_concurrent_recoveries":   "2",
		"cluster.routing.allocation.same_shard.host":              "false",
		"cluster.routing.rebalance.enable":                        "all",
	})

	w, err := got.DiskHighWatermark()
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, w, Watermark{UsedRatio: 1, MinFreeBytes: 50 << 30})
	rate, err := got.RecoveryBytesPerSecond()
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, rate, int64(40<<20))
	checkEqual(t, got.AwarenessAttributes(), []string{"zone"})
	checkEqual(t, got.ForcedAwareness(), map[string][]string{"zone": {"a", "b", "c"}})
	checkEqual(t, got.Filters(), AllocationFilters{Exclude: map[string]string{"_name": "node-9"}})
	checkEqual(t, got.AllocationEnable(), "primaries")
	enabled, err := got.DiskThresholdEnabled()
	if err != nil || !enabled {
		t.Errorf("DiskThresholdEnabled: got %t, %v; want true, nil", enabled, err)
	}
}

func TestIndexSettings(t *testing.T) {
	c, fc := fixtureClient(t)
	got, err := c.IndexSettings(context.Background(), "logs-a")
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, map[string]string{
		"index.creation_date": "1739990000000", "index.number_of_replicas": "1", "index.number_of_shards": "2",
		"index.number_of_search_replicas": "1", "index.provided_name": "logs-a", "index.refresh_interval": "5s",
		"index.replication.type": "SEGMENT", "index.routing.allocation.include.zone": "a,b",
		"index.uuid": "u5cY1p2sQ3K9w4Zt8b7aLg", "index.version.created": "136387927",
	})
	req := fc.received()[0]
	if req.Query["flat_settings"][0] != "true" {
		t.Errorf("flat_settings: got %v, want true", req.Query["flat_settings"])
	}
}

func TestPutIndexSettings(t *testing.T) {
	c, fc := fixtureClient(t)
	if err := c.PutIndexSettings(context.Background(), "logs-a", map[string]any{"index.number_of_replicas": 2}); err != nil {
		t.Fatal(err)
	}
	reqs := fc.received()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	if got, want := reqs[0].Body, `{"index.number_of_replicas":2}`; got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
	if got := reqs[0].Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}
}

func TestPutIndexSettingsRefusals(t *testing.T) {
	tests := []struct {
		name     string
		index    string
		settings map[string]any
		fixture  string
		wantErr  error
	}{
		{"pattern index", "logs-*", map[string]any{"index.number_of_replicas": 2}, "acknowledged.json", nil},
		{"all indices", "_all", map[string]any{"index.number_of_replicas": 2}, "acknowledged.json", nil},
		{"empty index", "", map[string]any{"index.number_of_replicas": 2}, "acknowledged.json", nil},
		{"no settings", "logs-a", nil, "acknowledged.json", nil},
		{"not acknowledged", "logs-a", map[string]any{"index.number_of_replicas": 2}, "not_acknowledged.json", ErrNotAcknowledged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc, srv := newFakeCluster(t, map[string]route{"PUT /logs-a/_settings": {fixture: tt.fixture}})
			c := newTestClient(t, testConfig(srv.URL))
			err := c.PutIndexSettings(context.Background(), tt.index, tt.settings)
			if err == nil {
				t.Fatal("got nil error, want one")
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if n := len(fc.received()); n != 0 {
				t.Errorf("sent %d requests for a refused call, want 0", n)
			}
		})
	}
}

func TestReroute(t *testing.T) {
	c, fc := fixtureClient(t)
	cmds := []RerouteCommand{Move("logs-a", 1, "node-0", "node-2"), Cancel("logs-a", 0, "node-1", false)}
	got, err := c.Reroute(context.Background(), cmds, RerouteOptions{DryRun: true, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, RerouteResult{
		Acknowledged: true,
		Explanations: []RerouteExplanation{
			{Command: "move", Index: "logs-a", Shard: 1, FromNode: "node-0", ToNode: "node-2",
				Decisions: []Decision{{Decider: "move_allocation_command", Decision: "YES", Explanation: "shard has been moved"}}},
			{Command: "cancel", Index: "logs-a", Shard: 0, Node: "node-1",
				Decisions: []Decision{{Decider: "cancel_allocation_command", Decision: "YES", Explanation: "shard on node [x3F-8mN2QfWq6nQYk1xJ5A] can be cancelled"}}},
		},
	})
	req := fc.received()[0]
	wantBody := `{"commands":[{"move":{"index":"logs-a","shard":1,"from_node":"node-0","to_node":"node-2"}},{"cancel":{"index":"logs-a","shard":0,"node":"node-1"}}]}`
	if req.Body != wantBody {
		t.Errorf("body: got %s, want %s", req.Body, wantBody)
	}
	for k, want := range map[string]string{"dry_run": "true", "explain": "true", "metric": "none"} {
		if got := req.Query[k]; len(got) != 1 || got[0] != want {
			t.Errorf("query %s: got %v, want %s", k, got, want)
		}
	}
}

func TestRerouteRefusesBadCommands(t *testing.T) {
	tests := []struct {
		name string
		cmds []RerouteCommand
	}{
		{"no commands", nil},
		{"empty command", []RerouteCommand{{}}},
		{"move and cancel in one", []RerouteCommand{{Move: &MoveCommand{Index: "a", FromNode: "x", ToNode: "y"}, Cancel: &CancelCommand{Index: "a", Node: "x"}}}},
		{"move without target", []RerouteCommand{Move("a", 0, "x", "")}},
		{"move to the same node", []RerouteCommand{Move("a", 0, "x", "x")}},
		{"negative shard", []RerouteCommand{Move("a", -1, "x", "y")}},
		{"cancel without node", []RerouteCommand{Cancel("a", 0, "", false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fc := fixtureClient(t)
			if _, err := c.Reroute(context.Background(), tt.cmds, RerouteOptions{}); err == nil {
				t.Error("got nil error, want one")
			}
			if n := len(fc.received()); n != 0 {
				t.Errorf("sent %d requests, want 0", n)
			}
		})
	}
}

func TestAllocationExplain(t *testing.T) {
	c, fc := fixtureClient(t)
	got, err := c.AllocationExplain(context.Background(), "logs-a", 1, false, "node-0")
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, AllocationExplanation{
		Index: "logs-a", Shard: 1, CurrentState: "started",
		CurrentNode:             &NodeRef{ID: node0, Name: "node-0"},
		CanRemainOnCurrentNode:  "yes",
		CanRebalanceCluster:     "yes",
		CanRebalanceToOtherNode: "no",
		RebalanceExplanation:    "cannot rebalance as no target node exists that can both allocate this shard and improve the cluster balance",
		NodeDecisions: []NodeDecision{
			{NodeID: node2, NodeName: "node-2", Decision: "worse_balance", WeightRanking: 1},
			{NodeID: node1, NodeName: "node-1", Decision: "no", WeightRanking: 2, Deciders: []Decision{{
				Decider: "same_shard", Decision: "NO",
				Explanation: "a copy of this shard is already allocated to this node [[logs-a][1], node[x3F-8mN2QfWq6nQYk1xJ5A], [P], s[STARTED], a[id=a3]]",
			}}},
		},
	})
	if got, want := fc.received()[0].Body, `{"index":"logs-a","shard":1,"primary":false,"current_node":"node-0"}`; got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
}

func TestTasks(t *testing.T) {
	c, fc := fixtureClient(t)
	got, err := c.Tasks(context.Background(), "indices:data/read/search*, indices:data/write/bulk*")
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, TaskList{
		Tasks: []Task{
			{ID: node0 + ":90211", Node: node0, Type: "transport", Action: "indices:data/read/search",
				Description: `indices[logs-a], search_type[QUERY_THEN_FETCH], source[{"query":{"match_all":{}}}], cancel_after_time_interval[-1]`,
				StartTime:   ms(1740000020000), RunningTime: 10250 * time.Millisecond, Cancellable: true,
				Headers:   map[string]string{"X-Opaque-Id": "tenant-a"},
				Resources: &TaskResources{CPUTimeNanos: 5000000, MemoryBytes: 2097152, ThreadExecutions: 2}},
			{ID: node0 + ":90212", Node: node0, Type: "transport", Action: "indices:data/read/search[phase/query]",
				Description: "shardId[[logs-a][0]]", StartTime: ms(1740000020010), RunningTime: 10240 * time.Millisecond,
				Cancellable: true, ParentTaskID: node0 + ":90211", Headers: map[string]string{"X-Opaque-Id": "tenant-a"}},
			{ID: node1 + ":511", Node: node1, Type: "transport", Action: "indices:data/read/search",
				Description: "indices[.ds-metrics-000001], search_type[QUERY_THEN_FETCH]", StartTime: ms(1740000029000),
				RunningTime: 1200 * time.Millisecond, Cancellable: true, Canceled: true, Headers: map[string]string{}},
		},
		Failures: []Failure{{NodeID: node2, Type: "failed_node_exception",
			Reason: "Failed node [c4tTNPzcRsi2iqSLw9Xh3g]; caused by receive_timeout_transport_exception: [node-2][10.0.0.12:9300][cluster:monitor/tasks/lists[n]] request_id [1221] timed out after [30000ms]"}},
	})
	req := fc.received()[0]
	if got, want := req.Query["actions"], []string{"indices:data/read/search*,indices:data/write/bulk*"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions: got %v, want %v", got, want)
	}
	if got := req.Query["detailed"]; len(got) != 1 || got[0] != "true" {
		t.Errorf("detailed: got %v, want true", got)
	}
}

func TestCancelTask(t *testing.T) {
	tests := []struct {
		name         string
		route        route
		wantErr      bool
		wantNotFound bool
	}{
		{"canceled", route{fixture: "cancel_task.json"}, false, false},
		{"finished on another node", route{fixture: "cancel_task_node_failure.json"}, true, true},
		{"unknown task", route{status: 404, fixture: "error_task_not_found.json"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newFakeCluster(t, map[string]route{"POST /_tasks/" + node1 + ":511/_cancel": tt.route})
			c := newTestClient(t, testConfig(srv.URL))
			err := c.CancelTask(context.Background(), node1+":511")
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %t", err, tt.wantErr)
			}
			if got := IsNotFound(err); got != tt.wantNotFound {
				t.Errorf("IsNotFound(%v): got %t, want %t", err, got, tt.wantNotFound)
			}
		})
	}
}

// TestRequests checks what goes on the wire for every call: method and path, filter_path present
// (the bytes must stay small), level=shards for shard stats, and a request line short enough for
// OpenSearch's default http.max_initial_line_length.
func TestRequests(t *testing.T) {
	tests := []struct {
		name       string
		call       func(context.Context, *Client) error
		wantMethod string
		wantPath   string
		wantQuery  map[string]string
		wantFilter bool
	}{
		{"info", func(ctx context.Context, c *Client) error { _, err := c.Info(ctx); return err },
			"GET", "/", nil, true},
		{"health", func(ctx context.Context, c *Client) error { _, err := c.Health(ctx); return err },
			"GET", "/_cluster/health", nil, true},
		{"nodes stats", func(ctx context.Context, c *Client) error { _, err := c.NodesStats(ctx); return err },
			"GET", "/_nodes/stats/jvm,fs,thread_pool,indices", nil, true},
		{"nodes info", func(ctx context.Context, c *Client) error { _, err := c.NodesInfo(ctx); return err },
			"GET", "/_nodes", nil, true},
		{"shard stats", func(ctx context.Context, c *Client) error { _, err := c.ShardStats(ctx); return err },
			"GET", "/_stats", map[string]string{"level": "shards", "expand_wildcards": "open,hidden"}, true},
		{"cluster state", func(ctx context.Context, c *Client) error { _, err := c.ClusterState(ctx); return err },
			"GET", "/_cluster/state/metadata,routing_table,nodes", nil, true},
		{"cluster settings", func(ctx context.Context, c *Client) error { _, err := c.ClusterSettings(ctx); return err },
			"GET", "/_cluster/settings", map[string]string{"include_defaults": "true", "flat_settings": "true"}, true},
		{"reroute", func(ctx context.Context, c *Client) error {
			_, err := c.Reroute(ctx, []RerouteCommand{Move("logs-a", 1, "node-0", "node-2")}, RerouteOptions{})
			return err
		}, "POST", "/_cluster/reroute", map[string]string{"metric": "none", "dry_run": "false", "explain": "false"}, true},
		{"allocation explain", func(ctx context.Context, c *Client) error {
			_, err := c.AllocationExplain(ctx, "logs-a", 1, false, "")
			return err
		}, "POST", "/_cluster/allocation/explain", nil, true},
		{"tasks", func(ctx context.Context, c *Client) error { _, err := c.Tasks(ctx, ""); return err },
			"GET", "/_tasks", map[string]string{"detailed": "true"}, true},
		{"index settings", func(ctx context.Context, c *Client) error { _, err := c.IndexSettings(ctx, "logs-a"); return err },
			"GET", "/logs-a/_settings", map[string]string{"flat_settings": "true"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fc := fixtureClient(t)
			if err := tt.call(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			reqs := fc.received()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			req := reqs[0]
			if req.Method != tt.wantMethod || req.Path != tt.wantPath {
				t.Errorf("got %s %s, want %s %s", req.Method, req.Path, tt.wantMethod, tt.wantPath)
			}
			for k, want := range tt.wantQuery {
				if got := req.Query[k]; len(got) != 1 || got[0] != want {
					t.Errorf("query %s: got %v, want %s", k, got, want)
				}
			}
			if got := len(req.Query["filter_path"]) == 1 && req.Query["filter_path"][0] != ""; got != tt.wantFilter {
				t.Errorf("filter_path present: got %t, want %t (%v)", got, tt.wantFilter, req.Query["filter_path"])
			}
			if n := len(req.RequestLine); n >= maxRequestLine {
				t.Errorf("request line is %d bytes, OpenSearch refuses %d or more", n, maxRequestLine)
			}
		})
	}
}

// TestShardStatsRequestType checks the hand-written opensearch.Request on its own.
func TestShardStatsRequestType(t *testing.T) {
	req, err := shardStatsRequest.GetRequest("GET")
	if err != nil {
		t.Fatal(err)
	}
	q := req.URL.Query()
	if req.URL.Path != "/_stats" || q.Get("level") != "shards" {
		t.Errorf("got %s, want /_stats?level=shards", req.URL)
	}
	filters := strings.Split(q.Get("filter_path"), ",")
	for _, want := range []string{"indices.*.shards.*.routing.node", "indices.*.shards.*.indexing.index_time_in_millis"} {
		if !slices.Contains(filters, want) {
			t.Errorf("filter_path %v lacks %s", filters, want)
		}
	}
}
