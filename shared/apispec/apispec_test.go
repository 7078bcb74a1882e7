package apispec

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-openapi/jsonpointer"
)

// jsonHeader is what OpenSearch 2.19 sends with every JSON body.
var jsonHeader = http.Header{"Content-Type": {"application/json; charset=UTF-8"}}

func newRequest(t testing.TB, method, target, body string) *http.Request {
	return httptest.NewRequestWithContext(t.Context(), method, target, strings.NewReader(body))
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return body
}

// TestValidateAcceptsOpenSearchResponses feeds hand-written OpenSearch 2.19 bodies (shaped
// after the OpenSearch source and docs, not after the specification) through Validate. Each
// case also pins the operation the request routes to, so a routing change is caught.
func TestValidateAcceptsOpenSearchResponses(t *testing.T) {
	spec := Shared(t)
	tests := []struct {
		name    string
		method  string
		target  string
		reqBody string
		status  int
		file    string
		wantOp  string
	}{
		{name: "root info", method: http.MethodGet, target: "/", status: 200, file: "info.json", wantOp: "info.0"},
		{name: "cluster health", method: http.MethodGet, target: "/_cluster/health", status: 200,
			file: "cluster_health.json", wantOp: "cluster.health.0"},
		{name: "cluster state metadata and routing table", method: http.MethodGet,
			target: "/_cluster/state/metadata,routing_table", status: 200,
			file: "cluster_state_metadata_routing.json", wantOp: "cluster.state.1"},
		{name: "cluster settings with defaults", method: http.MethodGet,
			target: "/_cluster/settings?include_defaults=true&flat_settings=true", status: 200,
			file: "cluster_settings.json", wantOp: "cluster.get_settings.0"},
		{name: "cat shards json", method: http.MethodGet, target: "/_cat/shards?format=json&bytes=b", status: 200,
			file: "cat_shards.json", wantOp: "cat.shards.0"},
		{name: "cat nodes json", method: http.MethodGet, target: "/_cat/nodes?format=json", status: 200,
			file: "cat_nodes.json", wantOp: "cat.nodes.0"},
		{name: "cat indices json", method: http.MethodGet, target: "/_cat/indices?format=json&bytes=b", status: 200,
			file: "cat_indices.json", wantOp: "cat.indices.0"},
		{name: "nodes info", method: http.MethodGet, target: "/_nodes", status: 200,
			file: "nodes_info.json", wantOp: "nodes.info.0"},
		{name: "nodes stats", method: http.MethodGet, target: "/_nodes/stats", status: 200,
			file: "nodes_stats.json", wantOp: "nodes.stats.0"},
		{name: "all indices stats per shard", method: http.MethodGet, target: "/_stats?level=shards", status: 200,
			file: "stats_level_shards.json", wantOp: "indices.stats.0"},
		{name: "one index stats", method: http.MethodGet, target: "/logs-a/_stats", status: 200,
			file: "index_stats.json", wantOp: "indices.stats.2"},
		{name: "get index settings", method: http.MethodGet, target: "/logs-a/_settings", status: 200,
			file: "index_settings.json", wantOp: "indices.get_settings.2"},
		{name: "put index settings", method: http.MethodPut, target: "/logs-a/_settings",
			reqBody: `{"index":{"number_of_replicas":2}}`, status: 200,
			file: "acknowledged.json", wantOp: "indices.put_settings.1"},
		// With explain=true the spec rejects OpenSearch's move explanation: see
		// TestSpecStricterThanOpenSearch. Without it OpenSearch omits "explanations".
		{name: "reroute dry run", method: http.MethodPost,
			target: "/_cluster/reroute?dry_run=true", status: 200,
			reqBody: `{"commands":[{"move":{"index":"logs-a","shard":0,"from_node":"node-0","to_node":"node-2"}}]}`,
			file:    "reroute_dry_run.json", wantOp: "cluster.reroute.0"},
		{name: "allocation explain unassigned replica", method: http.MethodPost,
			target: "/_cluster/allocation/explain", status: 200,
			reqBody: `{"index":"logs-a","shard":1,"primary":false}`,
			file:    "allocation_explain_unassigned.json", wantOp: "cluster.allocation_explain.1"},
		{name: "tasks list detailed", method: http.MethodGet,
			target: "/_tasks?detailed=true&actions=*search*", status: 200,
			file: "tasks_list.json", wantOp: "tasks.list.0"},
		{name: "task cancel", method: http.MethodPost,
			target: "/_tasks/yCFh3t1PQBqzqCZg2uhN3A:4821/_cancel", status: 200,
			file: "tasks_cancel.json", wantOp: "tasks.cancel.1"},
		{name: "reroute refused 400 illegal_argument_exception", method: http.MethodPost,
			target: "/_cluster/reroute?dry_run=true", status: 400,
			reqBody: `{"commands":[{"move":{"index":"logs-a","shard":0,"from_node":"node-0","to_node":"node-1"}}]}`,
			file:    "error_reroute_illegal_argument.json", wantOp: "cluster.reroute.0"},
		{name: "stats of a missing index 404 index_not_found_exception", method: http.MethodGet,
			target: "/logs-missing/_stats", status: 404,
			file: "error_index_not_found.json", wantOp: "indices.stats.2"},
		{name: "settings of a missing index 404 index_not_found_exception", method: http.MethodGet,
			target: "/logs-missing/_settings", status: 404,
			file: "error_index_not_found.json", wantOp: "indices.get_settings.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // Spec is shared; run under -race this checks it is safe for concurrent use.
			req := newRequest(t, tt.method, tt.target, tt.reqBody)
			op, err := spec.Find(req)
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			t.Logf("%s %s -> %s (%s)", tt.method, tt.target, op.ID, op.PathTemplate)
			if op.ID != tt.wantOp {
				t.Errorf("operation: got %s, want %s", op.ID, tt.wantOp)
			}
			if err := spec.Validate(req, tt.status, jsonHeader, readTestdata(t, tt.file)); err != nil {
				t.Errorf("Validate: got %v, want nil", err)
			}
		})
	}
}

