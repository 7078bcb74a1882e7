package collect

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/opensearch"
)

var at = time.Date(2026, 11, 29, 10, 15, 30, 0, time.UTC)

// responses are the five reads Build assembles, hand-built as the client decodes them.
type responses struct {
	ns    opensearch.NodesStats
	ss    opensearch.ShardStats
	cs    opensearch.ClusterState
	h     opensearch.Health
	set   opensearch.ClusterSettings
	pools map[string]opensearch.NodeInfo
}

func (r responses) build(t *testing.T) cluster.Sample {
	t.Helper()
	s, err := Build(at, r.ns, r.ss, r.cs, r.h, r.set, r.pools)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return s
}

// base is a three-node cluster: logs has two shards with one replica each; shard 1's replica is
// unassigned and its primary relocates from n1 to n3.
func base() responses {
	node := func(id, name string, ts time.Time) opensearch.NodeStats {
		return opensearch.NodeStats{ID: id, Name: name, Host: "10.0.0." + id[1:], IP: "10.0.0." + id[1:], Roles: []string{"data", "ingest"},
			Attributes: map[string]string{"zone": "a"}, Timestamp: ts, HeapUsedBytes: 2 << 30, HeapMaxBytes: 8 << 30,
			DiskTotalBytes: 100 << 30, DiskAvailableBytes: 70 << 30,
			Write:  opensearch.ThreadPoolStats{Threads: 3, Queue: 12, Active: 3, Completed: 1000, Rejected: 4},
			Search: opensearch.ThreadPoolStats{Threads: 5, Queue: 1, Active: 2, Completed: 500, Rejected: 1}}
	}
	return responses{
		ns: opensearch.NodesStats{Nodes: []opensearch.NodeStats{
			node("n1", "node-1", at.Add(-2*time.Second)), node("n2", "node-2", at.Add(-time.Second)), node("n3", "node-3", time.Time{}),
		}},
		ss: opensearch.ShardStats{Copies: []opensearch.ShardCopyStats{
			{Index: "logs", Shard: 0, Primary: true, State: "STARTED", Node: "n1", IndexTimeMillis: 9000, QueryTimeMillis: 100, FetchTimeMillis: 20, QueryTotal: 10, StoreBytes: 5 << 30},
			{Index: "logs", Shard: 0, State: "STARTED", Node: "n2", IndexTimeMillis: 8000, QueryTimeMillis: 60, FetchTimeMillis: 5, QueryTotal: 4, StoreBytes: 5<<30 - 100},
			{Index: "logs", Shard: 1, Primary: true, State: "RELOCATING", Node: "n1", RelocatingNode: "n3", IndexTimeMillis: 700, QueryTimeMillis: 50, QueryTotal: 5, StoreBytes: 3 << 30},
			// Stats for a copy the routing table no longer lists (it finished moving): ignored.
			{Index: "logs", Shard: 0, State: "STARTED", Node: "n3", IndexTimeMillis: 1, StoreBytes: 7 << 30},
		}},
		cs: opensearch.ClusterState{
			Indices: []opensearch.IndexMetadata{
				{Name: "logs", State: "open", NumberOfShards: 2, NumberOfReplicas: 1, TotalShardsPerNode: -1, ReplicationType: "SEGMENT", TotalPrimaryShardsPerNode: -1,
					CreationDate: time.UnixMilli(1739990000000),
					Filters:      opensearch.AllocationFilters{Require: map[string]string{"zone": "a"}}},
				{Name: ".kibana", State: "open", NumberOfShards: 1, Hidden: true, TotalShardsPerNode: 2, TotalPrimaryShardsPerNode: 1,
					NodeLeftDelayedTimeout: 5 * time.Minute, NodeLeftDelayedTimeoutSet: true},
				{Name: "archive", State: "close", NumberOfShards: 1, TotalShardsPerNode: -1},
			},
			Routing: []opensearch.ShardRouting{
				{Index: "logs", Shard: 0, Primary: true, State: "STARTED", Node: "n1"},
				{Index: "logs", Shard: 0, State: "STARTED", Node: "n2"},
				{Index: "logs", Shard: 1, Primary: true, State: "RELOCATING", Node: "n1", RelocatingNode: "n3"},
				// The target half of that relocation.
				{Index: "logs", Shard: 1, Primary: true, State: "INITIALIZING", Node: "n3", RelocatingNode: "n1"},
				{Index: "logs", Shard: 1, State: "UNASSIGNED", UnassignedReason: "NODE_LEFT"},
				// A new replica recovering from its primary: no relocation, kept.
				{Index: ".kibana", Shard: 0, Primary: true, State: "STARTED", Node: "n2"},
				{Index: ".kibana", Shard: 0, State: "INITIALIZING", Node: "n3"},
			},
		},
		h:   opensearch.Health{Status: "yellow", RelocatingShards: 1, InitializingShards: 2, UnassignedShards: 1},
		set: opensearch.ClusterSettings{},
	}
}

