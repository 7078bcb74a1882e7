package engine_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
)

// wlmServer is the simulator behind HTTP, recording every request that is not a read.
type wlmServer struct {
	api    *collect.API
	mu     sync.Mutex
	writes []string
	// fail, when set, answers a write it returns true for with a 500 instead of serving it; n
	// counts the writes before it, this one included.
	fail func(write string, n int) bool
}

func newWLMServer(t *testing.T, version string, nodes int, plugins ...string) *wlmServer {
	t.Helper()
	var names []string
	for i := range nodes {
		names = append(names, fmt.Sprintf(`{"name":"n%d"}`, i))
	}
	p := `[]`
	if len(plugins) > 0 {
		p = `["` + strings.Join(plugins, `","`) + `"]`
	}
	sc, err := sim.ParseScenario(fmt.Appendf(nil, `{"name":"wlm","seed":9,"tick_seconds":30,"duration_seconds":600,
	  "cluster":{"builtin_balancer":false,"opensearch_version":%q,"plugins":%s},
	  "nodes":[%s],
	  "indices":[{"name":"logs","primaries":2,"replicas":1,"shard_bytes":1048576}]}`, version, p, strings.Join(names, ",")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Step()
	}
	w := &wlmServer{}
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.mu.Lock()
			write := r.Method + " " + r.URL.Path
			w.writes = append(w.writes, write)
			fail := w.fail != nil && w.fail(write, len(w.writes))
			w.mu.Unlock()
			if fail {
				rw.Header().Set("Content-Type", "application/json")
				rw.WriteHeader(http.StatusInternalServerError)
				_, _ = rw.Write([]byte(`{"error":{"root_cause":[{"type":"exception","reason":"injected"}],"type":"exception","reason":"injected"},"status":500}`))
				return
			}
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{srv.URL}, Auth: opensearch.AuthNone, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.api = collect.New(client, nil)
	return w
}

func (w *wlmServer) takeWrites() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.writes
	w.writes = nil
	return out
}

func al(v float64) *sandbox.Allocation { return &sandbox.Allocation{Allocation: sandbox.Fraction(v)} }

// wlmDefsV1 are the definitions of the round trip's first sync.
func wlmDefsV1() sandbox.Definitions {
	return sandbox.Definitions{Sandboxes: []sandbox.Sandbox{
		{Name: "analysts", Attributes: sandbox.Attributes{IndicesName: "logs*"}, Resources: sandbox.Allocations{JVM: al(0.3), CPU: al(0.2)}, Enforcement: sandbox.Soft},
		{Name: "tellers", Attributes: sandbox.Attributes{IndicesName: "tx-*"}, Resources: sandbox.Allocations{JVM: al(0.25)}, Enforcement: sandbox.Hard},
	}}
}