// TestValidateRejects proves the validator is not a pass-through: each case breaks a valid
// body (or the exchange around it) in one way and names where the violation must be reported.
func TestValidateRejects(t *testing.T) {
	spec := Shared(t)
	textHeader := http.Header{"Content-Type": {"text/plain; charset=UTF-8"}}
	tests := []struct {
		name        string
		method      string
		target      string
		status      int
		header      http.Header
		file        string                      // valid body to start from
		mutate      func(t *testing.T, doc any) // breaks the decoded body
		rawBody     *string                     // used instead of file when set
		wantPointer string                      // JSON pointer the violation must name
		wantReason  string                      // substring of that violation's reason
	}{
		{name: "health number_of_nodes is a string", method: http.MethodGet, target: "/_cluster/health",
			status: 200, file: "cluster_health.json",
			mutate:      set("/number_of_nodes", "three"),
			wantPointer: "/number_of_nodes", wantReason: "want integer"},
		{name: "health without required status", method: http.MethodGet, target: "/_cluster/health",
			status: 200, file: "cluster_health.json",
			mutate:      remove("/status"),
			wantPointer: "", wantReason: "status"},
		{name: "health status is not a known color", method: http.MethodGet, target: "/_cluster/health",
			status: 200, file: "cluster_health.json",
			mutate:      set("/status", "purple"),
			wantPointer: "/status", wantReason: "green"},
		{name: "nodes stats write queue is a string", method: http.MethodGet, target: "/_nodes/stats",
			status: 200, file: "nodes_stats.json",
			mutate:      set("/nodes/yCFh3t1PQBqzqCZg2uhN3A/thread_pool/write/queue", "412"),
			wantPointer: "/nodes/yCFh3t1PQBqzqCZg2uhN3A/thread_pool/write/queue", wantReason: "want integer"},
		{name: "shard stats without index_time_in_millis", method: http.MethodGet, target: "/_stats?level=shards",
			status: 200, file: "stats_level_shards.json",
			mutate:      remove("/indices/logs-a/shards/0/0/indexing/index_time_in_millis"),
			wantPointer: "/indices/logs-a/shards/0/0/indexing", wantReason: "index_time_in_millis"},
		{name: "index stats docs count is negative text", method: http.MethodGet, target: "/logs-a/_stats",
			status: 200, file: "index_stats.json",
			mutate:      set("/indices/logs-a/primaries/docs/count", "-"),
			wantPointer: "/indices/logs-a/primaries/docs/count", wantReason: "want integer"},
		{name: "task id is a string", method: http.MethodGet, target: "/_tasks",
			status: 200, file: "tasks_list.json",
			mutate:      set("/nodes/yCFh3t1PQBqzqCZg2uhN3A/tasks/yCFh3t1PQBqzqCZg2uhN3A:4821/id", "4821"),
			wantPointer: "/nodes/yCFh3t1PQBqzqCZg2uhN3A/tasks/yCFh3t1PQBqzqCZg2uhN3A:4821/id", wantReason: "want integer"},
		{name: "put settings acknowledged is a string", method: http.MethodPut, target: "/logs-a/_settings",
			status: 200, file: "acknowledged.json",
			mutate:      set("/acknowledged", "true"),
			wantPointer: "/acknowledged", wantReason: "want boolean"},
		{name: "error body without status", method: http.MethodGet, target: "/logs-missing/_stats",
			status: 404, file: "error_index_not_found.json",
			mutate:      remove("/status"),
			wantPointer: "", wantReason: "status"},
		{name: "error cause without type", method: http.MethodPost, target: "/_cluster/reroute",
			status: 400, file: "error_reroute_illegal_argument.json",
			mutate:      remove("/error/type"),
			wantPointer: "/error", wantReason: "type"},
		{name: "health body is not JSON", method: http.MethodGet, target: "/_cluster/health",
			status: 200, rawBody: ptr(`{"cluster_name":`),
			wantPointer: "", wantReason: "cannot be decoded"},
		{name: "health body is empty", method: http.MethodGet, target: "/_cluster/health",
			status: 200, rawBody: ptr(""),
			wantPointer: "", wantReason: "missing"},
		{name: "health sent as text/plain", method: http.MethodGet, target: "/_cluster/health",
			status: 200, header: textHeader, file: "cluster_health.json",
			wantPointer: "", wantReason: "text/plain"},
		{name: "error sent as text/plain", method: http.MethodGet, target: "/logs-missing/_stats",
			status: 404, header: textHeader, file: "error_index_not_found.json",
			wantPointer: "", wantReason: "text/plain"},
		{name: "health with an undeclared 201", method: http.MethodGet, target: "/_cluster/health",
			status: 201, file: "cluster_health.json",
			wantPointer: "", wantReason: "201"},
		{name: "cluster state body is not JSON", method: http.MethodGet, target: "/_cluster/state",
			status: 200, rawBody: ptr(`cluster_name shardwise-it`),
			wantPointer: "", wantReason: "cannot be decoded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			switch {
			case tt.rawBody != nil:
				body = []byte(*tt.rawBody)
			case tt.mutate != nil:
				var doc any
				if err := json.Unmarshal(readTestdata(t, tt.file), &doc); err != nil {
					t.Fatalf("decode %s: %v", tt.file, err)
				}
				tt.mutate(t, doc)
				var err error
				if body, err = json.Marshal(doc); err != nil {
					t.Fatalf("encode %s: %v", tt.file, err)
				}
			default:
				body = readTestdata(t, tt.file)
			}
			header := tt.header
			if header == nil {
				header = jsonHeader
			}
			req := newRequest(t, tt.method, tt.target, "")
			err := spec.Validate(req, tt.status, header, body)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate: got %v, want a *ValidationError", err)
			}
			if !hasViolation(verr, tt.wantPointer, tt.wantReason) {
				t.Errorf("Validate: got %v\nwant a violation at %q mentioning %q", err, tt.wantPointer, tt.wantReason)
			}
			if tt.wantPointer != "" && !strings.Contains(err.Error(), tt.wantPointer+": ") {
				t.Errorf("error text: got %q, want it to name %s", err.Error(), tt.wantPointer)
			}
		})
	}
}