type copyView struct {
	Index, State, Node, Relocating string
	Shard                          int
	Primary                        bool
	Size                           int64
}

func copies(s cluster.Snapshot) []copyView {
	var out []copyView
	for _, c := range s.Copies {
		out = append(out, copyView{c.Index, c.State, c.Node, c.RelocatingNode, c.Shard, c.Primary, c.SizeBytes})
	}
	return out
}

// defaultRecoveries are OpenSearch's recovery limits, read where no setting is given.
var defaultRecoveries = cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 2, Known: true}

func TestBuildRoutingIsTheTruth(t *testing.T) {
	s := base().build(t)
	want := []copyView{
		{".kibana", "STARTED", "n2", "", 0, true, 0},
		{".kibana", "INITIALIZING", "n3", "", 0, false, 0},
		{"logs", "STARTED", "n1", "", 0, true, 5 << 30},
		{"logs", "STARTED", "n2", "", 0, false, 5<<30 - 100},
		{"logs", "RELOCATING", "n1", "n3", 1, true, 3 << 30},
		// Unassigned: kept, sized like the shard's largest copy so disk checks can count it.
		{"logs", "UNASSIGNED", "", "", 1, false, 3 << 30},
	}
	if got := copies(s.Snapshot); !reflect.DeepEqual(got, want) {
		t.Errorf("copies:\n got %+v\nwant %+v", got, want)
	}
	if s.Snapshot.Health != "yellow" || !s.Snapshot.At.Equal(at) || !s.Counters.At.Equal(at) {
		t.Errorf("health %q at %v counters at %v", s.Snapshot.Health, s.Snapshot.At, s.Counters.At)
	}
	var names []string
	for _, ix := range s.Snapshot.Indices {
		names = append(names, ix.Name)
	}
	if want := []string{".kibana", "logs"}; !slices.Equal(names, want) {
		t.Errorf("indices: got %v want %v (closed ones left out)", names, want)
	}
}

func TestBuildIndexMetadata(t *testing.T) {
	s := base().build(t)
	logs := s.Snapshot.IndexByName("logs")
	kibana := s.Snapshot.IndexByName(".kibana")
	if logs == nil || kibana == nil {
		t.Fatal("indices missing")
	}
	if logs.Primaries != 2 || logs.Replicas != 1 || logs.Filters.Require["zone"] != "a" {
		t.Errorf("logs: got %+v", *logs)
	}
	if !logs.Created.Equal(time.UnixMilli(1739990000000)) || !kibana.Created.IsZero() {
		t.Errorf("creation dates: got logs %v .kibana %v, want index.creation_date and zero where it is absent", logs.Created, kibana.Created)
	}
	// cluster.Index documents 0 as unlimited; OpenSearch's -1 must not leak through.
	if logs.TotalShardsPerNode != 0 || kibana.TotalShardsPerNode != 2 {
		t.Errorf("total_shards_per_node: got logs %d .kibana %d, want 0 (unlimited) and 2", logs.TotalShardsPerNode, kibana.TotalShardsPerNode)
	}
	if logs.TotalPrimaryShardsPerNode != 0 || kibana.TotalPrimaryShardsPerNode != 1 {
		t.Errorf("total_primary_shards_per_node: got logs %d .kibana %d, want 0 (unlimited) and 1", logs.TotalPrimaryShardsPerNode, kibana.TotalPrimaryShardsPerNode)
	}
	// An index that sets index.unassigned.node_left.delayed_timeout carries it; one that does not
	// leaves it nil, for the default.
	if logs.NodeLeftDelayedTimeoutSet || !kibana.NodeLeftDelayedTimeoutSet || kibana.NodeLeftDelayedTimeout.Std() != 5*time.Minute {
		t.Errorf("node_left delayed_timeout: got logs %v .kibana %v, want nil and 5m", logs.NodeLeftDelayedTimeout, kibana.NodeLeftDelayedTimeout)
	}
	// index.replication.type reaches the model: logs uses segment replication, .kibana says nothing
	// (document replication).
	if !logs.Segment() || kibana.Segment() || kibana.ReplicationType != "" {
		t.Errorf("replication type: got logs %q .kibana %q, want SEGMENT and none", logs.ReplicationType, kibana.ReplicationType)
	}
	if !kibana.Hidden || !kibana.System() {
		t.Errorf(".kibana: got hidden %v, want hidden and system", kibana.Hidden)
	}
}