func live(t *testing.T, w *wlmServer, sup sandbox.WLMSupport) sandbox.WLMState {
	t.Helper()
	st, err := w.api.WLMState(t.Context(), sup)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func groupSummary(st sandbox.WLMState) []string {
	var out []string
	for _, g := range st.Groups {
		out = append(out, fmt.Sprintf("%s %s cpu=%v memory=%v", g.Name, g.ResiliencyMode, g.ResourceLimits["cpu"], g.ResourceLimits["memory"]))
	}
	slices.Sort(out)
	return out
}

func ruleSummary(st sandbox.WLMState) []string {
	names := map[string]string{}
	for _, g := range st.Groups {
		names[g.ID] = g.Name
	}
	var out []string
	for _, r := range st.Rules {
		out = append(out, fmt.Sprintf("%s %v → %s", r.Description, r.IndexPattern, names[r.Group]))
	}
	slices.Sort(out)
	return out
}

func hasDrift(res engine.WLMSyncResult, want sandbox.Drift) bool {
	return slices.Contains(res.Drift, want)
}

// TestSyncWLMRoundTrip syncs against the simulator for both API names: create, update after a
// definition change, delete after a removal, then nothing left to do.
func TestSyncWLMRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		version string
		api     sandbox.WLMAPI
		rules   bool
	}{{"2.19.0", sandbox.QueryGroupAPI, false}, {"3.1.0", sandbox.WorkloadGroupAPI, true}, {"3.8.0", sandbox.WorkloadGroupAPI, true}} {
		t.Run(tc.version, func(t *testing.T) {
			w := newWLMServer(t, tc.version, 2, sim.PluginWorkloadManagement)
			opts := engine.WLMOptions{DryRun: false, Safety: safety.DefaultConfig()}
			prefix := "wlm." + string(tc.api) + "."
			sync := func(defs sandbox.Definitions) engine.WLMSyncResult {
				t.Helper()
				res, err := engine.SyncWLM(t.Context(), w.api, w.api, defs, opts)
				if err != nil {
					t.Fatalf("sync: %v\n%s", err, strings.Join(res.Lines(), "\n"))
				}
				if res.Support.API != tc.api || res.Support.Rules != tc.rules {
					t.Fatalf("support %+v, want api %s rules %v", res.Support, tc.api, tc.rules)
				}
				for _, c := range res.Calls {
					if c.Outcome != engine.WLMDone {
						t.Errorf("call %s: %s %s", c.Call, c.Outcome, c.Error)
					}
				}
				if len(res.After) != 0 {
					t.Errorf("drift left: %v", res.After)
				}
				return res
			}

			// 1. Create.
			defs := wlmDefsV1()
			res := sync(defs)
			for _, d := range []sandbox.Drift{
				{Kind: "group", Name: "shardwise-analysts", Field: "group", Want: "present", Have: "absent"},
				{Kind: "setting", Name: prefix + "mode", Field: "value", Want: "enabled", Have: "monitor_only"},
			} {
				if !hasDrift(res, d) {
					t.Errorf("create: drift lacks %s: %v", d, res.Drift)
				}
			}
			st := live(t, w, res.Support)
			if got, want := groupSummary(st), []string{"shardwise-analysts soft cpu=0.2 memory=0.3", "shardwise-tellers enforced cpu=0 memory=0.25"}; !slices.Equal(got, want) {
				t.Errorf("after create: %v, want %v", got, want)
			}
			if st.Settings[prefix+"mode"] != "enabled" {
				t.Errorf("mode %q, want enabled", st.Settings[prefix+"mode"])
			}
			wantRules := []string{"shardwise sandbox analysts [logs*] → shardwise-analysts", "shardwise sandbox tellers [tx-*] → shardwise-tellers"}
			if !tc.rules {
				wantRules = nil
			}
			if got := ruleSummary(st); !slices.Equal(got, wantRules) {
				t.Errorf("rules after create: %v, want %v", got, wantRules)
			}

			// 2. Update: analysts raises cpu and turns hard; tellers drops jvm for cpu (delete and
			// create: an update cannot remove a limit) and its pattern changes.
			defs.Sandboxes[0].Resources.CPU = al(0.4)
			defs.Sandboxes[0].Enforcement = sandbox.Hard
			defs.Sandboxes[1].Resources = sandbox.Allocations{CPU: al(0.1)}
			defs.Sandboxes[1].Attributes.IndicesName = "tx-*,ledger"
			res = sync(defs)
			for _, d := range []sandbox.Drift{
				{Kind: "group", Name: "shardwise-analysts", Field: "resiliency_mode", Want: "enforced", Have: "soft"},
				{Kind: "group", Name: "shardwise-analysts", Field: "resource_limits.cpu", Want: "0.4", Have: "0.2"},
				{Kind: "group", Name: "shardwise-tellers", Field: "resource_limits.memory", Want: "absent", Have: "0.25"},
			} {
				if !hasDrift(res, d) {
					t.Errorf("update: drift lacks %s: %v", d, res.Drift)
				}
			}
			st = live(t, w, res.Support)
			if got, want := groupSummary(st), []string{"shardwise-analysts enforced cpu=0.4 memory=0.3", "shardwise-tellers enforced cpu=0.1 memory=0"}; !slices.Equal(got, want) {
				t.Errorf("after update: %v, want %v", got, want)
			}
			wantRules = []string{"shardwise sandbox analysts [logs*] → shardwise-analysts", "shardwise sandbox tellers [ledger tx-*] → shardwise-tellers"}
			if !tc.rules {
				wantRules = nil
			}
			if got := ruleSummary(st); !slices.Equal(got, wantRules) {
				t.Errorf("rules after update: %v, want %v", got, wantRules)
			}

			// 3. Delete: tellers leaves the definitions.
			defs.Sandboxes = defs.Sandboxes[:1]
			res = sync(defs)
			if !hasDrift(res, sandbox.Drift{Kind: "group", Name: "shardwise-tellers", Field: "group", Want: "absent", Have: "present"}) {
				t.Errorf("delete: drift %v", res.Drift)
			}
			st = live(t, w, res.Support)
			if got, want := groupSummary(st), []string{"shardwise-analysts enforced cpu=0.4 memory=0.3"}; !slices.Equal(got, want) {
				t.Errorf("after delete: %v, want %v", got, want)
			}
			if tc.rules && len(st.Rules) != 1 {
				t.Errorf("rules after delete: %v", ruleSummary(st))
			}

			// 4. Nothing left to do: no drift, no call.
			w.takeWrites()
			res = sync(defs)
			if len(res.Drift) != 0 || len(res.Calls) != 0 || !strings.HasPrefix(res.Reason, "in sync") {
				t.Errorf("second sync: drift %v calls %v reason %q", res.Drift, res.Calls, res.Reason)
			}
			if wr := w.takeWrites(); len(wr) != 0 {
				t.Errorf("in sync, yet it wrote %v", wr)
			}

			// 5. An empty list removes every group and rule shardwise made.
			res = sync(sandbox.Definitions{})
			if st = live(t, w, res.Support); len(st.Groups) != 0 || len(st.Rules) != 0 || st.Settings[prefix+"mode"] != "monitor_only" {
				t.Errorf("after an empty sync: groups %v rules %v mode %q", groupSummary(st), ruleSummary(st), st.Settings[prefix+"mode"])
			}
		})
	}
}

