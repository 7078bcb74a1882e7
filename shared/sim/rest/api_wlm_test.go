package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/shardwise/shardwise/shared/apispec"
	"github.com/shardwise/shardwise/shared/sim/rest"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// wlmSchemas loads the API specification's workload-management schemas, for the endpoints the
// specification does not list (workload_group, 3.1 and later, takes and returns the same bodies).
func wlmSchemas(t *testing.T) map[string]*base.Schema {
	t.Helper()
	raw, err := os.ReadFile("../../../third_party/opensearch-api-spec/spec/schemas/wlm._common.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*base.Schema{}
	for name, proxy := range model.Model.Components.Schemas.FromOldest() {
		out[name] = proxy.Schema()
	}
	return out
}

// TestWLMMatchesSpec: on 2.19 every group call is validated against the specification's
// wlm operations; on 3.1 the workload_group answers against the same schemas (the specification
// lists only the query_group paths).
func TestWLMMatchesSpec(t *testing.T) {
	spec := apispec.Shared(t)
	schemas := wlmSchemas(t)
	validator := schema_validation.NewSchemaValidator()
	for _, tc := range []struct{ version, api string }{{"2.19.0", "query_group"}, {"3.1.0", "workload_group"}} {
		t.Run(tc.version, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.WlmScenario(tc.version, scenario.PluginWorkloadManagement))
			base := "/_wlm/" + tc.api
			steps := []struct{ method, target, body, schema string }{
				{"PUT", base, `{"name":"a","resiliency_mode":"soft","resource_limits":{"cpu":0.3,"memory":0.2}}`, "QueryGroupResponse"},
				{"PUT", base, `{"name":"b","resiliency_mode":"monitor","resource_limits":{"memory":0.1}}`, "QueryGroupResponse"},
				{"GET", base, "", "list"},
				{"GET", base + "/a", "", "list"},
				{"PUT", base + "/a", `{"resiliency_mode":"enforced","resource_limits":{"cpu":0.4}}`, "QueryGroupResponse"},
				{"DELETE", base + "/b", "", ""},
			}
			for _, st := range steps {
				req := httptest.NewRequestWithContext(context.Background(), st.method, st.target, strings.NewReader(st.body))
				rec := httptest.NewRecorder()
				s.REST.Handler().ServeHTTP(rec, req)
				code, body := rec.Code, rec.Body.String()
				if code != 200 {
					t.Fatalf("%s %s: %d %s", st.method, st.target, code, body)
				}
				if tc.api == "query_group" {
					req = httptest.NewRequestWithContext(context.Background(), st.method, st.target, bytes.NewReader([]byte(st.body)))
					if err := spec.Validate(req, code, rec.Header(), []byte(body)); err != nil {
						t.Errorf("%s %s does not match the specification: %v", st.method, st.target, err)
					}
					continue
				}
				var items []json.RawMessage
				switch st.schema {
				case "QueryGroupResponse":
					items = []json.RawMessage{json.RawMessage(body)}
				case "list":
					var l map[string][]json.RawMessage
					if err := json.Unmarshal([]byte(body), &l); err != nil || len(l["workload_groups"]) == 0 {
						t.Fatalf("%s: want workload_groups, got %s", st.target, body)
					}
					items = l["workload_groups"]
				}
				for _, it := range items {
					if ok, errs := validator.ValidateSchemaBytes(schemas["QueryGroupResponse"], it); !ok {
						t.Errorf("%s %s: %s: %v", st.method, st.target, it, errs)
					}
				}
			}
			_, body := simtest.Call(t, s, "GET", base+"/a", "")
			if !strings.Contains(body, `"resiliency_mode":"enforced"`) || !strings.Contains(body, `"cpu":0.4`) || !strings.Contains(body, `"memory":0.2`) {
				t.Errorf("update: want mode enforced, cpu 0.4 and memory kept at 0.2, got %s", body)
			}
		})
	}
}