// TestSpecStricterThanOpenSearch records where the specification (commit fbe9edeb) rejects
// bodies OpenSearch 2.19 really sends. Each case must produce exactly the listed violations:
// a new one fails the test, and so does a fixed spec, so this list stays true.
func TestSpecStricterThanOpenSearch(t *testing.T) {
	spec := Shared(t)
	const node0 = "/nodes/yCFh3t1PQBqzqCZg2uhN3A"
	tests := []struct {
		name   string
		method string
		target string
		file   string
		mutate func(*testing.T, any)
		want   []string // JSON pointers of the expected violations, sorted
	}{
		// RestNodesAction prints null for a load average the OS does not report; macOS
		// reports only the 1-minute one. NodesRecord types load_5m/load_15m as plain string.
		{name: "cat nodes on macOS has no 5m and 15m load", method: http.MethodGet, target: "/_cat/nodes?format=json",
			file: "cat_nodes.json", mutate: both(set("/0/load_5m", nil), set("/0/load_15m", nil)),
			want: []string{"/0/load_15m", "/0/load_5m"}},
		// Settings render a list setting written as a YAML list as a JSON array; the spec's
		// NodeInfoDiscover.seed_hosts is type string.
		{name: "nodes info seed_hosts configured as a list", method: http.MethodGet, target: "/_nodes",
			file:   "nodes_info.json",
			mutate: set(node0+"/settings/discovery/seed_hosts", []any{"127.0.0.1:9300", "127.0.0.1:9301"}),
			want:   []string{node0 + "/settings/discovery/seed_hosts"}},
		// MoveAllocationCommand renders index, shard, from_node, to_node; RerouteParameters
		// requires allow_primary and node, which only the cancel command has.
		{name: "reroute explain of a move command", method: http.MethodPost,
			target: "/_cluster/reroute?dry_run=true&explain=true", file: "reroute_dry_run_explain.json",
			want: []string{"/explanations/0/parameters"}},
		// NodeAllocationResult omits "deciders" when no decider said anything but YES and
		// include_yes_decisions is false (the default); NodeAllocationExplanation requires it.
		{name: "allocation explain of a started shard", method: http.MethodGet,
			target: "/_cluster/allocation/explain", file: "allocation_explain_started.json",
			want: []string{"/node_allocation_decisions/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := readTestdata(t, tt.file)
			if tt.mutate != nil {
				var doc any
				if err := json.Unmarshal(body, &doc); err != nil {
					t.Fatalf("decode %s: %v", tt.file, err)
				}
				tt.mutate(t, doc)
				var err error
				if body, err = json.Marshal(doc); err != nil {
					t.Fatalf("encode %s: %v", tt.file, err)
				}
			}
			err := spec.Validate(newRequest(t, tt.method, tt.target, ""), 200, jsonHeader, body)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate: got %v, want the recorded spec disagreement", err)
			}
			var got []string
			for _, v := range verr.Violations {
				got = append(got, v.Pointer)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations: got %v, want %v\n%v", got, tt.want, err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestValidateUnknownOperation(t *testing.T) {
	spec := Shared(t)
	tests := []struct {
		name   string
		method string
		target string
	}{
		{name: "method the path does not have", method: http.MethodDelete, target: "/_cluster/health"},
		{name: "path in no namespace", method: http.MethodGet, target: "/_cluster/health/logs-a/extra/segments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(t, tt.method, tt.target, "")
			err := spec.Validate(req, 200, jsonHeader, []byte(`{}`))
			if !errors.Is(err, ErrUnknownOperation) {
				t.Errorf("Validate: got %v, want ErrUnknownOperation", err)
			}
			if _, err := spec.Find(req); !errors.Is(err, ErrUnknownOperation) {
				t.Errorf("Find: got %v, want ErrUnknownOperation", err)
			}
		})
	}
}

func TestLoadFails(t *testing.T) {
	empty := t.TempDir()
	badYAML := t.TempDir()
	if err := os.MkdirAll(filepath.Join(badYAML, "namespaces"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badYAML, "namespaces", "x.yaml"), []byte("paths: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dir     string
		wantErr string
	}{
		{name: "directory without namespaces", dir: empty, wantErr: "no namespaces/*.yaml"},
		{name: "directory that does not exist", dir: filepath.Join(empty, "absent"), wantErr: "no namespaces/*.yaml"},
		{name: "namespace that is not YAML", dir: badYAML, wantErr: "parse namespace x.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Load(tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Load: got (%v, %v), want an error containing %q", spec, err, tt.wantErr)
			}
		})
	}
}

