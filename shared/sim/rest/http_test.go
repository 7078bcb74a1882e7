package rest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

func TestEndpoints(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	simtest.StepN(s, 2)
	idA := simtest.NodeID(t, s, "a")
	tests := []struct {
		name       string
		method     string
		target     string
		body       string
		wantStatus int
		check      func(t *testing.T, body string, doc map[string]any)
	}{
		{name: "info", method: "GET", target: "/", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "version", "distribution") != "opensearch" || simtest.Dig(d, "version", "number") != "2.19.3" || d["tagline"] == nil {
				t.Errorf("info: %v", d)
			}
		}},
		{name: "unknown route", method: "GET", target: "/_nope/x", wantStatus: 400, check: func(t *testing.T, _ string, d map[string]any) {
			if d["error"] != "no handler found for uri [/_nope/x] and method [GET]" {
				t.Errorf("error: %v", d["error"])
			}
		}},
		{name: "wrong method", method: "DELETE", target: "/_cluster/health", wantStatus: 405, check: func(t *testing.T, _ string, d map[string]any) {
			if !strings.Contains(d["error"].(string), "Incorrect HTTP method for uri [/_cluster/health] and method [DELETE], allowed: [GET, HEAD]") {
				t.Errorf("error: %v", d["error"])
			}
		}},
		{name: "unknown index in stats", method: "GET", target: "/nope/_stats", wantStatus: 404, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "error", "type") != "index_not_found_exception" || simtest.Dig(d, "error", "index") != "nope" || d["status"] != float64(404) {
				t.Errorf("error: %v", d)
			}
		}},
		{name: "unknown index in settings", method: "GET", target: "/nope/_settings", wantStatus: 404},
		{name: "wildcard matching nothing is empty, not an error", method: "GET", target: "/nope*/_settings", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			if strings.TrimSpace(body) != "{}" {
				t.Errorf("body: %s", body)
			}
		}},
		{name: "health by index level", method: "GET", target: "/_cluster/health/x?level=indices", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "indices", "x", "number_of_shards") != float64(2) || simtest.Dig(d, "indices", "y") != nil {
				t.Errorf("indices: %v", d["indices"])
			}
		}},
		{name: "health wait_for_no_relocating_shards with nothing relocating", method: "GET", target: "/_cluster/health?wait_for_no_relocating_shards=true", wantStatus: 200},
		{name: "state metric filter", method: "GET", target: "/_cluster/state/nodes,version", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if d["routing_table"] != nil || d["metadata"] != nil || simtest.Dig(d, "nodes", idA, "name") != "a" || d["version"] == nil || d["state_uuid"] == nil {
				t.Errorf("state: %v", d)
			}
		}},
		{name: "state unknown metric", method: "GET", target: "/_cluster/state/bogus", wantStatus: 400},
		{name: "state metadata of one index", method: "GET", target: "/_cluster/state/metadata/y", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "metadata", "indices", "y", "settings", "index", "number_of_replicas") != "0" || simtest.Dig(d, "metadata", "indices", "x") != nil {
				t.Errorf("metadata: %v", simtest.Dig(d, "metadata", "indices"))
			}
			if a, ok := simtest.Dig(d, "metadata", "indices", "y", "aliases").([]any); !ok || len(a) != 0 {
				t.Errorf("aliases: %v", simtest.Dig(d, "metadata", "indices", "y", "aliases"))
			}
		}},
		{name: "cluster settings defaults nested", method: "GET", target: "/_cluster/settings?include_defaults=true", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "defaults", "cluster", "routing", "allocation", "disk", "watermark", "high") != "90%" {
				t.Errorf("defaults: %v", d["defaults"])
			}
			if simtest.Dig(d, "defaults", "cluster", "routing", "rebalance", "enable") != "none" {
				t.Errorf("builtin_balancer false should show as rebalance.enable none: %v", simtest.Dig(d, "defaults", "cluster", "routing", "rebalance"))
			}
		}},
		{name: "unknown cluster setting", method: "PUT", target: "/_cluster/settings", body: `{"persistent":{"cluster.routing.bogus":"1"}}`, wantStatus: 400, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "error", "reason") != "persistent setting [cluster.routing.bogus], not recognized" {
				t.Errorf("reason: %v", simtest.Dig(d, "error", "reason"))
			}
		}},
		{name: "invalid cluster setting value", method: "PUT", target: "/_cluster/settings", body: `{"transient":{"cluster.routing.rebalance.enable":"sometimes"}}`, wantStatus: 400},
		{name: "index settings flat", method: "GET", target: "/x/_settings?flat_settings=true", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "x", "settings", "index.number_of_shards") != "2" || simtest.Dig(d, "x", "settings", "index.version.created") != "136408127" {
				t.Errorf("settings: %v", simtest.Dig(d, "x", "settings"))
			}
		}},
		{name: "index settings by name", method: "GET", target: "/x/_settings/index.number_of_*", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			set, _ := simtest.Dig(d, "x", "settings", "index").(map[string]any)
			if len(set) != 2 {
				t.Errorf("settings: %v", set)
			}
		}},
		{name: "final index setting", method: "PUT", target: "/x/_settings", body: `{"index":{"number_of_shards":4}}`, wantStatus: 400, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "error", "reason") != "final index setting [index.number_of_shards], not updateable" {
				t.Errorf("reason: %v", simtest.Dig(d, "error", "reason"))
			}
		}},
		{name: "unknown index setting", method: "PUT", target: "/x/_settings", body: `{"index.bogus":1}`, wantStatus: 400},
		{name: "negative replicas", method: "PUT", target: "/x/_settings", body: `{"number_of_replicas":-1}`, wantStatus: 400},
		{name: "get index", method: "GET", target: "/x", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "x", "settings", "index", "uuid") == nil || simtest.Dig(d, "x", "mappings") == nil {
				t.Errorf("get index: %v", d)
			}
		}},
		{name: "stats default level", method: "GET", target: "/_stats", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "_shards", "total") != float64(5) || simtest.Dig(d, "indices", "x", "uuid") == nil || simtest.Dig(d, "indices", "x", "shards") != nil {
				t.Errorf("stats: %v", d)
			}
			if simtest.Dig(d, "_all", "total", "indexing", "index_total") == float64(0) {
				t.Errorf("no indexing counted: %v", simtest.Dig(d, "_all"))
			}
		}},
		{name: "stats metric filter", method: "GET", target: "/x/_stats/docs", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			total, _ := simtest.Dig(d, "indices", "x", "total").(map[string]any)
			if len(total) != 1 || total["docs"] == nil {
				t.Errorf("total: %v", total)
			}
		}},
		{name: "stats unknown metric", method: "GET", target: "/_stats/bogus", wantStatus: 400},
		{name: "stats level shards", method: "GET", target: "/x/_stats?level=shards", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			e := simtest.Dig(d, "indices", "x", "shards", "0", 0)
			if simtest.Dig(e, "routing", "state") != "STARTED" || simtest.Dig(e, "routing", "node") != idA || simtest.Dig(e, "store", "size_in_bytes") != float64(1048576) {
				t.Errorf("entry: %v", e)
			}
		}},
		{name: "stats with filter_path", method: "GET", target: "/_stats?level=shards&filter_path=indices.*.shards.*.routing.node", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			if strings.Contains(body, "indexing") || !strings.Contains(body, `{"routing":{"node":"`+idA+`"}}`) {
				t.Errorf("body: %s", body)
			}
		}},
		{name: "nodes stats one metric", method: "GET", target: "/_nodes/stats/thread_pool", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			n := simtest.Dig(d, "nodes", idA).(map[string]any)
			if n["indices"] != nil || n["jvm"] != nil || simtest.Dig(n, "thread_pool", "write", "threads") != float64(8) {
				t.Errorf("node: %v", n)
			}
			if simtest.Dig(n, "thread_pool", "search", "total_wait_time_in_nanos") == nil || simtest.Dig(n, "thread_pool", "write", "total_wait_time_in_nanos") != nil {
				t.Errorf("only search reports total_wait_time: %v", n["thread_pool"])
			}
		}},
		{name: "nodes stats by node and index metric", method: "GET", target: "/_nodes/a/stats/indices/indexing?level=shards", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "_nodes", "total") != float64(1) {
				t.Errorf("_nodes: %v", d["_nodes"])
			}
			idx := simtest.Dig(d, "nodes", idA, "indices").(map[string]any)
			if idx["docs"] != nil || idx["indexing"] == nil || simtest.Dig(idx, "shards", "x", 0, "0", "indexing") == nil {
				t.Errorf("indices: %v", idx)
			}
		}},
		{name: "nodes stats local as the opensearch-go health check asks", method: "GET", target: "/_nodes/_local/stats/jvm,breaker,thread_pool", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if simtest.Dig(d, "nodes", idA, "breakers", "parent", "limit_size_in_bytes") == nil || simtest.Dig(d, "nodes", idA, "jvm", "mem", "heap_used_percent") == nil {
				t.Errorf("node: %v", simtest.Dig(d, "nodes", idA))
			}
		}},
		{name: "nodes stats unknown metric", method: "GET", target: "/_nodes/stats/bogus", wantStatus: 400},
		{name: "nodes info by metric", method: "GET", target: "/_nodes/thread_pool", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			w := simtest.Dig(d, "nodes", idA, "thread_pool", "write")
			if simtest.Dig(w, "type") != "fixed" || simtest.Dig(w, "size") != float64(8) || simtest.Dig(w, "queue_size") != float64(10000) || simtest.Dig(d, "nodes", idA, "jvm") != nil {
				t.Errorf("node: %v", simtest.Dig(d, "nodes", idA))
			}
		}},
		{name: "nodes info by node", method: "GET", target: "/_nodes/b", wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			nodes := d["nodes"].(map[string]any)
			if len(nodes) != 1 || simtest.Dig(d, "nodes", simtest.NodeID(t, s, "b"), "jvm", "mem", "heap_max_in_bytes") != float64(model.DefaultHeapBytes) {
				t.Errorf("nodes: %v", nodes)
			}
		}},
		{name: "cat shards text", method: "GET", target: "/_cat/shards/y?v&h=index,shard,prirep,state,node", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			want := "index shard prirep   state node\ny         0      p STARTED a\n"
			if body != want {
				t.Errorf("body:\n%q\nwant\n%q", body, want)
			}
		}},
		{name: "cat shards json with aliases and bytes", method: "GET", target: "/_cat/shards/y?format=json&h=i,sto&bytes=b", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			if strings.TrimSpace(body) != `[{"i":"y","sto":"1048576"}]` {
				t.Errorf("body: %s", body)
			}
		}},
		{name: "cat indices sorted", method: "GET", target: "/_cat/indices?h=index,pri&s=pri:desc", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			if body != "x 2\ny 1\n" {
				t.Errorf("body: %q", body)
			}
		}},
		{name: "cat nodes", method: "GET", target: "/_cat/nodes?h=name,node.role,cluster_manager&s=name", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			if body != "a di *\nb di -\nc di -\nd di -\n" {
				t.Errorf("body: %q", body)
			}
		}},
		{name: "allocation explain with nothing unassigned", method: "GET", target: "/_cluster/allocation/explain", wantStatus: 400},
		{name: "allocation explain of a started copy", method: "POST", target: "/_cluster/allocation/explain", body: `{"index":"x","shard":0,"primary":true}`, wantStatus: 200, check: func(t *testing.T, _ string, d map[string]any) {
			if d["current_state"] != "started" || simtest.Dig(d, "current_node", "name") != "a" || d["can_remain_on_current_node"] != "yes" {
				t.Errorf("explain: %v", d)
			}
			if decisions, _ := d["node_allocation_decisions"].([]any); len(decisions) != 3 {
				t.Errorf("node decisions: %v", d["node_allocation_decisions"])
			}
		}},
		{name: "pretty output", method: "GET", target: "/_cluster/health?pretty", wantStatus: 200, check: func(t *testing.T, body string, _ map[string]any) {
			if !strings.Contains(body, "\n  \"cluster_name\"") {
				t.Errorf("not indented: %s", body)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := simtest.Call(t, s, tc.method, tc.target, tc.body)
			if code != tc.wantStatus {
				t.Fatalf("status: got %d, want %d\n%s", code, tc.wantStatus, body)
			}
			var doc map[string]any
			if strings.HasPrefix(strings.TrimSpace(body), "{") {
				if err := json.Unmarshal([]byte(body), &doc); err != nil {
					t.Fatalf("body is not JSON: %v\n%s", err, body)
				}
			}
			if tc.check != nil {
				tc.check(t, body, doc)
			}
		})
	}
}