// TestSyncWLMLeavesForeignGroups: a group shardwise does not own is neither changed nor deleted,
// and counts against the capacity.
func TestSyncWLMLeavesForeignGroups(t *testing.T) {
	w := newWLMServer(t, "3.1.0", 2, sim.PluginWorkloadManagement)
	if err := w.api.WLMSend(t.Context(), sandbox.Call{Method: "PUT", Path: "/_wlm/workload_group",
		Body: map[string]any{"name": "batch", "resiliency_mode": "soft", "resource_limits": map[string]float64{"memory": 0.4}}}); err != nil {
		t.Fatal(err)
	}
	opts := engine.WLMOptions{Safety: safety.DefaultConfig()}
	if _, err := engine.SyncWLM(t.Context(), w.api, w.api, wlmDefsV1(), opts); err != nil {
		t.Fatal(err)
	}
	defs := wlmDefsV1()
	defs.Sandboxes[0].Resources.JVM = al(0.5) // 0.5 + 0.25 + batch's 0.4: over 1
	w.takeWrites()
	res, err := engine.SyncWLM(t.Context(), w.api, w.api, defs, opts)
	if err == nil || !strings.Contains(err.Error(), "memory limits (0.75) and the groups shardwise does not own (0.4) sum over 1") {
		t.Errorf("got %v, want the capacity refusal", err)
	}
	if wr := w.takeWrites(); len(wr) != 0 || len(res.Calls) != 0 {
		t.Errorf("refused, yet it wrote %v (calls %v)", wr, res.Calls)
	}
	st := live(t, w, sandbox.WLMSupport{API: sandbox.WorkloadGroupAPI, Rules: true})
	if got := groupSummary(st); !slices.Contains(got, "batch soft cpu=0 memory=0.4") || len(got) != 3 {
		t.Errorf("groups %v", got)
	}
}

// TestSyncWLMDryRun: a dry run reports the drift and the calls it would make, and makes none.
func TestSyncWLMDryRun(t *testing.T) {
	for _, version := range []string{"2.19.0", "3.1.0"} {
		t.Run(version, func(t *testing.T) {
			w := newWLMServer(t, version, 2, sim.PluginWorkloadManagement)
			res, err := engine.SyncWLM(t.Context(), w.api, w.api, wlmDefsV1(), engine.WLMOptions{DryRun: true, Safety: safety.DefaultConfig()})
			if err != nil {
				t.Fatal(err)
			}
			if wr := w.takeWrites(); len(wr) != 0 {
				t.Errorf("dry run wrote %v", wr)
			}
			if len(res.Drift) == 0 || len(res.Calls) == 0 || !strings.HasPrefix(res.Reason, "dry-run:") {
				t.Fatalf("dry run reported drift %v calls %v reason %q", res.Drift, res.Calls, res.Reason)
			}
			var paths []string
			for _, c := range res.Calls {
				if c.Outcome != engine.WLMWould {
					t.Errorf("%s: outcome %s, want dry-run", c.Call, c.Outcome)
				}
				paths = append(paths, c.Method+" "+c.Path)
			}
			want := []string{"PUT /_cluster/settings", "PUT /_wlm/query_group", "PUT /_wlm/query_group"}
			if version == "3.1.0" {
				want = []string{"PUT /_cluster/settings", "PUT /_wlm/workload_group", "PUT /_wlm/workload_group", "PUT /_rules/workload_group", "PUT /_rules/workload_group"}
			}
			if !slices.Equal(paths, want) {
				t.Errorf("would call %v, want %v", paths, want)
			}
			if st := live(t, w, res.Support); len(st.Groups) != 0 {
				t.Errorf("dry run left groups %v", groupSummary(st))
			}
		})
	}
}

