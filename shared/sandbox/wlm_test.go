package sandbox

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// specSchemas loads the official API spec's workload-management schemas.
func specSchemas(t *testing.T) map[string]*base.Schema {
	t.Helper()
	raw, err := os.ReadFile("../../third_party/opensearch-api-spec/spec/schemas/wlm._common.yaml")
	if err != nil {
		t.Fatalf("read wlm schemas: %v", err)
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("parse wlm schemas: %v", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build wlm schemas: %v", err)
	}
	out := map[string]*base.Schema{}
	for name, proxy := range model.Model.Components.Schemas.FromOldest() {
		out[name] = proxy.Schema()
	}
	return out
}

func TestToWLM(t *testing.T) {
	defs, err := Parse([]byte(rfcExample))
	if err != nil {
		t.Fatalf("parse RFC example: %v", err)
	}
	defs.Sandboxes = append(defs.Sandboxes, Sandbox{Name: "watchers", Attributes: Attributes{UserName: "w"},
		Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Monitor})
	groups := ToWLM(defs)
	f := func(v float64) *float64 { return &v }
	want := []WorkloadGroup{
		{Name: "analysts", ResiliencyMode: "soft", ResourceLimits: ResourceLimits{CPU: f(0.3), Memory: f(0.5)}},
		{Name: "operations", ResiliencyMode: "enforced", ResourceLimits: ResourceLimits{Memory: f(0.25)}},
		{Name: "watchers", ResiliencyMode: "monitor", ResourceLimits: ResourceLimits{CPU: f(0.1)}},
	}
	gotJSON, _ := json.Marshal(groups)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("ToWLM got %s, want %s", gotJSON, wantJSON)
	}

	schemas := specSchemas(t)
	create := schemas["QueryGroupCreate"]
	limits := schemas["ResourceLimitsSchema"]
	if create == nil || limits == nil {
		t.Fatalf("spec lacks QueryGroupCreate or ResourceLimitsSchema")
	}
	validator := schema_validation.NewSchemaValidator()
	for _, g := range groups {
		body, err := json.Marshal(g)
		if err != nil {
			t.Fatalf("marshal %s: %v", g.Name, err)
		}
		if ok, errs := validator.ValidateSchemaBytes(create, body); !ok {
			for _, e := range errs {
				t.Errorf("%s: %s: %v", g.Name, body, e)
			}
		}
		// The schema allows extra properties, so check every field name against it as well.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatalf("unmarshal %s: %v", body, err)
		}
		for k, v := range fields {
			if _, ok := create.Properties.Get(k); !ok {
				t.Errorf("%s: field %q is not in QueryGroupCreate", g.Name, k)
			}
			if k != "resource_limits" {
				continue
			}
			var rl map[string]float64
			if err := json.Unmarshal(v, &rl); err != nil {
				t.Fatalf("unmarshal resource_limits %s: %v", v, err)
			}
			for r := range rl {
				if _, ok := limits.Properties.Get(r); !ok {
					t.Errorf("%s: resource %q is not in ResourceLimitsSchema", g.Name, r)
				}
			}
		}
	}

	// The validator must refuse what the plugin would: the sandboxing RFC's "hard" is not a resiliency mode.
	bad := []byte(`{"name":"x","resiliency_mode":"hard","resource_limits":{"memory":0.1}}`)
	if ok, _ := validator.ValidateSchemaBytes(create, bad); ok {
		t.Errorf("schema accepted resiliency_mode hard; the check above proves nothing")
	}
	var modes []string
	for _, n := range schemas["ResiliencyMode"].Enum {
		modes = append(modes, n.Value)
	}
	for _, m := range resiliencyModes {
		if !slices.Contains(modes, m) {
			t.Errorf("mode %q not in the spec's ResiliencyMode %v", m, modes)
		}
	}
}
