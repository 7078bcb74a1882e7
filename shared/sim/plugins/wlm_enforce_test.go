package plugins_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/plugins"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// wlmTenantDoc is tenantDoc on OpenSearch 3.3 with the workload-management plugin, each tenant
// searching as its own user.
func wlmTenantDoc(hogQPS string, ticks int) string {
	doc := tenantDoc(hogQPS, ticks)
	doc = strings.Replace(doc, `"node_defaults"`, `"cluster": {"opensearch_version": "3.3.0", "plugins": ["workload-management"]},
  "node_defaults"`, 1)
	for _, u := range []string{"hog", "good", "watch"} {
		doc = strings.Replace(doc, `"opaque_id": "`+u+`-id"`, `"opaque_id": "`+u+`-id", "username": "`+u+`-user"`, 1)
	}
	return doc
}

// wlmGroup creates a group and a rule sending user's searches to it, and returns its id.
func wlmGroupFor(t *testing.T, s *sim.Sim, name, mode, limits, user string) string {
	t.Helper()
	code, g := simtest.CallJSON(t, s, "PUT", "/_wlm/workload_group",
		fmt.Sprintf(`{"name": %q, "resiliency_mode": %q, "resource_limits": %s}`, name, mode, limits))
	if code != 200 {
		t.Fatalf("create group %s: %d %v", name, code, g)
	}
	id, _ := g["_id"].(string)
	code, r := simtest.CallJSON(t, s, "PUT", "/_rules/workload_group",
		fmt.Sprintf(`{"description": "%s", "principal": {"username": [%q]}, "workload_group": %q}`, name, user, id))
	if code != 200 {
		t.Fatalf("create rule %s: %d %v", name, code, r)
	}
	return id
}

