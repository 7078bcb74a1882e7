package deploy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// devToolsRequest is one request of FGACRoles' output.
type devToolsRequest struct {
	method, path string
	body         map[string]any
}

// parseDevTools reads Dev Tools console text: comment lines, then "METHOD path" lines each
// followed by one JSON body.
func parseDevTools(t *testing.T, text string) []devToolsRequest {
	t.Helper()
	var out []devToolsRequest
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		method, path, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("line %d: %q is not METHOD path", i+1, line)
		}
		var body strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			body.WriteString(lines[i])
		}
		var b map[string]any
		if err := json.Unmarshal([]byte(body.String()), &b); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v\n%s", method, path, err, body.String())
		}
		out = append(out, devToolsRequest{method, path, b})
	}
	return out
}

// TestFGACRoles checks each function's security plugin role against the actions OpenSearch 2.x
// runs for the requests it sends (the transport action names of the REST handlers).
func TestFGACRoles(t *testing.T) {
	text, err := FGACRoles()
	if err != nil {
		t.Fatal(err)
	}
	reqs := parseDevTools(t, text)
	roles := map[string]map[string]any{}
	mappings := map[string]map[string]any{}
	for _, r := range reqs {
		if r.method != "PUT" {
			t.Errorf("%s %s: want PUT", r.method, r.path)
		}
		switch {
		case strings.HasPrefix(r.path, "_plugins/_security/api/roles/"):
			roles[strings.TrimPrefix(r.path, "_plugins/_security/api/roles/")] = r.body
		case strings.HasPrefix(r.path, "_plugins/_security/api/rolesmapping/"):
			mappings[strings.TrimPrefix(r.path, "_plugins/_security/api/rolesmapping/")] = r.body
		default:
			t.Errorf("unexpected request %s %s", r.method, r.path)
		}
	}
	read := []any{"cluster:monitor/health", "cluster:monitor/nodes/info", "cluster:monitor/nodes/stats", "cluster:monitor/state"}
	indexPerms := func(actions ...any) []any {
		return []any{map[string]any{"index_patterns": []any{"*"}, "allowed_actions": actions}}
	}
	tests := []struct {
		role    string
		cluster []any
		index   []any
		mapping string
	}{
		{"shardwise_ingest", read,
			indexPerms("indices:admin/settings/update", "indices:monitor/settings/get", "indices:monitor/stats"), "<IngestFunctionRoleArn>"},
		// A fresh sample when an alarm fires; no settings.
		{"shardwise_detect", read, indexPerms("indices:monitor/stats"), "<DetectFunctionRoleArn>"},
		// Its fresh read before acting takes no shard stats (collect's ReadTopology).
		{"shardwise_move", append([]any{"cluster:admin/reroute"}, read...),
			indexPerms("indices:admin/settings/update", "indices:monitor/settings/get"), "<MoveFunctionRoleArn>"},
		{"shardwise_replicas", []any{"cluster:monitor/health"}, indexPerms("indices:admin/settings/update"), "<ReplicasFunctionRoleArn>"},
		// Health, the nodes' own load, tasks and their cancellation; the version, the wlm.*
		// settings and workload management's groups and rules, by both names of its API.
		{"shardwise_sandbox", []any{
			"cluster:admin/opensearch/wlm/query_group/_create", "cluster:admin/opensearch/wlm/query_group/_delete",
			"cluster:admin/opensearch/wlm/query_group/_get", "cluster:admin/opensearch/wlm/query_group/_update",
			"cluster:admin/opensearch/wlm/rule/_create", "cluster:admin/opensearch/wlm/rule/_delete",
			"cluster:admin/opensearch/wlm/rule/_get", "cluster:admin/opensearch/wlm/rule/_update",
			"cluster:admin/opensearch/wlm/workload_group/_create", "cluster:admin/opensearch/wlm/workload_group/_delete",
			"cluster:admin/opensearch/wlm/workload_group/_get", "cluster:admin/opensearch/wlm/workload_group/_update",
			"cluster:admin/settings/update", "cluster:admin/tasks/cancel", "cluster:monitor/health", "cluster:monitor/main",
			"cluster:monitor/nodes/info", "cluster:monitor/nodes/stats", "cluster:monitor/state", "cluster:monitor/tasks/lists",
		}, []any{}, "<SandboxFunctionRoleArn>"},
	}
	if len(roles) != len(tests) || len(mappings) != len(tests) {
		t.Errorf("got roles %v and mappings %v, want %d of each", keys(roles), keys(mappings), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			want := map[string]any{"cluster_permissions": tc.cluster, "index_permissions": tc.index}
			if got := roles[tc.role]; !reflect.DeepEqual(got, want) {
				t.Errorf("role: got %#v, want %#v", got, want)
			}
			wantMapping := map[string]any{"backend_roles": []any{tc.mapping}}
			if got := mappings[tc.role]; !reflect.DeepEqual(got, wantMapping) {
				t.Errorf("mapping: got %#v, want %#v", got, wantMapping)
			}
		})
	}
	// Every placeholder names an output of the stack.
	doc := render(t, Options{})
	outputs := get(t, doc, "Outputs").(map[string]any)
	for _, m := range mappings {
		name := strings.Trim(m["backend_roles"].([]any)[0].(string), "<>")
		if _, ok := outputs[name]; !ok {
			t.Errorf("mapping names %s, which is not a stack output", name)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestESAction(t *testing.T) {
	for method, want := range map[string]string{"GET": "es:ESHttpGet", "PUT": "es:ESHttpPut", "POST": "es:ESHttpPost", "HEAD": "es:ESHttpHead", "DELETE": "es:ESHttpDelete"} {
		if got := esAction(method); got != want {
			t.Errorf("esAction(%s): got %s, want %s", method, got, want)
		}
	}
}
