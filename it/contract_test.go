//go:build integration

package it

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// recorder is an http.RoundTripper that keeps the body of the last response, so a test sees the
// raw JSON behind a typed client call.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	last []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	closeErr := resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("record %s %s: %w", req.Method, req.URL.Path, err)
	}
	if closeErr != nil {
		return nil, fmt.Errorf("record %s %s: %w", req.Method, req.URL.Path, closeErr)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.last = body
	r.mu.Unlock()
	return resp, nil
}

func (r *recorder) body() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// side is one end of the contract: the production client pointed at the real cluster or at the
// simulator, with the recorder under it.
type side struct {
	name   string
	client *opensearch.Client
	rec    *recorder
}

func newSide(t *testing.T, name string, urls []string) *side {
	t.Helper()
	rec := &recorder{next: http.DefaultTransport.(*http.Transport).Clone()}
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: urls, Auth: opensearch.AuthNone, Transport: rec})
	if err != nil {
		t.Fatalf("%s client: %v", name, err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil {
			t.Errorf("close %s client: %v", name, err)
		}
	})
	return &side{name: name, client: client, rec: rec}
}

// contractScenario mirrors the real cluster the contract test builds: three nodes named as
// scripts/opensearch.sh names them, with its pool sizes and heap, and the same two indices. Every
// OpenSearch 2.x node carries the attribute shard_indexing_pressure_enabled; the simulator's nodes
// carry only a zone, so they get one here: attribute names are configuration, their shape (a map
// of strings) is the contract.
const contractScenario = `{
  "name": "contract", "seed": 6, "tick_seconds": 30, "duration_seconds": 600,
  "node_defaults": {"write_threads": 1, "search_threads": 4, "heap_bytes": 536870912, "disk_bytes": 107374182400, "zone": "z"},
  "nodes": [{"name": "it-0"}, {"name": "it-1"}, {"name": "it-2"}],
  "indices": [
    {"name": "contract-a", "primaries": 2, "replicas": 1, "shard_bytes": 1048576,
     "write_load": {"kind": "constant", "value": 0.2}, "search_load": {"kind": "constant", "value": 2}},
    {"name": "contract-b", "primaries": 1, "replicas": 0, "shard_bytes": 1048576,
     "write_load": {"kind": "constant", "value": 0.1}, "search_load": {"kind": "constant", "value": 0.5},
     "placement": [["it-1"]]}
  ]
}`

// errNoTasks is a tasks answer with no task in it: nothing to compare yet.
var errNoTasks = errors.New("no tasks running")

// rerouteSpecDrift is why the simulator's move explanations carry two fields OpenSearch 2.19 leaves
// out: the OpenSearch API specification marks allow_primary and node required in every reroute
// explanation, and the simulator, validated against the specification, follows it. shardwise reads
// neither for a move.
const rerouteSpecDrift = "the API specification requires them in every explanation; OpenSearch sends a move's " +
	"index, shard, from_node and to_node only; the client reads neither for a move"

// searchActions is the action filter the sandbox function lists tasks with (shared/collect).
const searchActions = "indices:data/read/search*"

// routedTo returns the node id holding index[0]'s primary and another node's id, read through the
// side's own client, for a reroute both ends can explain.
func routedTo(ctx context.Context, s *side, index string) (from, to string, err error) {
	st, err := s.client.ClusterState(ctx)
	if err != nil {
		return "", "", err
	}
	for _, r := range st.Routing {
		if r.Index == index && r.Shard == 0 && r.Primary {
			from = r.Node
		}
	}
	for _, n := range st.Nodes {
		if n.ID != from {
			to = n.ID
			break
		}
	}
	if from == "" || to == "" {
		return "", "", fmt.Errorf("%s: no primary of %s[0] or no other node in the cluster state", s.name, index)
	}
	return from, to, nil
}

