package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rfcExample is the two-sandbox example of the OpenSearch "[RFC] Search Query Sandboxing" (from its design doc), made valid JSON, with the
// cluster resource schema of its 85 % / 95 % example. Allocations are strings, as in that RFC.
const rfcExample = `{
  "sandboxes": [
    {"name": "analysts", "attributes": {"role": "ba-*"},
     "resources": {"jvm": {"allocation": "0.5"}, "cpu": {"allocation": "0.3"}}, "enforcement": "soft"},
    {"name": "operations", "attributes": {"role": "tellers", "indices_name": "transactions-*"},
     "resources": {"jvm": {"allocation": "0.25"}}, "enforcement": "hard"}
  ],
  "resources": {
    "jvm": {"threshold": {"rejection": 0.85, "cancellation": 0.95}, "enforcement": "soft"},
    "cpu": {"threshold": {"rejection": 0.85, "cancellation": 0.95}}
  }
}`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr string // substring; empty means success
		check   func(*testing.T, Definitions)
	}{
		{
			name: "RFC example with string allocations",
			doc:  rfcExample,
			check: func(t *testing.T, d Definitions) {
				if len(d.Sandboxes) != 2 {
					t.Fatalf("sandboxes got %d, want 2", len(d.Sandboxes))
				}
				a := d.Sandboxes[0].Resources
				if a.JVM.Allocation != 0.5 || a.CPU.Allocation != 0.3 || d.Sandboxes[1].Resources.JVM.Allocation != 0.25 {
					t.Errorf("allocations got %v/%v/%v, want 0.5/0.3/0.25", a.JVM.Allocation, a.CPU.Allocation, d.Sandboxes[1].Resources.JVM.Allocation)
				}
				if d.Sandboxes[1].Resources.CPU != nil {
					t.Errorf("operations cpu got %v, want no limit", d.Sandboxes[1].Resources.CPU)
				}
				if d.Resources.JVM.Threshold.Cancellation != 0.95 || d.Resources.JVM.Enforcement != Soft {
					t.Errorf("jvm schema got %+v", *d.Resources.JVM)
				}
			},
		},
		{
			name: "number allocations, no cluster schema",
			doc:  `{"sandboxes":[{"name":"a","attributes":{"user_name":"alice"},"resources":{"cpu":{"allocation":0.4}},"enforcement":"monitor"}]}`,
			check: func(t *testing.T, d Definitions) {
				if got := d.Resources.limit(CPU).Threshold; got.Rejection != defaultRejection || got.Cancellation != defaultCancellation {
					t.Errorf("default thresholds got %+v, want %v/%v", got, defaultRejection, defaultCancellation)
				}
			},
		},
		{name: "empty document is valid", doc: `{}`},
		{name: "unknown sandbox field", doc: `{"sandboxes":[{"name":"a","priority":1}]}`, wantErr: `unknown field "priority"`},
		{name: "per-sandbox threshold out of range", doc: `{"sandboxes":[{"name":"a","attributes":{"role":"r"},"resources":{"jvm":{"allocation":0.1,"threshold":1.2}},"enforcement":"soft"}]}`, wantErr: `sandboxes[a].resources.jvm.threshold = 1.2`},
		{name: "array with an unknown field", doc: `[{"name":"a","attributes":{"role":"r"},"resources":{"jvm":{"allocation":0.1}},"enforcement":"soft","priority":1}]`, wantErr: `unknown field "priority"`},
		{name: "array over-allocated", doc: `[{"name":"a","attributes":{"custom_id":"a"},"resources":{"jvm":{"allocation":0.6}},"enforcement":"soft"},{"name":"b","attributes":{"custom_id":"b"},"resources":{"jvm":{"allocation":"0.5"}},"enforcement":"hard"}]`, wantErr: "jvm allocations of sandboxes a, b sum to 1.1, over 1.0 (100 %)"},
		{name: "a leading comma is not repaired", doc: `[,]`, wantErr: "invalid character ','"},
		{name: "array with data after it", doc: `[] []`, wantErr: "trailing data after the JSON document"},
		{name: "unknown resource", doc: `{"sandboxes":[{"name":"a","attributes":{"role":"r"},"resources":{"disk":{"allocation":0.1}},"enforcement":"soft"}]}`, wantErr: `unknown field "disk"`},
		{name: "unknown attribute", doc: `{"sandboxes":[{"name":"a","attributes":{"tenant":"r"}}]}`, wantErr: `unknown field "tenant"`},
		{name: "trailing data", doc: `{} {}`, wantErr: "trailing data after the JSON document"},
		{name: "allocation not a number", doc: `{"sandboxes":[{"resources":{"jvm":{"allocation":"half"}}}]}`, wantErr: "want a number"},
		{name: "NaN in a string", doc: `{"sandboxes":[{"resources":{"jvm":{"allocation":"NaN"}}}]}`, wantErr: "want a number"},
		{name: "decodes but breaks a tenet", doc: `{"sandboxes":[{"name":"a","attributes":{"role":"r"},"resources":{"jvm":{"allocation":1.5}},"enforcement":"soft"}]}`, wantErr: "sandboxes[a].resources.jvm.allocation = 1.5"},
		{name: "neither an object nor an array", doc: `"sandboxes"`, wantErr: "want an object, got string"},
		{
			name: "per-sandbox threshold",
			doc:  `{"sandboxes":[{"name":"a","attributes":{"role":"r"},"resources":{"jvm":{"allocation":0.1,"threshold":"0.2"}},"enforcement":"soft"}]}`,
			check: func(t *testing.T, d Definitions) {
				if th := d.Sandboxes[0].Resources.JVM.Threshold; th == nil || *th != 0.2 {
					t.Errorf("threshold got %v, want 0.2", th)
				}
			},
		},
		{
			name: "plain array of sandboxes, trailing commas",
			doc:  `[{"name":"a","attributes":{"custom_id":"x",},"resources":{"cpu":{"allocation":0.4},},"enforcement":"hard"},]`,
			check: func(t *testing.T, d Definitions) {
				if len(d.Sandboxes) != 1 || d.Sandboxes[0].Attributes.CustomID != "x" || d.Sandboxes[0].Resources.CPU.Allocation != 0.4 {
					t.Errorf("got %+v", d.Sandboxes)
				}
				if d.Resources.CPU != nil || d.Resources.JVM != nil {
					t.Errorf("cluster schema got %+v, want none (defaults)", d.Resources)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.doc))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() error = %v, want nil", err)
				}
				if tc.check != nil {
					tc.check(t, d)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse() error = %v, want one containing %q", err, tc.wantErr)
			}
			if d.Sandboxes != nil {
				t.Errorf("Parse() returned %d sandboxes with an error, want none", len(d.Sandboxes))
			}
		})
	}
}

