package rest_test

import (
	"github.com/shardwise/shardwise/shared/sim"

	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/apispec"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// Every endpoint the simulator serves validates against the official OpenSearch API specification
// (third_party/opensearch-api-spec), so a client written against OpenSearch cannot tell them apart.
func TestResponsesMatchOpenSearchSpec(t *testing.T) {
	spec := apispec.Shared(t)
	s, err := sim.New(simtest.LoadShared(t, "write-hotspot"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Step()
	}
	h := s.REST.Handler()
	node0 := simtest.NodeID(t, s, "node-0")
	node3 := simtest.NodeID(t, s, "node-3")
	cases := []struct {
		name, method, target, body string
		status                     int
	}{
		{"info", "GET", "/", "", 200},
		{"health", "GET", "/_cluster/health", "", 200},
		{"health of an index", "GET", "/_cluster/health/clicks", "", 200},
		{"state", "GET", "/_cluster/state", "", 200},
		{"state metrics", "GET", "/_cluster/state/metadata,routing_table,nodes", "", 200},
		{"settings", "GET", "/_cluster/settings?include_defaults=true&flat_settings=true", "", 200},
		{"put settings", "PUT", "/_cluster/settings", `{"transient":{"cluster.routing.allocation.exclude._name":""}}`, 200},
		{"cat shards", "GET", "/_cat/shards?format=json", "", 200},
		{"cat nodes", "GET", "/_cat/nodes?format=json", "", 200},
		{"cat indices", "GET", "/_cat/indices?format=json", "", 200},
		{"nodes info", "GET", "/_nodes", "", 200},
		{"nodes stats", "GET", "/_nodes/stats", "", 200},
		{"one node's stats", "GET", "/_nodes/" + node0 + "/stats", "", 200},
		{"indices stats", "GET", "/_stats", "", 200},
		{"indices stats by shard", "GET", "/_stats?level=shards", "", 200},
		{"index stats", "GET", "/clicks/_stats?level=shards", "", 200},
		{"index settings", "GET", "/clicks/_settings", "", 200},
		{"flat index settings", "GET", "/clicks/_settings?flat_settings=true", "", 200},
		{"put index settings", "PUT", "/audit/_settings", `{"index":{"number_of_replicas":1}}`, 200},
		{"reroute dry run", "POST", "/_cluster/reroute?dry_run=true&metric=none",
			`{"commands":[{"move":{"index":"clicks","shard":0,"from_node":"` + node0 + `","to_node":"` + node3 + `"}}]}`, 200},
		{"reroute dry run explained", "POST", "/_cluster/reroute?dry_run=true&explain=true&metric=none",
			`{"commands":[{"move":{"index":"clicks","shard":0,"from_node":"` + node0 + `","to_node":"` + node3 + `"}}]}`, 200},
		{"reroute refused: same node", "POST", "/_cluster/reroute?dry_run=true",
			`{"commands":[{"move":{"index":"clicks","shard":0,"from_node":"` + node0 + `","to_node":"` + node0 + `"}}]}`, 400},
		{"allocation explain", "POST", "/_cluster/allocation/explain", `{"index":"clicks","shard":0,"primary":true}`, 200},
		{"tasks", "GET", "/_tasks?detailed=true&actions=indices:data/read/search*", "", 200},
		{"unknown index", "GET", "/nope/_stats", "", 404},
		{"unknown index settings", "GET", "/nope/_settings", "", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(context.Background(), tc.method, tc.target, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status: got %d want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			vreq := httptest.NewRequestWithContext(context.Background(), tc.method, tc.target, bytes.NewReader([]byte(tc.body)))
			if err := spec.Validate(vreq, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
				t.Errorf("%s %s does not match the specification: %v", tc.method, tc.target, err)
			}
		})
	}
	t.Run("task cancel", func(t *testing.T) {
		// Search tasks need search load: the spike of search-spike.
		busy, err := sim.New(simtest.LoadShared(t, "search-spike"), sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range 25 {
			busy.Step()
		}
		h := busy.REST.Handler()
		req := httptest.NewRequestWithContext(context.Background(), "GET", "/_tasks?detailed=true", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if err := spec.Validate(httptest.NewRequestWithContext(context.Background(), "GET", "/_tasks?detailed=true", nil), rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Errorf("busy tasks list does not match the specification: %v", err)
		}
		id := firstTaskID(rec.Body.String())
		if id == "" {
			t.Fatalf("no running task to cancel: %s", rec.Body.String())
		}
		target := "/_tasks/" + id + "/_cancel"
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), "POST", target, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("status: got %d: %s", rec.Code, rec.Body.String())
		}
		if err := spec.Validate(httptest.NewRequestWithContext(context.Background(), "POST", target, nil), rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Errorf("cancel does not match the specification: %v", err)
		}
	})
}

// firstTaskID picks the first "node:number" task id out of a _tasks response.
func firstTaskID(body string) string {
	var v struct {
		Nodes map[string]struct {
			Tasks map[string]json.RawMessage `json:"tasks"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return ""
	}
	for _, n := range v.Nodes {
		for id := range n.Tasks {
			return id
		}
	}
	return ""
}