// TestContract sends every call the functions make to the real cluster and to the simulator through
// the same production client, and compares the raw responses' shapes: every key path the
// filter_path keeps and its value type. Any difference is drift: the simulator would let code pass
// that fails on OpenSearch, or the other way round.
func TestContract(t *testing.T) {
	a := newAdmin(t)
	specs := []indexSpec{{Name: "contract-a", Primaries: 2, Replicas: 1}, {Name: "contract-b", Primaries: 1, Node: "it-1"}}
	t.Cleanup(func() { a.deleteIndices(t, "contract-a", "contract-b") })
	a.createIndices(t, specs...)
	for _, s := range specs {
		a.fill(t, s.Name, 4, 500)
	}
	// Searches in flight give the tasks call something to list, and the search counters something
	// to count.
	searches := &searchLoad{admin: a, index: "contract-a", workers: 4}
	stop := searches.start(t)
	defer stop()

	sc, err := sim.ParseScenario([]byte(contractScenario))
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	for range 3 {
		s.Step()
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	sides := []*side{newSide(t, "OpenSearch", clusterURLs), newSide(t, "simulator", []string{srv.URL})}

	settingsRead := []string{
		"cluster.routing.allocation.disk.threshold_enabled", "cluster.routing.allocation.disk.watermark.high",
		"cluster.routing.allocation.awareness.attributes", "cluster.routing.allocation.enable",
		"cluster.routing.allocation.same_shard.host",
	}
	tests := []struct {
		name  string
		rules shapeRules
		// polls > 1 merges the shapes of several answers: which fields a task has depends on the
		// task (a shard-level search has a parent, a coordinating one does not), and the tasks
		// running at one instant are a sample.
		polls int
		// accepted are known differences that are not simulator bugs, each with the reason. One
		// that stops appearing fails the test too, so the list cannot go stale.
		accepted map[string]string
		call     func(ctx context.Context, s *side) error
	}{
		{name: "nodes stats", rules: shapeRules{dynamic: []string{"nodes", "nodes.*.attributes"}},
			call: func(ctx context.Context, s *side) error { _, err := s.client.NodesStats(ctx); return err }},
		{name: "nodes info", rules: shapeRules{dynamic: []string{"nodes", "nodes.*.attributes"}},
			call: func(ctx context.Context, s *side) error { _, err := s.client.NodesInfo(ctx); return err }},
		{name: "shard stats", rules: shapeRules{dynamic: []string{"indices", "indices.*.shards"}},
			call: func(ctx context.Context, s *side) error { _, err := s.client.ShardStats(ctx); return err }},
		{name: "cluster state", rules: shapeRules{dynamic: []string{"nodes", "nodes.*.attributes", "metadata.indices",
			"routing_table.indices", "routing_table.indices.*.shards",
			"metadata.indices.*.settings.index.routing.allocation.include",
			"metadata.indices.*.settings.index.routing.allocation.exclude",
			"metadata.indices.*.settings.index.routing.allocation.require"}},
			call: func(ctx context.Context, s *side) error { _, err := s.client.ClusterState(ctx); return err }},
		{name: "cluster health",
			call: func(ctx context.Context, s *side) error { _, err := s.client.Health(ctx); return err }},
		{name: "cluster settings", rules: shapeRules{settings: []string{"persistent", "transient", "defaults"}, read: settingsRead},
			accepted: map[string]string{
				"missing in the simulator: defaults.cluster.routing.allocation.same_shard.host (string)": "a static node " +
					"setting; the simulator lists only the defaults its model uses, and shardwise reads an absent value " +
					"as its default, false",
			},
			call: func(ctx context.Context, s *side) error { _, err := s.client.ClusterSettings(ctx); return err }},
		{name: "index settings", rules: shapeRules{dynamic: []string{""}, settings: []string{"*.settings"},
			read: []string{"index.number_of_shards", "index.number_of_replicas", "index.routing.allocation.exclude._name"}},
			call: func(ctx context.Context, s *side) error {
				_, err := s.client.IndexSettings(ctx, "contract-a")
				return err
			}},
		{name: "reroute dry-run", accepted: map[string]string{
			"only in the simulator: explanations.[].parameters.allow_primary (boolean)": rerouteSpecDrift,
			"only in the simulator: explanations.[].parameters.node (string)":           rerouteSpecDrift,
		}, call: func(ctx context.Context, s *side) error {
			from, to, err := routedTo(ctx, s, "contract-b")
			if err != nil {
				return err
			}
			_, err = s.client.Reroute(ctx, []opensearch.RerouteCommand{{Move: &opensearch.MoveCommand{
				Index: "contract-b", Shard: 0, FromNode: from, ToNode: to}}}, opensearch.RerouteOptions{DryRun: true, Explain: true})
			return err
		}},
		{name: "search tasks", rules: shapeRules{dynamic: []string{"nodes", "nodes.*.tasks", "nodes.*.tasks.*.headers"}}, polls: 20,
			call: func(ctx context.Context, s *side) error {
				tl, err := s.client.Tasks(ctx, searchActions)
				if err == nil && len(tl.Tasks) == 0 {
					return errNoTasks
				}
				return err
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shapes := make([]shape, len(sides))
			for i, s := range sides {
				shapes[i] = shape{}
				got := 0
				for range max(tc.polls, 1) {
					err := tc.call(t.Context(), s)
					if errors.Is(err, errNoTasks) {
						time.Sleep(100 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", s.name, err)
					}
					sh, err := shapeOf(s.rec.body(), tc.rules)
					if err != nil {
						t.Fatalf("%s: %v", s.name, err)
					}
					shapes[i].merge(sh)
					got++
				}
				if got == 0 {
					t.Fatalf("%s: no answer with a task in %d polls: the search load is not running", s.name, tc.polls)
				}
			}
			var unexpected []string
			seen := map[string]bool{}
			for _, d := range drift(shapes[0], shapes[1]) {
				if why, ok := tc.accepted[d]; ok {
					seen[d] = true
					t.Logf("known difference: %s: %s", d, why)
					continue
				}
				unexpected = append(unexpected, d)
			}
			for d := range tc.accepted {
				if !seen[d] {
					t.Errorf("a known difference no longer appears; take it off the list: %s", d)
				}
			}
			if len(unexpected) > 0 {
				t.Errorf("%d differences between OpenSearch and the simulator:\n  %s", len(unexpected), strings.Join(unexpected, "\n  "))
				return
			}
			t.Logf("same shape: %d key paths", len(shapes[0]))
		})
	}
}