// describe turns each violation into "Type:detail" so cases can list what they expect.
func describe(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var (
			fe *FieldError
			dn *DuplicateNameError
			da *DuplicateAttributesError
			ov *OverlapError
			oa *OverAllocationError
			re *RangeError
			ee *EnforcementError
			te *ThresholdOrderError
		)
		switch {
		case errors.As(e, &fe):
			out = append(out, "Field:"+fe.Field)
		case errors.As(e, &dn):
			out = append(out, fmt.Sprintf("DuplicateName:%s×%d", dn.Name, dn.Count))
		case errors.As(e, &da):
			out = append(out, "DuplicateAttributes:"+strings.Join(da.Sandboxes, ","))
		case errors.As(e, &ov):
			out = append(out, "Overlap:"+ov.Sandboxes[0]+","+ov.Sandboxes[1])
		case errors.As(e, &oa):
			out = append(out, fmt.Sprintf("OverAllocation:%s:%s", oa.Resource, strings.Join(oa.Sandboxes, ",")))
		case errors.As(e, &re):
			out = append(out, "Range:"+re.Field)
		case errors.As(e, &ee):
			out = append(out, "Enforcement:"+ee.Field)
		case errors.As(e, &te):
			out = append(out, "ThresholdOrder:"+string(te.Resource))
		default:
			out = append(out, fmt.Sprintf("untyped:%v", e))
		}
	}
	return out
}

func alloc(v float64) *Allocation { return &Allocation{Allocation: Fraction(v)} }

func sb(name, role string, jvm float64, mode Enforcement) Sandbox {
	return Sandbox{Name: name, Attributes: Attributes{Role: role}, Resources: Allocations{JVM: alloc(jvm)}, Enforcement: mode}
}

