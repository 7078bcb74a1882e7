package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/replicas"
)

// inputsSnapshot is six data nodes of 8 search threads, two of them on one host, and two search
// nodes; hot (2 primaries, 1 replica) sits on d0-d3, their search pools 6 threads busy each.
func inputsSnapshot() *cluster.Snapshot {
	s := &cluster.Snapshot{IntervalSeconds: 30}
	for i, name := range []string{"d0", "d1", "d2", "d3", "d4", "d5"} {
		host := name
		if name == "d5" {
			host = "d4"
		}
		n := cluster.Node{ID: name, Name: name, Host: host, Roles: []string{"data"}, Search: cluster.Pool{Threads: 8}, Write: cluster.Pool{Threads: 8}}
		if i < 4 {
			n.Search.Load = 6
		}
		s.Nodes = append(s.Nodes, n)
	}
	for _, name := range []string{"s0", "s1"} {
		s.Nodes = append(s.Nodes, cluster.Node{ID: name, Name: name, Roles: []string{"search"}, Search: cluster.Pool{Threads: 4}})
	}
	s.Indices = []cluster.Index{{Name: "hot", Primaries: 2, Replicas: 1}}
	for i, node := range []string{"d0", "d1", "d2", "d3"} {
		s.Copies = append(s.Copies, cluster.Copy{Index: "hot", Shard: i % 2, Primary: i < 2, State: cluster.StateStarted,
			Node: node, SizeBytes: 1 << 30, SearchLoad: 5, WriteLoad: 0.5, LoadKnown: true})
	}
	return s
}