func TestBuildCounters(t *testing.T) {
	s := base().build(t)
	wantCopies := map[string]cluster.CopyCounters{
		cluster.CopyKey("logs", 0, "n1"): {IndexTimeMillis: 9000, SearchTimeMillis: 120},
		cluster.CopyKey("logs", 0, "n2"): {IndexTimeMillis: 8000, SearchTimeMillis: 65},
		// A relocating copy's counters belong to its source.
		cluster.CopyKey("logs", 1, "n1"): {IndexTimeMillis: 700, SearchTimeMillis: 50},
	}
	if !reflect.DeepEqual(s.Counters.Copies, wantCopies) {
		t.Errorf("copy counters:\n got %+v\nwant %+v", s.Counters.Copies, wantCopies)
	}
	wantNodes := map[string]cluster.NodeCounters{
		// n1: query totals summed over its two copies (10+5 queries, 100+50 ms).
		// The WRITE queue, a gauge, is kept with the counters: its change tells a backlog served.
		"n1": {At: at.Add(-2 * time.Second), WriteCompleted: 1000, WriteRejected: 4, SearchCompleted: 500, SearchRejected: 1, QueryTimeMillis: 150, QueryTotal: 15, WriteQueue: 12},
		"n2": {At: at.Add(-time.Second), WriteCompleted: 1000, WriteRejected: 4, SearchCompleted: 500, SearchRejected: 1, QueryTimeMillis: 60, QueryTotal: 4, WriteQueue: 12},
		// n3 reported no timestamp: its counters are stamped with the sample's time.
		"n3": {At: at, WriteCompleted: 1000, WriteRejected: 4, SearchCompleted: 500, SearchRejected: 1, WriteQueue: 12},
	}
	if !reflect.DeepEqual(s.Counters.Nodes, wantNodes) {
		t.Errorf("node counters:\n got %+v\nwant %+v", s.Counters.Nodes, wantNodes)
	}
}

func TestBuildPoolSizes(t *testing.T) {
	cases := []struct {
		name          string
		pools         map[string]opensearch.NodeInfo
		write, search int
	}{
		{"NodesInfo sizes win over threads started so far", map[string]opensearch.NodeInfo{
			"n1": {ID: "n1", Write: opensearch.ThreadPoolInfo{Size: 8}, Search: opensearch.ThreadPoolInfo{Size: 13}}}, 8, 13},
		{"no NodesInfo for the node: stats threads", nil, 3, 5},
		{"a zero size in NodesInfo is no answer", map[string]opensearch.NodeInfo{"n1": {ID: "n1", Search: opensearch.ThreadPoolInfo{Size: 13}}}, 3, 13},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			r.pools = tc.pools
			s := r.build(t)
			n := s.Snapshot.NodeByID("n1")
			if n.Write.Threads != tc.write || n.Search.Threads != tc.search {
				t.Errorf("threads: got write %d search %d, want %d and %d", n.Write.Threads, n.Search.Threads, tc.write, tc.search)
			}
			if n.Write.Queue != 12 || n.Write.Active != 3 || n.Search.Queue != 1 {
				t.Errorf("pool figures: got %+v", n.Write)
			}
		})
	}
}