func TestWLMRefusals(t *testing.T) {
	type req struct{ method, target, body string }
	tests := []struct {
		name    string
		version string
		plugins []string
		setup   []req
		req     req
		status  int
		want    string
	}{
		{"no plugin", "2.19.0", nil, nil, req{"GET", "/_wlm/query_group", ""}, 400, "no handler found"},
		{"2.19 has no workload_group", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil, req{"GET", "/_wlm/workload_group", ""}, 400, "no handler found"},
		{"3.1 has no query_group", "3.1.0", []string{scenario.PluginWorkloadManagement}, nil, req{"GET", "/_wlm/query_group", ""}, 400, "no handler found"},
		{"2.19 has no rules", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil, req{"GET", "/_rules/workload_group", ""}, 400, "no handler found"},
		{"unknown group", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil, req{"DELETE", "/_wlm/query_group/x", ""}, 404, "QueryGroup with name x does not exist"},
		{"duplicate", "3.1.0", []string{scenario.PluginWorkloadManagement},
			[]req{{"PUT", "/_wlm/workload_group", `{"name":"a","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`}},
			req{"PUT", "/_wlm/workload_group", `{"name":"a","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`}, 400, "WorkloadGroup with name a already exists"},
		{"over capacity", "3.1.0", []string{scenario.PluginWorkloadManagement},
			[]req{{"PUT", "/_wlm/workload_group", `{"name":"a","resiliency_mode":"soft","resource_limits":{"cpu":0.7}}`}},
			req{"PUT", "/_wlm/workload_group", `{"name":"b","resiliency_mode":"soft","resource_limits":{"cpu":0.4}}`}, 400, "Total resource allocation for cpu will go above the max limit of 1.0."},
		{"update over capacity", "3.1.0", []string{scenario.PluginWorkloadManagement},
			[]req{{"PUT", "/_wlm/workload_group", `{"name":"a","resiliency_mode":"soft","resource_limits":{"cpu":0.7}}`},
				{"PUT", "/_wlm/workload_group", `{"name":"b","resiliency_mode":"soft","resource_limits":{"cpu":0.2}}`}},
			req{"PUT", "/_wlm/workload_group/b", `{"resource_limits":{"cpu":0.4}}`}, 400, "above the max limit"},
		{"hard is not a mode", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_wlm/query_group", `{"name":"a","resiliency_mode":"hard","resource_limits":{"cpu":0.1}}`}, 400, "Invalid value for ResiliencyMode: hard"},
		{"limit over 1", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_wlm/query_group", `{"name":"a","resiliency_mode":"soft","resource_limits":{"cpu":1.5}}`}, 400, "less or equal to 1.0"},
		{"name over 50", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_wlm/query_group", `{"name":"` + strings.Repeat("n", 51) + `","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`}, 400, "more than 50 chars"},
		{"rule to no group", "3.1.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_rules/workload_group", `{"description":"d","index_pattern":["x"],"workload_group":"nope"}`}, 400, "Couldn't find an existing workload group with id: nope"},
		{"principal before 3.3", "3.1.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_rules/workload_group", `{"description":"d","principal":{"role":["r"]},"workload_group":"x"}`}, 400, "principal is not a valid attribute"},
		{"threshold over the plugin's bound", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_cluster/settings", `{"persistent":{"wlm.query_group.node.cpu_rejection_threshold":0.95}}`}, 400, "cannot be greater than 0.9"},
		{"cancellation under rejection", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_cluster/settings", `{"persistent":{"wlm.query_group.node.memory_cancellation_threshold":0.7}}`}, 400,
			"wlm.query_group.node.memory_cancellation_threshold value should not be less than wlm.query_group.node.memory_rejection_threshold"},
		{"both thresholds in one update", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_cluster/settings", `{"persistent":{"wlm.query_group.node.memory_cancellation_threshold":0.7,"wlm.query_group.node.memory_rejection_threshold":0.6}}`}, 200, `"acknowledged":true`},
		{"wlm setting without the plugin", "2.19.0", nil, nil,
			req{"PUT", "/_cluster/settings", `{"persistent":{"wlm.query_group.mode":"enabled"}}`}, 400, "not recognized"},
		{"3.1 setting name on 2.19", "2.19.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_cluster/settings", `{"persistent":{"wlm.workload_group.mode":"enabled"}}`}, 400, "not recognized"},
		{"mode accepted", "3.1.0", []string{scenario.PluginWorkloadManagement}, nil,
			req{"PUT", "/_cluster/settings", `{"persistent":{"wlm.workload_group.mode":"enabled"}}`}, 200, `"wlm":`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.WlmScenario(tc.version, tc.plugins...))
			for _, r := range tc.setup {
				if code, body := simtest.Call(t, s, r.method, r.target, r.body); code != 200 {
					t.Fatalf("setup %s %s: %d %s", r.method, r.target, code, body)
				}
			}
			code, body := simtest.Call(t, s, tc.req.method, tc.req.target, tc.req.body)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("got %d %s, want %d with %q", code, body, tc.status, tc.want)
			}
		})
	}
}

func TestWLMRulesPages(t *testing.T) {
	s := simtest.MustSim(t, simtest.WlmScenario("3.3.0", scenario.PluginWorkloadManagement))
	// From 3.2 the plugin creates groups only in mode enabled.
	if code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"persistent":{"wlm.workload_group.mode":"enabled"}}`); code != 200 {
		t.Fatal(body)
	}
	code, body := simtest.Call(t, s, "PUT", "/_wlm/workload_group", `{"name":"g","resiliency_mode":"soft","resource_limits":{"cpu":0.1}}`)
	if code != 200 {
		t.Fatal(body)
	}
	var g struct {
		ID string `json:"_id"`
	}
	_ = json.Unmarshal([]byte(body), &g)
	for i := range rest.RulesPageSize + 3 {
		b := fmt.Sprintf(`{"description":"r%d","index_pattern":["i%d*"],"principal":{"username":["u"]},"workload_group":%q}`, i, i, g.ID)
		if code, body := simtest.Call(t, s, "PUT", "/_rules/workload_group", b); code != 200 {
			t.Fatalf("rule %d: %d %s", i, code, body)
		}
	}
	var page struct {
		Rules       []map[string]any `json:"rules"`
		SearchAfter []string         `json:"search_after"`
	}
	_, body = simtest.Call(t, s, "GET", "/_rules/workload_group", "")
	if err := json.Unmarshal([]byte(body), &page); err != nil || len(page.Rules) != rest.RulesPageSize || len(page.SearchAfter) != 1 {
		t.Fatalf("first page: %d rules, search_after %v: %v", len(page.Rules), page.SearchAfter, err)
	}
	_, body = simtest.Call(t, s, "GET", "/_rules/workload_group?search_after="+page.SearchAfter[0], "")
	page.SearchAfter = nil
	if err := json.Unmarshal([]byte(body), &page); err != nil || len(page.Rules) != 3 || page.SearchAfter != nil {
		t.Fatalf("second page: %d rules, search_after %v: %v", len(page.Rules), page.SearchAfter, err)
	}
	if p, ok := page.Rules[0]["principal"].(map[string]any); !ok || fmt.Sprint(p["username"]) != "[u]" {
		t.Errorf("principal not kept: %v", page.Rules[0])
	}
}

func TestScenarioVersionAndPlugins(t *testing.T) {
	tests := []struct {
		version string
		plugins []string
		want    string
	}{
		{"2.17.0", []string{scenario.PluginWorkloadManagement}, "workload-management needs OpenSearch 2.18 or later"},
		{"2.19.0", []string{"security-analytics"}, `"security-analytics": the simulator serves only`},
		{"2.19.0", []string{scenario.PluginWorkloadManagement, scenario.PluginWorkloadManagement}, "listed twice"},
		{"two", nil, "want major.minor.patch"},
		{"3.1.0", []string{scenario.PluginWorkloadManagement}, ""},
	}
	for _, tc := range tests {
		_, err := scenario.ParseScenario([]byte(simtest.WlmScenario(tc.version, tc.plugins...)))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %v: got %v, want %q", tc.version, tc.plugins, err, tc.want)
		}
	}
	s := simtest.MustSim(t, simtest.WlmScenario("3.1.0"))
	if _, body := simtest.Call(t, s, "GET", "/", ""); !strings.Contains(body, `"number":"3.1.0"`) {
		t.Errorf("GET / does not answer as 3.1.0: %s", body)
	}
}