func TestReplicaInputs(t *testing.T) {
	tests := []struct {
		name                   string
		edit                   func(*cluster.Snapshot)
		searchReplicas         bool
		nodes, maxCopies       int
		maxWhy                 string
		poolThreads, copyNodes int
		poolLoad, nodeThreads  float64
	}{
		{name: "data nodes, no placement rule", nodes: 6, maxCopies: 6, poolThreads: 32, poolLoad: 24, copyNodes: 4, nodeThreads: 8},
		{name: "search-replica mode: N counts the search nodes", searchReplicas: true, nodes: 2, maxCopies: 2,
			poolThreads: 32, poolLoad: 24, copyNodes: 4, nodeThreads: 4},
		{name: "index total_shards_per_node 1: 3 copies of each of 2 shards on 6 nodes",
			edit:  func(s *cluster.Snapshot) { s.Indices[0].TotalShardsPerNode = 1 },
			nodes: 6, maxCopies: 3, maxWhy: "total_shards_per_node=1", poolThreads: 32, poolLoad: 24, copyNodes: 4, nodeThreads: 8},
		{name: "cluster total_shards_per_node 1: one copy per node, 3 of each of 2 shards on 6 nodes",
			edit:  func(s *cluster.Snapshot) { s.Settings.TotalShardsPerNode = 1 },
			nodes: 6, maxCopies: 3, maxWhy: "cluster.routing.allocation.total_shards_per_node=1", poolThreads: 32, poolLoad: 24, copyNodes: 4, nodeThreads: 8},
		{name: "same_shard.host: d4 and d5 share a host",
			edit:  func(s *cluster.Snapshot) { s.Settings.SameShardHost = true },
			nodes: 6, maxCopies: 5, maxWhy: "same_shard.host", poolThreads: 32, poolLoad: 24, copyNodes: 4, nodeThreads: 8},
		{name: "an index filter leaves 4 nodes",
			edit:  func(s *cluster.Snapshot) { s.Indices[0].Filters.Include = map[string]string{"_name": "d0,d1,d2,d3"} },
			nodes: 4, maxCopies: 4, poolThreads: 32, poolLoad: 24, copyNodes: 4, nodeThreads: 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := inputsSnapshot()
			if tc.edit != nil {
				tc.edit(s)
			}
			in := ReplicaInputs(s, config.Default().Allocation, tc.searchReplicas)
			if len(in) != 1 {
				t.Fatalf("inputs: got %d, want 1", len(in))
			}
			got := in[0]
			if got.EligibleNodes != tc.nodes || got.MaxCopies != tc.maxCopies {
				t.Errorf("N, MaxCopies: got %d, %d (%s), want %d, %d", got.EligibleNodes, got.MaxCopies, got.MaxWhy, tc.nodes, tc.maxCopies)
			}
			if tc.maxWhy != "" && !strings.Contains(got.MaxWhy, tc.maxWhy) {
				t.Errorf("MaxWhy: got %q, want it to name %q", got.MaxWhy, tc.maxWhy)
			}
			if got.PoolThreads != tc.poolThreads || got.PoolLoad != tc.poolLoad || got.CopyNodes != tc.copyNodes || got.NodeSearchThreads != tc.nodeThreads {
				t.Errorf("pools: got threads %d load %v nodes %d per-node %v, want %d %v %d %v", got.PoolThreads, got.PoolLoad,
					got.CopyNodes, got.NodeSearchThreads, tc.poolThreads, tc.poolLoad, tc.copyNodes, tc.nodeThreads)
			}
			if got.SearchLoad != 20 || got.CopyBytes != 1<<30 || got.WriteLoadPerCopy != 0.5 {
				t.Errorf("load, bytes, write per copy: got %v %d %v, want 20 %d 0.5", got.SearchLoad, got.CopyBytes, got.WriteLoadPerCopy, 1<<30)
			}
		})
	}
	// The index's index.unassigned.node_left.delayed_timeout reaches the decider; without it the
	// decider's default applies.
	s := inputsSnapshot()
	if in := ReplicaInputs(s, config.Default().Allocation, false)[0]; in.DelayedTimeoutSet {
		t.Errorf("delayed timeout: got %v set, want unset when the index does not set it", in.DelayedTimeout)
	}
	s.Indices[0].NodeLeftDelayedTimeout, s.Indices[0].NodeLeftDelayedTimeoutSet = duration.Duration(5*time.Minute), true
	if in := ReplicaInputs(s, config.Default().Allocation, false)[0]; !in.DelayedTimeoutSet || in.DelayedTimeout != 5*time.Minute {
		t.Errorf("delayed timeout: got %v (set %v), want the index's 5m", in.DelayedTimeout, in.DelayedTimeoutSet)
	}
	// The decider reads these figures: hot's pools are 75 % busy, so need agrees with the formula.
	d := replicas.DefaultConfig()
	_, all, _ := replicas.Decide(inputsSnapshot().At, ReplicaInputs(inputsSnapshot(), config.Default().Allocation, false), nil, d)
	if all[0].Kind != replicas.KindScaleUp || all[0].To != 5 {
		t.Errorf("decision: got %s to %d (%s), want a scale-up to 5", all[0].Kind, all[0].To, all[0].Reason)
	}
}

func TestReplicasResultCountCopies(t *testing.T) {
	decisions := []replicas.Decision{
		{Index: "a", From: 1, S: 2, Kind: replicas.KindScaleUp, To: 4},
		{Index: "b", From: 3, S: 1, Kind: replicas.KindPendingScaleDown, To: 3},
		{Index: ".sys", From: 5, S: 1, Kind: replicas.KindSkip, To: 5},
	}
	tests := []struct {
		name       string
		applied    []replicas.Decision
		now, after int
	}{
		{"nothing applied", nil, 5, 5},
		{"the scale-up applied: 3 more replicas of 2 shards", decisions[:1], 5, 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ReplicasResult{Decisions: decisions, Applied: tc.applied}
			r.countCopies()
			if r.ReplicaCopies != tc.now || r.ReplicaCopiesAfter != tc.after {
				t.Errorf("replica copies: got %d → %d, want %d → %d", r.ReplicaCopies, r.ReplicaCopiesAfter, tc.now, tc.after)
			}
		})
	}
}