func TestBuildNodes(t *testing.T) {
	s := base().build(t)
	if len(s.Snapshot.Nodes) != 3 {
		t.Fatalf("nodes: got %d want 3", len(s.Snapshot.Nodes))
	}
	n := s.Snapshot.NodeByID("n2")
	want := cluster.Node{ID: "n2", Name: "node-2", Host: "10.0.0.2", IP: "10.0.0.2", Roles: []string{"data", "ingest"},
		Attributes: map[string]string{"zone": "a"}, HeapUsedBytes: 2 << 30, HeapMaxBytes: 8 << 30, DiskTotalBytes: 100 << 30,
		DiskAvailableBytes: 70 << 30, StatsAt: at.Add(-time.Second),
		Write: cluster.Pool{Threads: 3, Queue: 12, Active: 3}, Search: cluster.Pool{Threads: 5, Queue: 1, Active: 2}}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("node-2:\n got %+v\nwant %+v", *n, want)
	}
}

func TestBuildSettings(t *testing.T) {
	cases := []struct {
		name    string
		set     opensearch.ClusterSettings
		want    cluster.Settings
		wantErr string
	}{
		{
			name: "defaults: 90% high watermark",
			set:  opensearch.ClusterSettings{},
			want: cluster.Settings{DiskHighWatermark: 0.9, AllocationEnable: "all", Recoveries: defaultRecoveries},
		},
		{
			name: "ratio watermark",
			set:  opensearch.ClusterSettings{"cluster.routing.allocation.disk.watermark.high": "85%"},
			want: cluster.Settings{DiskHighWatermark: 0.85, AllocationEnable: "all", Recoveries: defaultRecoveries},
		},
		{
			name: "absolute watermark is free bytes, not a ratio",
			set:  opensearch.ClusterSettings{"cluster.routing.allocation.disk.watermark.high": "10gb"},
			want: cluster.Settings{DiskHighWatermarkFreeBytes: 10 << 30, AllocationEnable: "all", Recoveries: defaultRecoveries},
		},
		{
			name: "filters, awareness and allocation settings are copied",
			set: opensearch.ClusterSettings{
				"cluster.routing.allocation.disk.watermark.high":         "0.95",
				"cluster.routing.allocation.exclude._name":               "node-9",
				"cluster.routing.allocation.include.zone":                "a,b",
				"cluster.routing.allocation.require._ip":                 "10.0.*",
				"cluster.routing.allocation.awareness.attributes":        "zone, rack",
				"cluster.routing.allocation.awareness.force.zone.values": "a,b,c",
				"cluster.routing.allocation.enable":                      "primaries",
				"cluster.routing.allocation.same_shard.host":             "true",
			},
			want: cluster.Settings{DiskHighWatermark: 0.95, AwarenessAttributes: []string{"zone", "rack"},
				ForcedAwareness: map[string][]string{"zone": {"a", "b", "c"}},
				Filters: cluster.Filters{Include: map[string]string{"zone": "a,b"}, Exclude: map[string]string{"_name": "node-9"},
					Require: map[string]string{"_ip": "10.0.*"}},
				SameShardHost: true, AllocationEnable: "primaries", Recoveries: defaultRecoveries},
		},
		{
			name: "recovery limits: incoming and outgoing default to node_concurrent_recoveries",
			set: opensearch.ClusterSettings{
				"cluster.routing.allocation.node_concurrent_recoveries":          "4",
				"cluster.routing.allocation.node_concurrent_outgoing_recoveries": "3",
				"cluster.routing.allocation.cluster_concurrent_rebalance":        "-1",
			},
			want: cluster.Settings{DiskHighWatermark: 0.9, AllocationEnable: "all",
				Recoveries: cluster.RecoveryLimits{NodeIncoming: 4, NodeOutgoing: 3, ClusterRebalance: -1, Known: true}},
		},
		{
			name: "recovery limits: a default incoming of 2 beside a raised node_concurrent_recoveries reads as the lower",
			set: opensearch.ClusterSettings{
				"cluster.routing.allocation.node_concurrent_recoveries":          "6",
				"cluster.routing.allocation.node_concurrent_incoming_recoveries": "2",
				"cluster.routing.allocation.node_concurrent_outgoing_recoveries": "8",
			},
			want: cluster.Settings{DiskHighWatermark: 0.9, AllocationEnable: "all",
				Recoveries: cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 6, ClusterRebalance: 2, Known: true}},
		},
		{
			name: "cluster-wide total_shards_per_node; OpenSearch's -1 reads as unlimited (0)",
			set:  opensearch.ClusterSettings{"cluster.routing.allocation.total_shards_per_node": "40"},
			want: cluster.Settings{DiskHighWatermark: 0.9, AllocationEnable: "all", Recoveries: defaultRecoveries, TotalShardsPerNode: 40},
		},
		{
			name: "cluster-wide total_shards_per_node of -1",
			set:  opensearch.ClusterSettings{"cluster.routing.allocation.total_shards_per_node": "-1"},
			want: cluster.Settings{DiskHighWatermark: 0.9, AllocationEnable: "all", Recoveries: defaultRecoveries},
		},
		{
			name: "cluster-wide total_primary_shards_per_node; OpenSearch's -1 reads as unlimited (0)",
			set:  opensearch.ClusterSettings{"cluster.routing.allocation.total_primary_shards_per_node": "3"},
			want: cluster.Settings{DiskHighWatermark: 0.9, AllocationEnable: "all", Recoveries: defaultRecoveries, TotalPrimaryShardsPerNode: 3},
		},
		{
			name:    "a bad total_primary_shards_per_node is an error naming the setting",
			set:     opensearch.ClusterSettings{"cluster.routing.allocation.total_primary_shards_per_node": "-x"},
			wantErr: "cluster.routing.allocation.total_primary_shards_per_node",
		},
		{
			name:    "a bad total_shards_per_node is an error naming the setting",
			set:     opensearch.ClusterSettings{"cluster.routing.allocation.total_shards_per_node": "many"},
			wantErr: "cluster.routing.allocation.total_shards_per_node",
		},
		{
			name:    "a bad recovery limit is an error naming the setting",
			set:     opensearch.ClusterSettings{"cluster.routing.allocation.cluster_concurrent_rebalance": "two"},
			wantErr: "cluster.routing.allocation.cluster_concurrent_rebalance",
		},
		{
			name:    "a bad watermark is an error naming the setting",
			set:     opensearch.ClusterSettings{"cluster.routing.allocation.disk.watermark.high": "lots%"},
			wantErr: "cluster.routing.allocation.disk.watermark.high",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			r.set = tc.set
			s, err := Build(at, r.ns, r.ss, r.cs, r.h, r.set, r.pools)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Build: got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := s.Snapshot.Settings
			if len(got.ForcedAwareness) == 0 {
				got.ForcedAwareness = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("settings:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Build feeds cluster.Derive: two builds 30 s apart give the copy loads the counters imply.
func TestBuildFeedsDerive(t *testing.T) {
	r := base()
	first := r.build(t)
	r.ss.Copies[0].IndexTimeMillis += 60000 // 2 s of indexing per second over 30 s
	for i := range r.ns.Nodes {
		r.ns.Nodes[i].Timestamp = r.ns.Nodes[i].Timestamp.Add(30 * time.Second)
		r.ns.Nodes[i].Write.Completed += 3000
	}
	second, err := Build(at.Add(30*time.Second), r.ns, r.ss, r.cs, r.h, r.set, r.pools)
	if err != nil {
		t.Fatal(err)
	}
	snap := cluster.Derive(&first.Counters, second)
	for _, c := range snap.Copies {
		if c.Index == "logs" && c.Shard == 0 && c.Node == "n1" {
			if !c.LoadKnown || c.WriteLoad != 2 {
				t.Errorf("logs[0] on n1: load %v known %v, want 2 known", c.WriteLoad, c.LoadKnown)
			}
			return
		}
	}
	t.Error("logs[0] on n1 missing")
}