// TestSyncWLMUnsupported: a cluster without workload management is reported with its reason, and
// nothing is written.
func TestSyncWLMUnsupported(t *testing.T) {
	for _, tc := range []struct {
		version string
		plugins []string
		reason  string
	}{
		{"2.19.0", nil, "not synced: OpenSearch 2.19.0 answers no handler for /_wlm/query_group: the workload-management plugin is not installed"},
		{"3.1.0", nil, "not synced: OpenSearch 3.1.0 answers no handler for /_wlm/workload_group"},
		{"2.17.0", nil, "not synced: OpenSearch 2.17.0 has no workload management: it arrived in 2.18"},
	} {
		w := newWLMServer(t, tc.version, 2, tc.plugins...)
		res, err := engine.SyncWLM(t.Context(), w.api, w.api, wlmDefsV1(), engine.WLMOptions{Safety: safety.DefaultConfig()})
		if err != nil || res.Support.Supported() || !strings.HasPrefix(res.Reason, tc.reason) || len(res.Calls) != 0 {
			t.Errorf("%s: got %+v, %v; want reason %q", tc.version, res, err, tc.reason)
		}
		if wr := w.takeWrites(); len(wr) != 0 {
			t.Errorf("%s: unsupported, yet it wrote %v", tc.version, wr)
		}
	}
}

