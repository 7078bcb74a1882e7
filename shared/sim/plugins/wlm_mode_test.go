package plugins_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// TestWLMGroupWritesNeedEnabled: from 3.2 the plugin creates, updates and deletes groups only in
// mode enabled, and answers anything else with a 500 illegal_state_exception naming the handler;
// before 3.2 (query_group, and 3.1's workload_group) the mode is not checked. Reads and rules are
// never checked.
func TestWLMGroupWritesNeedEnabled(t *testing.T) {
	type call struct{ op, method, target, body string }
	for _, tc := range []struct {
		version string
		checks  bool
	}{{"2.19.0", false}, {"3.0.0", false}, {"3.1.0", false}, {"3.2.0", true}, {"3.8.0", true}} {
		for _, mode := range []string{"monitor_only", "disabled", "enabled"} {
			t.Run(tc.version+"/"+mode, func(t *testing.T) {
				api := "workload_group"
				if !strings.HasPrefix(tc.version, "3.") || tc.version == "3.0.0" {
					api = "query_group"
				}
				base := "/_wlm/" + api
				s := simtest.MustSim(t, simtest.WlmScenario(tc.version, scenario.PluginWorkloadManagement))
				setMode := func(m string) {
					t.Helper()
					if code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"persistent":{"wlm.`+api+`.mode":"`+m+`"}}`); code != 200 {
						t.Fatalf("set mode %s: %d %s", m, code, body)
					}
				}
				// The groups to update and delete exist, made in mode enabled.
				setMode("enabled")
				for _, name := range []string{"u", "d"} {
					if code, body := simtest.Call(t, s, "PUT", base, `{"name":"`+name+`","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`); code != 200 {
						t.Fatalf("create %s: %d %s", name, code, body)
					}
				}
				setMode(mode)
				refused := tc.checks && mode != "enabled"
				for _, c := range []call{
					{"create", "PUT", base, `{"name":"c","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`},
					{"update", "PUT", base + "/u", `{"resource_limits":{"cpu":0.2}}`},
					{"delete", "DELETE", base + "/d", ""},
				} {
					code, body := simtest.Call(t, s, c.method, c.target, c.body)
					if !refused {
						if code != 200 {
							t.Errorf("%s: %d %s, want 200", c.op, code, body)
						}
						continue
					}
					var got struct {
						Error struct {
							RootCause []struct{ Type, Reason string } `json:"root_cause"`
							Type      string                          `json:"type"`
							Reason    string                          `json:"reason"`
						} `json:"error"`
						Status int `json:"status"`
					}
					if err := json.Unmarshal([]byte(body), &got); err != nil {
						t.Fatalf("%s: %v: %s", c.op, err, body)
					}
					reason := "Cannot " + c.op + "_workload_group because workload management mode is disabled or monitor_only." +
						"To enable this feature, set [wlm.workload_group.mode] to 'enabled' in cluster settings."
					if code != 500 || got.Status != 500 || got.Error.Type != "illegal_state_exception" || got.Error.Reason != reason ||
						len(got.Error.RootCause) != 1 || got.Error.RootCause[0].Reason != reason {
						t.Errorf("%s: %d %s, want 500 illegal_state_exception %q", c.op, code, body, reason)
					}
				}
				// What was refused changed nothing; reads answer in every mode.
				code, body := simtest.Call(t, s, "GET", base, "")
				if code != 200 {
					t.Fatalf("list: %d %s", code, body)
				}
				wantC, wantD, wantU := !refused, refused, `"cpu":0.2`
				if refused {
					wantU = `"cpu":0.1`
				}
				if strings.Contains(body, `"name":"c"`) != wantC || strings.Contains(body, `"name":"d"`) != wantD || !strings.Contains(body, wantU) {
					t.Errorf("groups after the calls: %s (refused %v)", body, refused)
				}
			})
		}
	}
}

// TestWLMRulesIgnoreMode: the rule API does not check the mode, in any version that serves it.
func TestWLMRulesIgnoreMode(t *testing.T) {
	s := simtest.MustSim(t, simtest.WlmScenario("3.8.0", scenario.PluginWorkloadManagement))
	setWLMMode(t, s, "enabled")
	code, g := simtest.CallJSON(t, s, "PUT", "/_wlm/workload_group", `{"name":"g","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`)
	if code != 200 {
		t.Fatalf("create group: %d %v", code, g)
	}
	setWLMMode(t, s, "monitor_only")
	code, r := simtest.CallJSON(t, s, "PUT", "/_rules/workload_group", `{"description":"d","index_pattern":["x"],"workload_group":"`+g["_id"].(string)+`"}`)
	if code != 200 {
		t.Fatalf("create rule in monitor_only: %d %v", code, r)
	}
	if code, body := simtest.Call(t, s, "DELETE", "/_rules/workload_group/"+r["id"].(string), ""); code != 200 {
		t.Errorf("delete rule in monitor_only: %d %s", code, body)
	}
}