func TestHealthWaitTimesOut(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
	code, body := simtest.CallJSON(t, s, "GET", "/_cluster/health?wait_for_no_relocating_shards=true&timeout=1s", "")
	if code != 408 || body["timed_out"] != true || body["relocating_shards"] != float64(1) {
		t.Errorf("got %d %v, want 408 timed out with 1 relocating shard", code, body)
	}
	if code, _ := simtest.Call(t, s, "GET", "/_cluster/health?wait_for_status=yellow", ""); code != 200 {
		t.Errorf("wait_for_status=yellow on a green cluster: got %d, want 200", code)
	}
}

func TestTasks(t *testing.T) {
	doc := `{"name": "tasks", "seed": 3, "tick_seconds": 30, "duration_seconds": 300,
	  "nodes": [{"name": "a"}],
	  "indices": [{"name": "hot", "primaries": 1, "replicas": 0, "shard_bytes": 1,
	    "search_load": {"kind": "constant", "value": 6}},
	    {"name": "cold", "primaries": 1, "replicas": 0, "shard_bytes": 1,
	    "search_load": {"kind": "constant", "value": 2}}]}`
	s := simtest.MustSim(t, doc)
	s.Step()
	idA := simtest.NodeID(t, s, "a")
	_, list := simtest.CallJSON(t, s, "GET", "/_tasks?actions=*search*&detailed&group_by=none", "")
	tasks, _ := list["tasks"].([]any)
	// 8 busy search threads: 8 shard query tasks, each under a coordinating search task.
	if len(tasks) != 16 {
		t.Fatalf("tasks: got %d, want 16", len(tasks))
	}
	hot := 0
	for _, tk := range tasks {
		if simtest.Dig(tk, "action") == "indices:data/read/search[phase/query]" && strings.Contains(simtest.Dig(tk, "description").(string), "[hot]") {
			hot++
		}
		if simtest.Dig(tk, "resource_stats", "thread_info", "active_threads") == nil || simtest.Dig(tk, "headers") == nil {
			t.Errorf("task lacks resource_stats or headers: %v", tk)
		}
	}
	if hot != 6 {
		t.Errorf("query tasks on hot: got %d, want 6 (search load 6 of 8)", hot)
	}
	_, byParent := simtest.CallJSON(t, s, "GET", "/_tasks?group_by=parents", "")
	parents, _ := byParent["tasks"].(map[string]any)
	if len(parents) != 8 {
		t.Errorf("parents: got %d, want 8", len(parents))
	}
	var anyID string
	for id, p := range parents {
		if children, _ := simtest.Dig(p, "children").([]any); len(children) != 1 {
			t.Errorf("parent %s children: %v", id, simtest.Dig(p, "children"))
		}
		anyID = id
	}
	code, cancelled := simtest.CallJSON(t, s, "POST", "/_tasks/"+anyID+"/_cancel", "")
	if code != 200 || simtest.Dig(cancelled, "nodes", idA, "tasks", anyID, "cancelled") != true {
		t.Errorf("cancel: got %d %v", code, cancelled)
	}
	_, one := simtest.CallJSON(t, s, "GET", "/_tasks/"+anyID, "")
	if simtest.Dig(one, "task", "cancelled") != true {
		t.Errorf("task after cancel: %v", one)
	}
	if code, _ := simtest.Call(t, s, "POST", "/_tasks/"+idA+":1/_cancel", ""); code != 404 {
		t.Errorf("cancel of an unknown task: got %d, want 404", code)
	}
	code, all := simtest.CallJSON(t, s, "POST", "/_tasks/_cancel?actions=indices:data/read/search[phase/query]", "")
	got, _ := simtest.Dig(all, "nodes", idA, "tasks").(map[string]any)
	if code != 200 || len(got) != 8 {
		t.Errorf("cancel by action: got %d with %d tasks, want 8", code, len(got))
	}
	if r := s.Result(); r.TasksCancelled != 9 {
		t.Errorf("tasks_cancelled: got %d, want 9", r.TasksCancelled)
	}
}