func TestValidateTenets(t *testing.T) {
	limit := func(rej, can float64, mode Enforcement) *ResourceLimit {
		return &ResourceLimit{Threshold: Thresholds{Rejection: Fraction(rej), Cancellation: Fraction(can)}, Enforcement: mode}
	}
	tests := []struct {
		name string
		defs Definitions
		want []string
	}{
		{
			name: "valid",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0.5, Soft), sb("b", "y", 0.5, Hard)},
				Resources: ClusterResources{JVM: limit(0.85, 0.95, ""), CPU: limit(0.9, 0.9, Monitor)}},
		},
		{
			name: "names are unique",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0.1, Soft), sb("a", "y", 0.1, Soft), sb("a", "z", 0.1, Soft)}},
			want: []string{"DuplicateName:a×3"},
		},
		{
			name: "names are not empty",
			defs: Definitions{Sandboxes: []Sandbox{sb(" ", "x", 0.1, Soft)}},
			want: []string{"Field:sandboxes[0].name"},
		},
		{
			name: "genPop is reserved",
			defs: Definitions{Sandboxes: []Sandbox{sb(GenPop, "x", 0.1, Soft)}},
			want: []string{"Field:sandboxes[genPop].name"},
		},
		{
			name: "attribute sets are unique, whatever the order and spacing",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "ba-*,tellers", 0.1, Soft), sb("b", "x", 0.1, Soft), sb("c", "tellers, ba-*", 0.1, Hard)}},
			want: []string{"DuplicateAttributes:a,c"},
		},
		{
			name: "overlapping wildcards tie",
			defs: Definitions{Sandboxes: []Sandbox{
				{Name: "all", Attributes: Attributes{IndicesName: "reports-*"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
				{Name: "b", Attributes: Attributes{IndicesName: "reports-b*"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Hard},
			}},
			want: []string{"Overlap:all,b"},
		},
		{
			name: "disjoint wildcards and an exact name beside a wildcard do not tie",
			defs: Definitions{Sandboxes: []Sandbox{
				{Name: "a", Attributes: Attributes{IndicesName: "reports-a*"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
				{Name: "b", Attributes: Attributes{IndicesName: "reports-b*"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
				{Name: "c", Attributes: Attributes{IndicesName: "reports-b1"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
			}},
		},
		{
			name: "overlap needs every attribute to meet",
			defs: Definitions{Sandboxes: []Sandbox{
				{Name: "a", Attributes: Attributes{IndicesName: "reports-*", Role: "x"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
				{Name: "b", Attributes: Attributes{IndicesName: "reports-b*", Role: "y"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
				{Name: "c", Attributes: Attributes{IndicesName: "reports-b*", Role: "x"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
			}},
			want: []string{"Overlap:a,c"},
		},
		{
			name: "a more specific attribute set is distinct",
			defs: Definitions{Sandboxes: []Sandbox{
				sb("a", "tellers", 0.1, Soft),
				{Name: "b", Attributes: Attributes{Role: "tellers", IndicesName: "tx-*"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Soft},
			}},
		},
		{
			name: "allocations of a resource sum to at most 1",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0.6, Soft), sb("b", "y", 0.45, Soft)}},
			want: []string{"OverAllocation:jvm:a,b"},
		},
		{
			name: "a sum of exactly 1 with float error passes",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0.1, Soft), sb("b", "y", 0.2, Soft), sb("c", "z", 0.7, Soft)}},
		},
		{
			name: "resources are summed separately",
			defs: Definitions{Sandboxes: []Sandbox{
				{Name: "a", Attributes: Attributes{Role: "x"}, Resources: Allocations{JVM: alloc(0.9), CPU: alloc(0.2)}, Enforcement: Soft},
				{Name: "b", Attributes: Attributes{Role: "y"}, Resources: Allocations{JVM: alloc(0.1), CPU: alloc(0.9)}, Enforcement: Soft},
			}},
			want: []string{"OverAllocation:cpu:a,b"},
		},
		{
			name: "allocations in range",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0, Soft), sb("b", "y", -0.1, Soft)}},
			want: []string{"Range:sandboxes[a].resources.jvm.allocation", "Range:sandboxes[b].resources.jvm.allocation"},
		},
		{
			name: "known enforcement modes",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0.1, "strict"), sb("b", "y", 0.1, "")}},
			want: []string{"Enforcement:sandboxes[a].enforcement", "Enforcement:sandboxes[b].enforcement"},
		},
		{
			name: "rejection at most cancellation",
			defs: Definitions{Resources: ClusterResources{CPU: limit(0.95, 0.9, "")}},
			want: []string{"ThresholdOrder:cpu"},
		},
		{
			name: "thresholds in range, cluster mode known",
			defs: Definitions{Resources: ClusterResources{JVM: limit(0, 1.2, "always")}},
			want: []string{"Range:resources.jvm.threshold.rejection", "Range:resources.jvm.threshold.cancellation", "Enforcement:resources.jvm.enforcement"},
		},
		{
			name: "at least one attribute, no empty entries",
			defs: Definitions{Sandboxes: []Sandbox{
				{Name: "a", Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
				{Name: "b", Attributes: Attributes{IndicesName: "x,,y"}, Resources: Allocations{JVM: alloc(0.1)}, Enforcement: Soft},
			}},
			want: []string{"Field:sandboxes[a].attributes", "Field:sandboxes[b].attributes.indices_name"},
		},
		{
			name: "at least one resource",
			defs: Definitions{Sandboxes: []Sandbox{{Name: "a", Attributes: Attributes{Role: "x"}, Enforcement: Soft}}},
			want: []string{"Field:sandboxes[a].resources"},
		},
		{
			name: "every violation reported",
			defs: Definitions{Sandboxes: []Sandbox{sb("a", "x", 0.7, "loud"), sb("a", "x", 0.7, Soft)}},
			want: []string{"Enforcement:sandboxes[a].enforcement", "DuplicateName:a×2", "DuplicateAttributes:a,a", "OverAllocation:jvm:a,a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(tc.defs.Validate())
			if !slices.Equal(got, tc.want) {
				t.Errorf("violations got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorMessagesNameTheCulprits(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"duplicate attributes", &DuplicateAttributesError{Sandboxes: []string{"a", "c"}, Attributes: "role=x"}, "sandboxes a, c share the attributes role=x"},
		{"over-allocation", &OverAllocationError{Resource: JVM, Total: 1.05, Sandboxes: []string{"a", "b"}}, "jvm allocations of sandboxes a, b sum to 1.05, over 1.0"},
		{"threshold order", &ThresholdOrderError{Resource: CPU, Rejection: 0.95, Cancellation: 0.9}, "resources.cpu.threshold: rejection 0.95 is above cancellation 0.9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("Error() got %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