// TestSyncWLMBreaker: a yellow cluster (a replica with no second node) opens the breaker: the
// calls are reported skipped with its reason and none is made.
func TestSyncWLMBreaker(t *testing.T) {
	w := newWLMServer(t, "3.1.0", 1, sim.PluginWorkloadManagement)
	res, err := engine.SyncWLM(t.Context(), w.api, w.api, wlmDefsV1(), engine.WLMOptions{Safety: safety.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Breaker == nil || res.Breaker.Closed || !strings.Contains(res.Reason, `cluster health "yellow", required "green"`) {
		t.Fatalf("breaker %+v reason %q", res.Breaker, res.Reason)
	}
	for _, c := range res.Calls {
		if c.Outcome != engine.WLMSkipped {
			t.Errorf("%s: %s, want skipped", c.Call, c.Outcome)
		}
	}
	if wr := w.takeWrites(); len(wr) != 0 || len(res.Calls) == 0 {
		t.Errorf("breaker open, yet it wrote %v (calls %d)", wr, len(res.Calls))
	}
}

// TestSandboxCycleSyncsWLM: the sandbox function's cycle syncs its definitions, dry-run first
// (the drift and would-be calls on a "Sandbox Enforced" event, nothing written), then for real.
func TestSandboxCycleSyncsWLM(t *testing.T) {
	w := newWLMServer(t, "3.1.0", 2, sim.PluginWorkloadManagement)
	cfg := config.Default()
	cfg.Clusters = []config.Cluster{{Name: "prod", URLs: []string{"http://127.0.0.1:9"}, Auth: "none"}}
	cfg.Sandbox.Definitions = []byte(`[{"name":"analysts","attributes":{"indices_name":"logs*"},"resources":{"cpu":{"allocation":0.3}},"enforcement":"hard"}]`)
	var events bus.Memory
	e := &engine.Engine{Store: state.NewMemory(nil), Bus: &events, Config: cfg,
		Tenants: collect.One(w.api).Tenants}

	e.Config.Safety.DryRun = true
	if _, err := e.Sandbox(t.Context(), "prod"); err != nil {
		t.Fatal(err)
	}
	if wr := w.takeWrites(); len(wr) != 0 {
		t.Errorf("dry-run cycle wrote %v", wr)
	}
	var ev bus.SandboxEnforced
	found := false
	for _, r := range events.Drain() {
		if r.DetailType == bus.TypeSandboxEnforced && json.Unmarshal(r.Detail, &ev) == nil && ev.Mode == "wlm-dry-run" {
			found = true
		}
	}
	if !found || !slices.Contains(ev.Actions, "drift: group shardwise-analysts group: want present, have absent") ||
		!slices.Contains(ev.Actions, "dry-run: PUT /_wlm/workload_group (create group shardwise-analysts for sandbox analysts)") {
		t.Fatalf("no wlm-dry-run event with the drift and the call: %+v", ev)
	}

	e.Config.Safety.DryRun = false
	if _, err := e.Sandbox(t.Context(), "prod"); err != nil {
		t.Fatal(err)
	}
	st := live(t, w, sandbox.WLMSupport{API: sandbox.WorkloadGroupAPI, Rules: true})
	if got := groupSummary(st); !slices.Equal(got, []string{"shardwise-analysts enforced cpu=0.3 memory=0"}) || len(st.Rules) != 1 {
		t.Errorf("after the cycle: groups %v rules %v", got, ruleSummary(st))
	}
}

// monitorDefs are two monitor sandboxes: the plugin's mode is to be monitor_only.
func monitorDefs() sandbox.Definitions {
	return sandbox.Definitions{Sandboxes: []sandbox.Sandbox{
		{Name: "a", Attributes: sandbox.Attributes{IndicesName: "a-*"}, Resources: sandbox.Allocations{CPU: al(0.2)}, Enforcement: sandbox.Monitor},
		{Name: "b", Attributes: sandbox.Attributes{IndicesName: "b-*"}, Resources: sandbox.Allocations{CPU: al(0.1)}, Enforcement: sandbox.Monitor},
	}}
}

func mode(t *testing.T, w *wlmServer) string {
	t.Helper()
	return live(t, w, sandbox.WLMSupport{Version: "3.8.0", API: sandbox.WorkloadGroupAPI, Rules: true}).Settings["wlm.workload_group.mode"]
}

func outcomes(res engine.WLMSyncResult) []string {
	var out []string
	for _, c := range res.Calls {
		out = append(out, c.Outcome+" "+c.Method+" "+c.Path)
	}
	return out
}

// TestSyncWLMModeOrder: OpenSearch 3.8 creates, updates and deletes groups only in mode enabled,
// so a sync that changes groups with the cluster in another mode enables it first and sets the
// definitions' mode last: monitor sandboxes only, then [] with the mode enabled. A dry run says
// so in that order and writes nothing.
func TestSyncWLMModeOrder(t *testing.T) {
	w := newWLMServer(t, "3.8.0", 2, sim.PluginWorkloadManagement)
	opts := engine.WLMOptions{DryRun: true, Safety: safety.DefaultConfig()}
	res, err := engine.SyncWLM(t.Context(), w.api, w.api, monitorDefs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dry-run PUT /_cluster/settings", "dry-run PUT /_wlm/workload_group", "dry-run PUT /_wlm/workload_group",
		"dry-run PUT /_rules/workload_group", "dry-run PUT /_rules/workload_group", "dry-run PUT /_cluster/settings"}
	if got := outcomes(res); !slices.Equal(got, want) {
		t.Errorf("dry run: %v, want %v", got, want)
	}
	lines := res.Lines()
	if !slices.Contains(lines, "dry-run: PUT /_cluster/settings (set wlm.workload_group.mode to enabled while the groups change, since OpenSearch 3.8.0 creates, updates and deletes groups only in mode enabled (the definitions' monitor_only is set last))") ||
		lines[len(lines)-1] != "dry-run: PUT /_cluster/settings (set wlm.workload_group.mode to monitor_only, the definitions' mode, once the groups are changed in mode enabled)" {
		t.Errorf("dry-run lines:\n%s", strings.Join(lines, "\n"))
	}
	if wr := w.takeWrites(); len(wr) != 0 || mode(t, w) != "monitor_only" {
		t.Errorf("dry run wrote %v; mode %s", wr, mode(t, w))
	}

	opts.DryRun = false
	if res, err = engine.SyncWLM(t.Context(), w.api, w.api, monitorDefs(), opts); err != nil {
		t.Fatalf("monitor sandboxes only: %v\n%s", err, strings.Join(res.Lines(), "\n"))
	}
	wantWrites := []string{"PUT /_cluster/settings", "PUT /_wlm/workload_group", "PUT /_wlm/workload_group",
		"PUT /_rules/workload_group", "PUT /_rules/workload_group", "PUT /_cluster/settings"}
	if wr := w.takeWrites(); !slices.Equal(wr, wantWrites) || len(res.After) != 0 || mode(t, w) != "monitor_only" {
		t.Errorf("monitor sandboxes only: wrote %v, drift left %v, mode %s", wr, res.After, mode(t, w))
	}

	// The mode enabled and wanted: no call on the mode.
	if res, err = engine.SyncWLM(t.Context(), w.api, w.api, wlmDefsV1(), opts); err != nil {
		t.Fatalf("hard sandboxes: %v\n%s", err, strings.Join(res.Lines(), "\n"))
	}
	w.takeWrites()
	defs := wlmDefsV1()
	defs.Sandboxes[0].Resources.CPU = al(0.1)
	if res, err = engine.SyncWLM(t.Context(), w.api, w.api, defs, opts); err != nil {
		t.Fatalf("lower a limit: %v", err)
	}
	if wr := w.takeWrites(); !slices.Equal(wr, []string{"PUT /_wlm/workload_group/shardwise-analysts"}) {
		t.Errorf("mode enabled already: wrote %v, want the update alone", wr)
	}

	// [] with groups present, the mode enabled: the rules' deletes, then the groups' (the plugin
	// refuses to delete a group a rule names, as a real 3.8.0 node did), then monitor_only.
	if res, err = engine.SyncWLM(t.Context(), w.api, w.api, sandbox.Definitions{}, opts); err != nil {
		t.Fatalf("[]: %v\n%s", err, strings.Join(res.Lines(), "\n"))
	}
	wantWrites = []string{"DELETE /_rules/workload_group/", "DELETE /_rules/workload_group/",
		"DELETE /_wlm/workload_group/shardwise-analysts", "DELETE /_wlm/workload_group/shardwise-tellers", "PUT /_cluster/settings"}
	got := w.takeWrites()
	for i := range got {
		if strings.HasPrefix(got[i], "DELETE /_rules/workload_group/") {
			got[i] = "DELETE /_rules/workload_group/"
		}
	}
	if !slices.Equal(got, wantWrites) || mode(t, w) != "monitor_only" {
		t.Errorf("[]: wrote %v, want %v; mode %s", got, wantWrites, mode(t, w))
	}
	if st := live(t, w, res.Support); len(st.Groups) != 0 || len(st.Rules) != 0 {
		t.Errorf("[] left groups %v rules %v", groupSummary(st), ruleSummary(st))
	}
}

// TestSyncWLMModeAfterFailure: a group call that fails midway on 3.8 names the call, and the mode
// is left as it was before the sync (no call made) or as the definitions want it (set all the
// same), never enabled against them, except when setting it back fails too, which the error says.
func TestSyncWLMModeAfterFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		// failAt is the write that fails, counted from 1.
		failAt   int
		outcomes []string
		err      string
		mode     string
	}{
		{"second create fails", 3,
			[]string{"done PUT /_cluster/settings", "done PUT /_wlm/workload_group", "failed PUT /_wlm/workload_group", "done PUT /_cluster/settings"},
			"wlm: PUT /_wlm/workload_group (create group shardwise-b for sandbox b): ", "monitor_only"},
		{"enabling fails", 1,
			[]string{"failed PUT /_cluster/settings", "skipped PUT /_wlm/workload_group", "skipped PUT /_wlm/workload_group", "skipped PUT /_cluster/settings"},
			"; no call was made, so the mode is as it was before the sync", "monitor_only"},
		{"setting the mode back fails too", 4,
			[]string{"done PUT /_cluster/settings", "done PUT /_wlm/workload_group", "done PUT /_wlm/workload_group", "failed PUT /_rules/workload_group", "skipped PUT /_rules/workload_group", "failed PUT /_cluster/settings"},
			"; setting the mode back to monitor_only failed too, so it is left enabled: PUT /_cluster/settings", "enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWLMServer(t, "3.8.0", 2, sim.PluginWorkloadManagement)
			w.fail = func(write string, n int) bool { return n == tc.failAt || (tc.failAt == 4 && n == 5) }
			res, err := engine.SyncWLM(t.Context(), w.api, w.api, monitorDefs(), engine.WLMOptions{Safety: safety.DefaultConfig()})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want it to contain %q", err, tc.err)
			}
			if got := outcomes(res); !slices.Equal(got, tc.outcomes) {
				t.Errorf("calls %v, want %v", got, tc.outcomes)
			}
			if got := mode(t, w); got != tc.mode {
				t.Errorf("mode %s, want %s", got, tc.mode)
			}
			if !strings.Contains(res.Reason, "failed") || res.Lines()[0] != res.Reason {
				t.Errorf("reason %q", res.Reason)
			}
			if tc.failAt == 3 && !strings.HasSuffix(err.Error(), "; the mode was set to monitor_only, the definitions' mode, all the same") {
				t.Errorf("error %v does not say the mode was set", err)
			}
		})
	}
}
