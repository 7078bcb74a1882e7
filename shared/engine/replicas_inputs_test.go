package engine

import (
	"strconv"
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

// TestReplicaInputsPerIndex: each index's figures are its own copies', wherever they sit in the
// snapshot's list and whatever lies between them, and its nodes are those its own filters allow,
// whichever index came before it.
func TestReplicaInputsPerIndex(t *testing.T) {
	s := inputsSnapshot()
	s.Indices = []cluster.Index{{Name: "a", Primaries: 1, Replicas: 1}, {Name: "b", Primaries: 1, Replicas: 1,
		Filters: cluster.Filters{Include: map[string]string{"_name": "d0,d1"}}}, {Name: "c", Primaries: 1, Replicas: 1}}
	cp := func(index, node, state string, search float64, known bool) cluster.Copy {
		return cluster.Copy{Index: index, Node: node, State: state, SizeBytes: 1 << 20, SearchLoad: search, LoadKnown: known}
	}
	s.Copies = []cluster.Copy{
		cp("a", "d0", cluster.StateStarted, 1, true),
		cp("b", "d1", cluster.StateStarted, 2, true),
		cp("a", "", cluster.StateUnassigned, 0, false),
		cp("c", "d2", cluster.StateStarted, 4, false),
		cp("a", "d3", cluster.StateStarted, 8, true),
		cp("b", "d0", cluster.StateInitializing, 16, false),
	}
	want := map[string]struct {
		load      float64
		known     bool
		copyNodes int
		eligible  int
		copyBytes int64
		maxCopies int // the nodes its filters allow, one copy of its shard each
	}{
		"a": {9, true, 2, 6, 1 << 20, 6},
		"b": {2, true, 1, 2, 1 << 20, 2},
		"c": {4, false, 1, 6, 1 << 20, 6},
	}
	for _, in := range ReplicaInputs(s, config.Default().Allocation, false) {
		w := want[in.Name]
		if in.SearchLoad != w.load || in.LoadKnown != w.known || in.CopyNodes != w.copyNodes || in.EligibleNodes != w.eligible ||
			in.CopyBytes != w.copyBytes || in.MaxCopies != w.maxCopies {
			t.Errorf("%s: got load %v known %v copy nodes %d eligible %d bytes %d max copies %d, want %v %v %d %d %d %d", in.Name,
				in.SearchLoad, in.LoadKnown, in.CopyNodes, in.EligibleNodes, in.CopyBytes, in.MaxCopies,
				w.load, w.known, w.copyNodes, w.eligible, w.copyBytes, w.maxCopies)
		}
	}
}

// BenchmarkReplicaInputs30k measures the replica controller's inputs on 37 nodes and 5,000
// indices of 3 primaries and a replica (30,000 copies), as the replicas function works them out
// each cycle.
func BenchmarkReplicaInputs30k(b *testing.B) {
	s := &cluster.Snapshot{IntervalSeconds: 30}
	const nodes = 37
	for i := range nodes {
		id := "n" + strconv.Itoa(i)
		s.Nodes = append(s.Nodes, cluster.Node{ID: id, Name: id, Host: id, Roles: []string{"data"}, DiskTotalBytes: 4 << 40,
			DiskAvailableBytes: 3 << 40, Search: cluster.Pool{Threads: 13, Load: 3}, Write: cluster.Pool{Threads: 8, Load: 2}})
	}
	for ix := range 5000 {
		name := "index-" + strconv.Itoa(ix)
		s.Indices = append(s.Indices, cluster.Index{Name: name, Primaries: 3, Replicas: 1})
		for sh := range 3 {
			for r := range 2 {
				s.Copies = append(s.Copies, cluster.Copy{Index: name, Shard: sh, Primary: r == 0, State: cluster.StateStarted,
					Node: s.Nodes[(ix*3+sh+r*7)%nodes].ID, SizeBytes: 1 << 30, SearchLoad: 0.01, WriteLoad: 0.005, LoadKnown: true})
			}
		}
	}
	s.Sort()
	cfg := config.Default().Allocation
	b.ReportAllocs()
	for b.Loop() {
		ReplicaInputs(s, cfg, false)
	}
}

// TestReplicaInputsHeaviestShard: what a new copy of an index indexes is its heaviest shard's
// replica load, however its shards' copies are listed.
func TestReplicaInputsHeaviestShard(t *testing.T) {
	cp := func(shard int, primary bool, node string, load float64) cluster.Copy {
		return cluster.Copy{Index: "a", Shard: shard, Primary: primary, Node: node, State: cluster.StateStarted,
			SizeBytes: 1 << 20, WriteLoad: load, LoadKnown: true}
	}
	tests := []struct {
		name   string
		copies []cluster.Copy
		want   float64
	}{
		{name: "shards side by side", copies: []cluster.Copy{cp(0, true, "d0", 0.5), cp(0, false, "d1", 0.5), cp(1, true, "d2", 2), cp(1, false, "d3", 2)}, want: 2},
		{name: "the heavier shard first", copies: []cluster.Copy{cp(0, true, "d0", 3), cp(0, false, "d1", 3), cp(1, true, "d2", 2), cp(1, false, "d3", 2)}, want: 3},
		{name: "shards interleaved", copies: []cluster.Copy{cp(0, true, "d0", 0.5), cp(1, true, "d2", 2), cp(0, false, "d1", 0.5), cp(1, false, "d3", 2)}, want: 2},
		{name: "a replica heavier than its primary", copies: []cluster.Copy{cp(0, true, "d0", 0.5), cp(0, false, "d1", 4), cp(1, true, "d2", 2)}, want: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := inputsSnapshot()
			s.Indices = []cluster.Index{{Name: "a", Primaries: 2, Replicas: 1}}
			s.Copies = tc.copies
			in := ReplicaInputs(s, config.Default().Allocation, false)
			if len(in) != 1 || in[0].WriteLoadPerCopy != tc.want {
				t.Fatalf("got %+v, want one index whose new copy indexes %v threads", in, tc.want)
			}
		})
	}
}