func setWLMMode(t *testing.T, s *sim.Sim, mode string) {
	t.Helper()
	if code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"persistent": {"wlm.workload_group.mode": "`+mode+`"}}`); code != 200 {
		t.Fatalf("set mode %s: %d %s", mode, code, body)
	}
}

// wlmRun is one run of the tenants scenario: the hog's group in hogMode ("" for no group) and the
// plugin in mode. It returns the result, the hog group's stats summed over the nodes and the
// highest CPU usage the plugin recorded for it on a node at a tick's end.
func wlmRun(t *testing.T, hogQPS, hogMode, mode string) (model.Result, map[string]float64, float64) {
	t.Helper()
	s := simtest.MustSim(t, wlmTenantDoc(hogQPS, 30))
	id := ""
	if hogMode != "" {
		// From 3.2 the plugin changes groups only in mode enabled.
		setWLMMode(t, s, "enabled")
		id = wlmGroupFor(t, s, "hog", hogMode, `{"cpu": 0.15}`, "hog-user")
		wlmGroupFor(t, s, "good", "soft", `{"cpu": 0.5}`, "good-user")
	}
	setWLMMode(t, s, mode)
	peak := 0.0
	totals := map[string]float64{}
	for !s.Done() {
		s.Step()
		if id == "" {
			continue
		}
		_, st := simtest.CallJSON(t, s, "GET", "/_wlm/stats", "")
		for _, n := range s.PresentNodes() {
			g, _ := simtest.Dig(st, n.ID, "workload_groups", id).(map[string]any)
			if g == nil {
				t.Fatalf("no stats for group %s on %s: %v", id, n.Name, st)
			}
			peak = max(peak, simtest.Dig(g, "cpu", "current_usage").(float64))
		}
	}
	if id != "" {
		_, st := simtest.CallJSON(t, s, "GET", "/_wlm/stats", "")
		for _, n := range s.PresentNodes() {
			g := simtest.Dig(st, n.ID, "workload_groups", id).(map[string]any)
			for _, k := range []string{"total_completions", "total_rejections", "total_cancellations"} {
				totals[k] += g[k].(float64)
			}
		}
	}
	totals["would_cancel"] = float64(s.Plugins.WLM.Rt.WouldCancel)
	return s.Result(), totals, peak
}

// An enforced group holds a flooding tenant near its limit, and the tenant beside it feels it:
// its p99 falls from the full queue's wait to near its own 50 ms. monitor_only and a plugin
// without groups leave the flood alone.
func TestWLMEnforcedGroupProtectsNeighbour(t *testing.T) {
	alone, _, _ := wlmRun(t, "0", "", "enabled")
	none, _, _ := wlmRun(t, "0.1", "", "enabled")
	good := func(r model.Result) float64 { return r.TenantP99SearchLatencyMs["good"] }
	cases := []struct {
		name, hogMode, mode string
		held                bool
	}{
		{"enforced group, plugin enabled", "enforced", "enabled", true},
		{"enforced group, plugin monitor_only", "enforced", "monitor_only", false},
	}
	t.Logf("good p99: alone %.1f ms, flooded without groups %.1f ms", good(alone), good(none))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, totals, peak := wlmRun(t, "0.1", tc.hogMode, tc.mode)
			t.Logf("good p99 %.1f ms; hog: %v, peak recorded cpu %.3f, cancelled by tenant %v",
				good(r), totals, peak, r.TasksCancelledByTenant)
			if !tc.held {
				if good(r) < 0.9*good(none) {
					t.Errorf("good's p99 %v ms fell below the flooded %v ms without enforcement", good(r), good(none))
				}
				if totals["total_cancellations"] != 0 {
					t.Errorf("cancellations counted without enforcement: %v", totals)
				}
				if tc.mode == "monitor_only" && totals["would_cancel"] == 0 {
					t.Errorf("monitor_only logged nothing as eligible for cancellation")
				}
				return
			}
			if good(r) > 2*good(alone) {
				t.Errorf("good's p99 %v ms is over twice its p99 without the flood, %v ms (flooded: %v ms)", good(r), good(alone), good(none))
			}
			if totals["total_cancellations"] == 0 {
				t.Errorf("the enforced group lost no task: %v", totals)
			}
			if r.TasksCancelledByTenant["good"] != 0 || r.TasksCancelledByTenant["watch"] != 0 {
				t.Errorf("tenants within their limits lost tasks: %v", r.TasksCancelledByTenant)
			}
			// Held near its limit: 0.15 of the node, cancelled above 0.15 × 0.9; a run sees at most
			// what a second of arrivals and of running added.
			if peak > 0.5 {
				t.Errorf("the hog's recorded CPU reached %.3f of a node, far over its 0.15", peak)
			}
		})
	}
	// A monitor group is never cancelled, but in mode enabled the plugin's rejectIfNeeded returns
	// early only for soft groups, so a monitor group over its rejection level is rejected.
	t.Run("monitor group, plugin enabled", func(t *testing.T) {
		r, totals, _ := wlmRun(t, "0.1", "monitor", "enabled")
		t.Logf("good p99 %.1f ms; hog: %v, rejected by tenant %v", good(r), totals, r.SearchesRejectedByTenant)
		if totals["total_cancellations"] != 0 || r.TasksCancelledByTenant["hog"] != 0 {
			t.Errorf("a monitor group lost tasks: %v %v", totals, r.TasksCancelledByTenant)
		}
		if totals["total_rejections"] == 0 || r.SearchesRejectedByTenant["hog"] == 0 {
			t.Errorf("a monitor group over its rejection level was not rejected: %v %v", totals, r.SearchesRejectedByTenant)
		}
	})
}

func TestWLMRuleAssignment(t *testing.T) {
	rule := func(index []string, users, roles []string) *plugins.WlmRule {
		return &plugins.WlmRule{IndexPattern: index, Username: users, Role: roles}
	}
	cases := []struct {
		name       string
		r          *plugins.WlmRule
		index      string
		user       string
		roles      []string
		prio, spec int
	}{
		{"exact index", rule([]string{"shop"}, nil, nil), "shop", "", nil, 1, 5},
		{"prefix", rule([]string{"sh*"}, nil, nil), "shop", "", nil, 1, 2},
		{"longer prefix is more specific", rule([]string{"s*", "sho*"}, nil, nil), "shop", "", nil, 1, 3},
		{"other index", rule([]string{"logs*"}, nil, nil), "shop", "", nil, 0, 0},
		{"user", rule(nil, []string{"u"}, nil), "shop", "u", nil, 3, 0},
		{"user must match too", rule([]string{"shop"}, []string{"u"}, nil), "shop", "v", nil, 0, 0},
		{"role", rule(nil, nil, []string{"r"}), "shop", "u", []string{"x", "r"}, 2, 0},
		{"no principal", rule(nil, []string{"u"}, nil), "shop", "", nil, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, sp := plugins.RuleMatch(tc.r, tc.index, tc.user, tc.roles)
			if p != tc.prio || sp != tc.spec {
				t.Errorf("got priority %d specificity %d, want %d %d", p, sp, tc.prio, tc.spec)
			}
		})
	}
}

// _wlm/stats answers in the shape of the version: query_groups with completions before 3.1.
func TestWLMStatsShape(t *testing.T) {
	for _, tc := range []struct{ version, key, completions string }{
		{"2.19.0", "query_groups", "completions"},
		{"3.3.0", "workload_groups", "total_completions"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.WlmScenario(tc.version, scenario.PluginWorkloadManagement))
			code, st := simtest.CallJSON(t, s, "GET", "/_wlm/stats", "")
			if code != 200 {
				t.Fatalf("%d %v", code, st)
			}
			n := s.PresentNodes()[0]
			g, _ := simtest.Dig(st, n.ID, tc.key, plugins.DefaultGroupID(map[string]string{"query_groups": "query_group"}[tc.key])).(map[string]any)
			if g == nil || g[tc.completions] == nil || simtest.Dig(g, "cpu", "current_usage") == nil {
				t.Fatalf("no default group in %v", st)
			}
			if code, _ := simtest.Call(t, s, "GET", "/_wlm/stats/nope", ""); code != 404 {
				t.Errorf("unknown group: %d, want 404", code)
			}
		})
	}
}
