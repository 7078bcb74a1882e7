package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSandboxValidate(t *testing.T) {
	rfc := filepath.Join("..", "..", "shared", "sandbox", "testdata", "rfc-example.json")
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "the RFC's example document", args: []string{"-f", rfc},
			wantOut: []string{"2 sandboxes valid", "warning: line 13: trailing comma", "sandboxes[analysts].attributes.role", "workload management"}},
		{name: "jvm over 100 %", args: []string{"-f", writeFile(t, "over.json",
			`[{"name":"a","attributes":{"custom_id":"a"},"resources":{"jvm":{"allocation":0.6}},"enforcement":"soft"},
			  {"name":"b","attributes":{"custom_id":"b"},"resources":{"jvm":{"allocation":"0.5"}},"enforcement":"hard"}]`)},
			wantErr: "1 violation(s)", wantOut: []string{"violation: jvm allocations of sandboxes a, b sum to 1.1, over 1.0 (100 %)"}},
		{name: "every violation at once", args: []string{"-f", writeFile(t, "bad.json",
			`{"sandboxes":[{"name":"genPop","attributes":{"custom_id":"a"},"resources":{"cpu":{"allocation":2,"threshold":0}},"enforcement":"strict"}]}`)},
			wantErr: "5 violation(s)", wantOut: []string{"genPop is the system catch-all", "allocation = 2", "threshold = 0", `"strict"`, "sum to 2, over 1.0"}},
		{name: "from a configuration's sandbox.definitions", args: []string{"--config", writeFile(t, "cfg.json",
			`{"sandbox":{"definitions":[{"name":"a","attributes":{"custom_id":"a"},"resources":{"cpu":{"allocation":0.3}},"enforcement":"hard"}]}}`)},
			wantOut: []string{"(sandbox.definitions): 1 sandboxes valid"}},
		{name: "no source", args: nil, wantErr: "give -f FILE or --config FILE"},
		{name: "missing file", args: []string{"-f", "nope.json"}, wantErr: "nope.json"},
		{name: "not JSON", args: []string{"-f", writeFile(t, "x.json", `sandboxes: []`)}, wantErr: "1 violation(s)", wantOut: []string{"parse sandbox definitions"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := execute(t, append([]string{"sandbox", "validate"}, tc.args...)...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want none\n%s", err, out)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want one containing %q\n%s", err, tc.wantErr, out)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// status against the simulator served over HTTP, as against any OpenSearch cluster.
func TestSandboxStatusAgainstServedSimulator(t *testing.T) {
	sc, err := sim.LoadScenario(scenarioPath("search-spike"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		s.Step()
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	defs := writeFile(t, "defs.json", `[{"name":"batch","attributes":{"custom_id":"batch-*"},"resources":{"cpu":{"allocation":0.3}},"enforcement":"monitor"}]`)
	out, _, err := execute(t, "sandbox", "status", "--url", srv.URL, "-f", defs, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Nodes  map[string]string `json:"nodes"`
		Report struct {
			Findings []struct {
				Node, Sandbox, Reason string
				NodeUsage             float64 `json:"node_usage"`
			} `json:"findings"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(st.Nodes) != len(sc.Nodes) {
		t.Errorf("nodes got %d, want the scenario's %d", len(st.Nodes), len(sc.Nodes))
	}
	// batch and genPop on cpu, per node.
	if len(st.Report.Findings) != 2*len(sc.Nodes) {
		t.Errorf("findings got %d, want 2 per node (%d nodes)", len(st.Report.Findings), len(sc.Nodes))
	}
	for _, f := range st.Report.Findings {
		if f.Reason == "" || st.Nodes[f.Node] == "" {
			t.Errorf("finding without a reason or on an unknown node: %+v", f)
		}
	}
	table, _, err := execute(t, "sandbox", "status", "--url", srv.URL, "-f", defs)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"search tasks", "NODE USAGE", "monitor", "Would cancel", "nothing"} {
		if !strings.Contains(strings.ToUpper(table), strings.ToUpper(w)) {
			t.Errorf("status output lacks %q:\n%s", w, table)
		}
	}
}

// TestSandboxNoisyTenantScenario is the sandbox function's bar on the simulator: with the sandboxes of
// scenarios/configs/sandbox-noisy-tenant.json and dry-run off, the hard-limited tenant has
// searches cancelled, the tenant within its share and the monitored one none, and the
// well-behaved tenant's p99 search latency is at least 2× better than with OpenSearch alone.
func TestSandboxNoisyTenantScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole scenario three times")
	}
	cfg := filepath.Join("..", "..", "scenarios", "configs", "sandbox-noisy-tenant.json")
	type result struct {
		TasksCancelled int                `json:"tasks_cancelled"`
		ByTenant       map[string]int     `json:"tasks_cancelled_by_tenant"`
		P99            map[string]float64 `json:"tenant_p99_search_latency_ms"`
	}
	run := func(args ...string) result {
		t.Helper()
		out, _, err := execute(t, append([]string{"simulate", "--scenario", scenarioPath("sandbox-noisy-tenant"), "--config", cfg, "--json", "--quiet"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return r
	}
	on := run("--dry-run=false")
	none := run("--balancer", "none")
	dry := run()
	t.Logf("dry-run off: %+v; --balancer none: %+v; dry-run: %+v", on, none, dry)
	if on.TasksCancelled == 0 || on.ByTenant["reports"] == 0 {
		t.Errorf("dry-run off: the hard tenant reports had nothing cancelled: %+v", on)
	}
	if on.ByTenant["storefront"] != 0 || on.ByTenant["analytics"] != 0 {
		t.Errorf("dry-run off: cancelled searches of storefront (within its share) or analytics (monitor): %v", on.ByTenant)
	}
	if dry.TasksCancelled != 0 {
		t.Errorf("dry-run: %d tasks cancelled, want none", dry.TasksCancelled)
	}
	if s, n := on.P99["storefront"], none.P99["storefront"]; s <= 0 || 2*s > n {
		t.Errorf("storefront p99: %.0f ms with shardwise, %.0f ms with OpenSearch alone; want at least 2× better", s, n)
	}
}