// TestTasksCPUAddsUpToTheNode: however deep a node's search queue, its search tasks' CPU shares
// (cpu_time over running time, over the node's processors) add up to at most the whole node, since
// only the tasks holding a thread run and the coordinating tasks mostly wait.
func TestTasksCPUAddsUpToTheNode(t *testing.T) {
	doc := `{"name": "deep-queue", "seed": 3, "tick_seconds": 30, "duration_seconds": 300,
	  "nodes": [{"name": "a"}],
	  "indices": [{"name": "hot", "primaries": 1, "replicas": 0, "shard_bytes": 1,
	    "search_load": {"kind": "constant", "value": 40}}]}`
	s := simtest.MustSim(t, doc)
	simtest.StepN(s, 3)
	_, nodes := simtest.CallJSON(t, s, "GET", "/_nodes/os", "")
	var processors float64
	for _, n := range simtest.Dig(nodes, "nodes").(map[string]any) {
		processors, _ = simtest.Dig(n, "os", "allocated_processors").(float64)
	}
	if processors <= 0 {
		t.Fatalf("no allocated_processors in %v", nodes)
	}
	_, list := simtest.CallJSON(t, s, "GET", "/_tasks?actions=*search*&detailed&group_by=none", "")
	tasks, _ := list["tasks"].([]any)
	if len(tasks) < 100 {
		t.Fatalf("tasks: got %d, want a deep queue's worth (the load is 40 threads' worth)", len(tasks))
	}
	var cpu float64
	for _, tk := range tasks {
		used, _ := simtest.Dig(tk, "resource_stats", "total", "cpu_time_in_nanos").(float64)
		running, _ := simtest.Dig(tk, "running_time_in_nanos").(float64)
		if running > 0 {
			cpu += used / running / processors
		}
	}
	if cpu <= 0.3 || cpu > 1 {
		t.Errorf("the tasks' CPU shares add up to %.2f of the node, want a busy node's, at most 1", cpu)
	}
}
