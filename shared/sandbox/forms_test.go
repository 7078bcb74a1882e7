package sandbox

import (
	"math"
	"os"
	"strings"
	"testing"
)

// TestRFCExampleDocument reads the "Two Sandboxes defined for memory and CPU" example of the
// OpenSearch "[RFC] Search Query Sandboxing: User Experience" byte for byte, trailing comma
// included.
func TestRFCExampleDocument(t *testing.T) {
	data, err := os.ReadFile("testdata/rfc-example.json")
	if err != nil {
		t.Fatal(err)
	}
	d, warns, err := ParseDocument(data)
	if err != nil {
		t.Fatalf("ParseDocument: %v", err)
	}
	if len(d.Sandboxes) != 2 || d.Sandboxes[0].Name != "analysts" || d.Sandboxes[1].Name != "operations" {
		t.Fatalf("sandboxes got %+v", d.Sandboxes)
	}
	if d.Sandboxes[0].Resources.CPU.Allocation != 0.3 || d.Sandboxes[1].Resources.JVM.Allocation != 0.25 || d.Sandboxes[1].Enforcement != Hard {
		t.Errorf("values got %+v", d.Sandboxes)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.String())
	}
	want := []string{
		`line 13: trailing comma before '}'`,
		`sandboxes[analysts].attributes.role: the tasks API does not show a task's role`,
		`sandboxes[operations].attributes.role: the tasks API does not show a task's role`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings got %d:\n%s\nwant %d", len(got), strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d got %q, want it to start %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[1], "workload management") {
		t.Errorf("warning does not say what enforces the sandbox instead: %q", got[1])
	}
}

func TestDropTrailingCommas(t *testing.T) {
	tests := []struct {
		in, want string
		warns    int
	}{
		{`{"a":1,}`, `{"a":1}`, 1},
		{"[1,\n 2 ,\n ]", "[1,\n 2 \n ]", 1},
		{`{"a":",}",}`, `{"a":",}"}`, 1},
		{`{"a":"\",]"}`, `{"a":"\",]"}`, 0},
		{`[,]`, `[,]`, 0},
		{`[1,,]`, `[1,,]`, 0},
		{`{,}`, `{,}`, 0},
		{`[[1,],{"b":[],},]`, `[[1],{"b":[]}]`, 3},
	}
	for _, tc := range tests {
		got, warns := dropTrailingCommas([]byte(tc.in))
		if string(got) != tc.want || len(warns) != tc.warns {
			t.Errorf("dropTrailingCommas(%q) = %q with %d warnings, want %q with %d", tc.in, got, len(warns), tc.want, tc.warns)
		}
	}
}

func TestUnobservable(t *testing.T) {
	d := Definitions{Sandboxes: []Sandbox{
		{Name: "seen", Attributes: Attributes{CustomID: "x", IndicesName: "logs-*"}},
		{Name: "user", Attributes: Attributes{UserName: "alice"}},
		{Name: "both", Attributes: Attributes{UserName: "bob", Role: "r", CustomID: "y"}},
	}}
	var fields []string
	for _, w := range Unobservable(d) {
		fields = append(fields, w.Field)
	}
	want := "sandboxes[user].attributes.user_name sandboxes[both].attributes.user_name sandboxes[both].attributes.role"
	if got := strings.Join(fields, " "); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSandboxThreshold: a sandbox's own threshold sets its limits; the node's duress still
// comes from the node's thresholds.
func TestSandboxThreshold(t *testing.T) {
	own := Fraction(0.5)
	defs := Definitions{Sandboxes: []Sandbox{
		{Name: "a", Attributes: Attributes{CustomID: "a"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.4, Threshold: &own}}, Enforcement: Soft},
		{Name: "b", Attributes: Attributes{CustomID: "b"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.4}}, Enforcement: Soft},
	}}
	usage := NodeUsage{"n1": {Total: Usage{CPU: 0.95}, Sandboxes: map[string]Usage{"a": {CPU: 0.3}, "b": {CPU: 0.3}}}}
	rep := Evaluate(usage, defs)
	byName := map[string]Finding{}
	for _, f := range rep.Findings {
		byName[f.Sandbox] = f
	}
	a, b := byName["a"], byName["b"]
	if a.CancelAbove != 0.2 || a.RejectAbove != 0.2 || a.SandboxThreshold != 0.5 || a.Action != ActionCancel {
		t.Errorf("a got %+v, want limits 0.2 and cancel", a)
	}
	if math.Abs(b.CancelAbove-0.36) > 1e-12 || b.Action != ActionNone {
		t.Errorf("b got %+v, want the node's 0.9 proportion (0.36) and no action", b)
	}
	if a.Cancellation != 0.9 || a.Rejection != 0.8 {
		t.Errorf("a's node thresholds got %v/%v, want the node's 0.8/0.9", a.Rejection, a.Cancellation)
	}
}