func TestDefaultDirFindsVendoredSpec(t *testing.T) {
	dir := DefaultDir()
	want := filepath.Join("third_party", "opensearch-api-spec", "spec")
	if !filepath.IsAbs(dir) || !strings.HasSuffix(dir, want) {
		t.Fatalf("DefaultDir: got %q, want an absolute path ending in %s", dir, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "namespaces", "cluster.yaml")); err != nil {
		t.Errorf("DefaultDir %s: %v", dir, err)
	}
	if got := Shared(t).Dir(); got != dir {
		t.Errorf("Shared().Dir(): got %q, want %q", got, dir)
	}
}

func BenchmarkLoad(b *testing.B) {
	dir := DefaultDir()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateNodesStats measures the steady state: schemas compiled and cached.
func BenchmarkValidateNodesStats(b *testing.B) {
	spec := Shared(b)
	body := readTestdata(b, "nodes_stats.json")
	req := newRequest(b, http.MethodGet, "/_nodes/stats", "")
	for b.Loop() {
		if err := spec.Validate(req, 200, jsonHeader, body); err != nil {
			b.Fatal(err)
		}
	}
}

func hasViolation(err *ValidationError, pointer, reason string) bool {
	for _, v := range err.Violations {
		if v.Pointer == pointer && strings.Contains(v.Reason, reason) {
			return true
		}
	}
	return false
}

func set(pointer string, value any) func(*testing.T, any) {
	return func(t *testing.T, doc any) {
		t.Helper()
		p, err := jsonpointer.New(pointer)
		if err != nil {
			t.Fatalf("pointer %s: %v", pointer, err)
		}
		if _, err := p.Set(doc, value); err != nil {
			t.Fatalf("set %s: %v", pointer, err)
		}
	}
}

func remove(pointer string) func(*testing.T, any) {
	return func(t *testing.T, doc any) {
		t.Helper()
		cut := strings.LastIndex(pointer, "/")
		parent, err := jsonpointer.New(pointer[:cut])
		if err != nil {
			t.Fatalf("pointer %s: %v", pointer, err)
		}
		obj, _, err := parent.Get(doc)
		if err != nil {
			t.Fatalf("get %s: %v", pointer[:cut], err)
		}
		m, ok := obj.(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object", pointer[:cut])
		}
		key := pointer[cut+1:]
		if _, ok := m[key]; !ok {
			t.Fatalf("%s: no such key", pointer)
		}
		delete(m, key)
	}
}

func both(fns ...func(*testing.T, any)) func(*testing.T, any) {
	return func(t *testing.T, doc any) {
		t.Helper()
		for _, fn := range fns {
			fn(t, doc)
		}
	}
}

func ptr(s string) *string { return &s }
