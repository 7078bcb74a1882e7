package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestEvaluateModes(t *testing.T) {
	// jvm: node thresholds 0.8 / 0.9. soft (0.5) rejects above 0.40 and cancels above 0.45; hard
	// (0.2) above 0.16 / 0.18; monitor (0.1) never acts; genPop keeps 0.2 (0.16 / 0.18).
	base := Definitions{
		Sandboxes: []Sandbox{sb("soft", "s", 0.5, Soft), sb("hard", "h", 0.2, Hard), sb("mon", "m", 0.1, Monitor)},
		Resources: ClusterResources{JVM: &ResourceLimit{Threshold: Thresholds{Rejection: 0.8, Cancellation: 0.9}}},
	}
	monitorJVM := base
	monitorJVM.Resources = ClusterResources{JVM: &ResourceLimit{Threshold: Thresholds{Rejection: 0.8, Cancellation: 0.9}, Enforcement: Monitor}}
	tests := []struct {
		name      string
		defs      Definitions
		sandbox   string
		usage     float64
		node      float64
		action    Action
		mode      Enforcement
		reasonHas string
	}{
		{"soft over its limit on a calm node: allowed", base, "soft", 0.6, 0.7, ActionNone, Soft, "allowed while the node is under its thresholds"},
		{"soft over its rejection limit, node over rejection: reject", base, "soft", 0.42, 0.85, ActionReject, Soft, "reject above 0.400"},
		{"soft over its cancellation limit, node over rejection only: reject", base, "soft", 0.6, 0.85, ActionReject, Soft, "node at 0.850"},
		{"soft over its cancellation limit, node over cancellation: cancel", base, "soft", 0.6, 0.95, ActionCancel, Soft, "cancel above 0.450"},
		{"soft within its limits on a node in duress: nothing", base, "soft", 0.3, 0.95, ActionNone, Soft, "within its limits"},
		{"hard over its cancellation limit on a calm node: cancel", base, "hard", 0.19, 0.3, ActionCancel, Hard, "whatever the node's state"},
		{"hard over its rejection limit only: reject", base, "hard", 0.17, 0.3, ActionReject, Hard, "reject its new tasks"},
		{"hard within its limits: nothing", base, "hard", 0.15, 0.95, ActionNone, Hard, "within its limits"},
		{"monitor far over on a node in duress: report only", base, "mon", 0.5, 0.99, ActionNone, Monitor, "over its limits, reported only"},
		{"cluster mode replaces the sandbox's", monitorJVM, "hard", 0.19, 0.3, ActionNone, Monitor, "reported only"},
		{"genPop over what the sandboxes leave, node in duress: cancel", base, GenPop, 0.19, 0.95, ActionCancel, Soft, "allocation 0.200"},
		{"genPop over on a calm node: allowed", base, GenPop, 0.19, 0.5, ActionNone, Soft, "allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			usage := NodeUsage{"n1": {Total: Usage{JVM: tc.node}, Sandboxes: map[string]Usage{tc.sandbox: {JVM: tc.usage}}}}
			rep := Evaluate(usage, tc.defs)
			var f *Finding
			for i := range rep.Findings {
				if rep.Findings[i].Sandbox == tc.sandbox && rep.Findings[i].Resource == JVM {
					f = &rep.Findings[i]
				}
			}
			if f == nil {
				t.Fatalf("no jvm finding for %s in %+v", tc.sandbox, rep.Findings)
			}
			if f.Action != tc.action || f.Mode != tc.mode {
				t.Errorf("got %s/%s, want %s/%s (%s)", f.Action, f.Mode, tc.action, tc.mode, f.Reason)
			}
			if !strings.Contains(f.Reason, tc.reasonHas) {
				t.Errorf("reason %q does not contain %q", f.Reason, tc.reasonHas)
			}
		})
	}
}

func TestEvaluateReportShape(t *testing.T) {
	defs := Definitions{Sandboxes: []Sandbox{
		{Name: "a", Attributes: Attributes{Role: "x"}, Resources: Allocations{CPU: alloc(0.3)}, Enforcement: Hard},
		sb("b", "y", 0.2, Soft),
	}}
	usage := NodeUsage{
		"n2": {Total: Usage{JVM: 0.5, CPU: 0.5}, Sandboxes: map[string]Usage{"a": {CPU: 0.4}, "ghost": {CPU: 0.1}}},
		"n1": {Total: Usage{JVM: 0.5, CPU: 0.5}},
	}
	rep := Evaluate(usage, defs)
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Node+"/"+f.Sandbox+"/"+string(f.Resource))
	}
	// Nodes sorted; sandboxes in definition order, each on its own resources; genPop last, on every
	// resource some sandbox limits; default thresholds 0.8 / 0.9 when the schema has none.
	want := []string{"n1/a/cpu", "n1/b/jvm", "n1/genPop/jvm", "n1/genPop/cpu", "n2/a/cpu", "n2/b/jvm", "n2/genPop/jvm", "n2/genPop/cpu"}
	if !slices.Equal(got, want) {
		t.Errorf("findings got %v, want %v", got, want)
	}
	if !slices.Equal(rep.Unknown, []string{"n2/ghost"}) {
		t.Errorf("unknown got %v, want [n2/ghost]", rep.Unknown)
	}
	acts := rep.Actions()
	if len(acts) != 1 || acts[0].Node != "n2" || acts[0].Sandbox != "a" || acts[0].Action != ActionCancel {
		t.Errorf("actions got %+v, want one cancel of a on n2", acts)
	}
	if f := rep.Findings[0]; f.Rejection != defaultRejection || f.Cancellation != defaultCancellation {
		t.Errorf("thresholds got %v/%v, want the defaults %v/%v", f.Rejection, f.Cancellation, defaultRejection, defaultCancellation)
	}
	if f := rep.Findings[3]; f.Allocation < 0.7-1e-9 || f.Allocation > 0.7+1e-9 {
		t.Errorf("genPop cpu allocation got %v, want 0.7", f.Allocation)
	}
}
