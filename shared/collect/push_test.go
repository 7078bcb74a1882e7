package collect_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// pushCluster serves a three-node simulator over HTTP and returns the collector and the simulator's
// own _nodes/stats document, as a collector beside the cluster would push it.
func pushCluster(t *testing.T) (*collect.API, []byte) {
	t.Helper()
	load := sim.Constant(2)
	s, err := sim.New(&sim.Scenario{
		Name: "push", Seed: 1, TickSeconds: 30, DurationSeconds: 600,
		NodeDefaults: sim.NodeSpec{WriteThreads: 8, SearchThreads: 13, HeapBytes: 8 << 30, DiskBytes: 1 << 40},
		Nodes:        []sim.NodeSpec{{Name: "node-0"}, {Name: "node-1"}, {Name: "node-2"}},
		Indices:      []sim.IndexSpec{{Name: "logs", Primaries: 3, Replicas: 1, ShardBytes: 1 << 30, WriteLoad: &load, SearchLoad: &load}},
	}, sim.Options{})
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	s.Step()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{srv.URL}, Auth: opensearch.AuthNone})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/_nodes/stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET _nodes/stats: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return collect.New(client, s.Now), body
}

// TestReadPushedUsesThePush: the sample's node figures are the pushed ones, not what the cluster
// would answer now; the rest of the sample is read.
func TestReadPushedUsesThePush(t *testing.T) {
	api, body := pushCluster(t)
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, n := range doc["nodes"].(map[string]any) {
		n := n.(map[string]any)
		n["thread_pool"].(map[string]any)["write"].(map[string]any)["queue"] = 4321
	}
	pushed, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := opensearch.DecodeNodesStats(pushed)
	if err != nil {
		t.Fatalf("DecodeNodesStats: %v", err)
	}
	s, err := api.ReadPushed(t.Context(), ns)
	if err != nil {
		t.Fatalf("ReadPushed: %v", err)
	}
	if len(s.Snapshot.Nodes) != 3 || len(s.Snapshot.Copies) != 6 {
		t.Fatalf("sample: %d nodes, %d copies, want 3 and 6", len(s.Snapshot.Nodes), len(s.Snapshot.Copies))
	}
	for _, n := range s.Snapshot.Nodes {
		if n.Write.Queue != 4321 {
			t.Errorf("%s WRITE queue: got %d, want the pushed 4321", n.Name, n.Write.Queue)
		}
		if n.Write.Threads != 8 {
			t.Errorf("%s WRITE threads: got %d, want 8 from _nodes", n.Name, n.Write.Threads)
		}
	}
	if len(s.Counters.Copies) != 6 {
		t.Errorf("copy counters: got %d, want 6 read from _stats", len(s.Counters.Copies))
	}
}

func TestCheckPushed(t *testing.T) {
	state := opensearch.ClusterState{Nodes: []opensearch.StateNode{{ID: "a", Name: "node-a"}, {ID: "b", Name: "node-b"}, {ID: "c", Name: "node-c"}}}
	push := func(failed int, ids ...string) opensearch.NodesStats {
		ns := opensearch.NodesStats{Failed: failed}
		for _, id := range ids {
			ns.Nodes = append(ns.Nodes, opensearch.NodeStats{ID: id, Name: "node-" + id})
		}
		return ns
	}
	tests := []struct {
		name    string
		ns      opensearch.NodesStats
		wantErr string
	}{
		{name: "every node", ns: push(0, "a", "b", "c")},
		{name: "a missing node the push counts as failed", ns: push(1, "a", "c")},
		{name: "a node of another cluster", ns: push(0, "a", "b", "c", "x"), wantErr: "node x (node-x) is not in the cluster state"},
		{name: "a missing node", ns: push(0, "a", "c"), wantErr: "1 of the cluster's nodes are missing ([b (node-b)])"},
		{name: "more missing than failed", ns: push(1, "a"), wantErr: "2 of the cluster's nodes are missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := collect.CheckPushed(tc.ns, state)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, engine.ErrPushRejected) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want ErrPushRejected saying %q", err, tc.wantErr)
			}
		})
	}
}
