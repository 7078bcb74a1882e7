package sandbox

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDetectWLM(t *testing.T) {
	all := map[string]bool{QueryGroupAPI.GroupsPath(): true, WorkloadGroupAPI.GroupsPath(): true, RulesPath: true}
	tests := []struct {
		version   string
		found     map[string]bool
		probes    []string
		api       WLMAPI
		rules     bool
		principal bool
		reason    string // substring
	}{
		{version: "2.17.1", found: all, probes: nil, reason: "arrived in 2.18"},
		{version: "2.18.0", found: all, probes: []string{"/_wlm/query_group"}, api: QueryGroupAPI, reason: "workload-group header"},
		{version: "2.19.3", found: map[string]bool{}, probes: []string{"/_wlm/query_group"}, reason: "plugin is not installed"},
		{version: "3.0.0", found: map[string]bool{"/_wlm/query_group": true}, probes: []string{"/_wlm/query_group", RulesPath}, api: QueryGroupAPI, reason: "but not /_rules/workload_group"},
		{version: "3.1.0", found: all, probes: []string{"/_wlm/workload_group", RulesPath}, api: WorkloadGroupAPI, rules: true, reason: "principal rules arrived in 3.3"},
		{version: "3.1.0", found: map[string]bool{"/_wlm/query_group": true}, probes: []string{"/_wlm/workload_group", RulesPath}, reason: "no handler for /_wlm/workload_group"},
		{version: "3.3.0-SNAPSHOT", found: all, probes: []string{"/_wlm/workload_group", RulesPath}, api: WorkloadGroupAPI, rules: true, principal: true, reason: "principal rules"},
		{version: "banana", found: all, reason: "cannot tell"},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			probes, err := WLMProbes(tc.version)
			if (err != nil) != (tc.version == "banana") {
				t.Fatalf("WLMProbes(%s) error %v", tc.version, err)
			}
			if !reflect.DeepEqual(probes, tc.probes) {
				t.Errorf("probes got %v, want %v", probes, tc.probes)
			}
			sup := DetectWLM(tc.version, tc.found)
			if sup.API != tc.api || sup.Rules != tc.rules || sup.Principal != tc.principal {
				t.Errorf("got api %q rules %v principal %v, want %q %v %v", sup.API, sup.Rules, sup.Principal, tc.api, tc.rules, tc.principal)
			}
			if !strings.Contains(sup.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", sup.Reason, tc.reason)
			}
		})
	}
}

// wlmDefs is two sandboxes and a cluster schema.
func wlmDefs() Definitions {
	return Definitions{
		Sandboxes: []Sandbox{
			{Name: "analysts", Attributes: Attributes{IndicesName: "logs-*,metrics"}, Resources: Allocations{JVM: alloc(0.3), CPU: alloc(0.2)}, Enforcement: Soft},
			{Name: "tellers", Attributes: Attributes{Role: "tellers"}, Resources: Allocations{JVM: alloc(0.25)}, Enforcement: Hard},
			{Name: "watchers", Attributes: Attributes{CustomID: "dash-*"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.1, Threshold: new(Fraction(0.7))}}, Enforcement: Monitor},
		},
		Resources: ClusterResources{JVM: &ResourceLimit{Threshold: Thresholds{Rejection: 0.85, Cancellation: 0.95}, Enforcement: Soft}},
	}
}

func TestDesiredWLM(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	v31 := WLMSupport{API: WorkloadGroupAPI, Rules: true}
	d, err := DesiredWLM(wlmDefs(), v31)
	if err != nil {
		t.Fatal(err)
	}
	wantGroups := []WorkloadGroup{
		{Name: "shardwise-analysts", ResiliencyMode: "soft", ResourceLimits: ResourceLimits{CPU: f(0.2), Memory: f(0.3)}},
		{Name: "shardwise-tellers", ResiliencyMode: "enforced", ResourceLimits: ResourceLimits{Memory: f(0.25)}},
		{Name: "shardwise-watchers", ResiliencyMode: "monitor", ResourceLimits: ResourceLimits{CPU: f(0.1)}},
	}
	if !reflect.DeepEqual(d.Groups, wantGroups) {
		g, _ := json.Marshal(d.Groups)
		t.Errorf("groups got %s", g)
	}
	wantRules := []WLMRule{{Sandbox: "analysts", RuleAttributes: RuleAttributes{Description: "shardwise sandbox analysts", IndexPattern: []string{"logs-*", "metrics"}, Group: "shardwise-analysts"}}}
	if !reflect.DeepEqual(d.Rules, wantRules) {
		t.Errorf("rules got %+v, want %+v", d.Rules, wantRules)
	}
	wantSettings := map[string]string{
		"wlm.workload_group.mode":                               "enabled",
		"wlm.workload_group.node.memory_rejection_threshold":    "0.85",
		"wlm.workload_group.node.memory_cancellation_threshold": "0.95",
		"wlm.workload_group.node.cpu_rejection_threshold":       "0.8",
		"wlm.workload_group.node.cpu_cancellation_threshold":    "0.9",
	}
	if !reflect.DeepEqual(d.Settings, wantSettings) {
		t.Errorf("settings got %v, want %v", d.Settings, wantSettings)
	}
	notes := strings.Join(d.Notes, "\n")
	for _, want := range []string{`"tellers" gets no rule: role needs principal rules`, `"watchers" gets no rule: custom_id`, `cluster-level jvm enforcement "soft" is not carried`, `sandbox "watchers"'s own cpu threshold 0.7 is not carried`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}

	// With principal rules the role becomes a rule; on 2.x there are no rules at all.
	d, _ = DesiredWLM(wlmDefs(), WLMSupport{API: WorkloadGroupAPI, Rules: true, Principal: true})
	if len(d.Rules) != 2 || !reflect.DeepEqual(d.Rules[1].Role, []string{"tellers"}) {
		t.Errorf("principal rules got %+v", d.Rules)
	}
	d, _ = DesiredWLM(wlmDefs(), WLMSupport{API: QueryGroupAPI})
	if len(d.Rules) != 0 || d.Settings["wlm.query_group.mode"] != "enabled" {
		t.Errorf("2.x got rules %+v settings %v", d.Rules, d.Settings)
	}
	// Only monitor sandboxes: the plugin monitors only.
	mon := Definitions{Sandboxes: []Sandbox{{Name: "w", Attributes: Attributes{IndicesName: "x"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Monitor}}}
	if d, _ = DesiredWLM(mon, v31); d.Settings["wlm.workload_group.mode"] != "monitor_only" {
		t.Errorf("monitor-only mode got %q", d.Settings["wlm.workload_group.mode"])
	}
}

func TestDesiredWLMRefuses(t *testing.T) {
	v31 := WLMSupport{API: WorkloadGroupAPI, Rules: true}
	tests := []struct {
		name string
		edit func(*Definitions)
		sup  WLMSupport
		want string
	}{
		{"unsupported", func(*Definitions) {}, WLMSupport{Reason: "no plugin"}, "no plugin"},
		{"long name", func(d *Definitions) { d.Sandboxes[0].Name = strings.Repeat("a", 41) }, v31, "over the plugin's 50 characters"},
		{"name not a path segment", func(d *Definitions) { d.Sandboxes[0].Name = "a/b" }, v31, "one path segment"},
		{"rejection over 0.9", func(d *Definitions) { d.Resources.JVM.Threshold.Rejection = 0.91 }, v31, "jvm rejection threshold 0.91"},
		{"cancellation over 0.95", func(d *Definitions) {
			d.Resources.CPU = &ResourceLimit{Threshold: Thresholds{Rejection: 0.8, Cancellation: 0.96}}
		}, v31, "cpu cancellation threshold 0.96"},
		{"cancellation under rejection", func(d *Definitions) {
			d.Resources.JVM.Threshold = Thresholds{Rejection: 0.9, Cancellation: 0.85}
		}, v31, "under its rejection threshold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := wlmDefs()
			tc.edit(&d)
			_, err := DesiredWLM(d, tc.sup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestRuleFor(t *testing.T) {
	sup := WLMSupport{API: WorkloadGroupAPI, Rules: true, Principal: true}
	tests := []struct {
		attrs Attributes
		rule  bool
		note  string
	}{
		{Attributes{IndicesName: "a*b"}, false, "'*' before its end"},
		{Attributes{UserName: "bob*"}, false, "principal rules match exactly"},
		{Attributes{UserName: "bob, alice", IndicesName: "x"}, true, ""},
		{Attributes{}, false, "no attribute a rule can match"},
	}
	for _, tc := range tests {
		r, note := ruleFor(Sandbox{Name: "s", Attributes: tc.attrs}, sup)
		if (r != nil) != tc.rule || !strings.Contains(note, tc.note) {
			t.Errorf("%+v: got rule %+v note %q, want rule %v note %q", tc.attrs, r, note, tc.rule, tc.note)
		}
	}
	if r, _ := ruleFor(Sandbox{Name: "s", Attributes: Attributes{UserName: "bob, alice"}}, sup); !reflect.DeepEqual(r.Username, []string{"alice", "bob"}) {
		t.Errorf("usernames got %v", r.Username)
	}
}

// TestDiffWLM: drift is data (kind, name, field, want, have), and only owned groups and rules count.
func TestDiffWLM(t *testing.T) {
	want, err := DesiredWLM(wlmDefs(), WLMSupport{API: WorkloadGroupAPI, Rules: true})
	if err != nil {
		t.Fatal(err)
	}
	have := WLMState{
		Groups: []LiveGroup{
			{ID: "A", Name: "shardwise-analysts", ResiliencyMode: "enforced", ResourceLimits: map[string]float64{"cpu": 0.2, "memory": 0.30000000001}},
			{ID: "T", Name: "shardwise-tellers", ResiliencyMode: "enforced", ResourceLimits: map[string]float64{"memory": 0.25, "cpu": 0.1}},
			{ID: "O", Name: "shardwise-old", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.1}},
			{ID: "F", Name: "batch", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.1}},
		},
		Rules: []LiveRule{
			{ID: "r1", RuleAttributes: RuleAttributes{Description: "shardwise sandbox analysts", IndexPattern: []string{"metrics", "logs-*"}, Group: "T"}},
			{ID: "r2", RuleAttributes: RuleAttributes{Description: "shardwise sandbox old", IndexPattern: []string{"old"}, Group: "O"}},
			{ID: "r3", RuleAttributes: RuleAttributes{Description: "hand-made", IndexPattern: []string{"x"}, Group: "F"}},
		},
		Settings: map[string]string{
			"wlm.workload_group.mode":                               "monitor_only",
			"wlm.workload_group.node.memory_rejection_threshold":    "0.850",
			"wlm.workload_group.node.memory_cancellation_threshold": "0.95",
			"wlm.workload_group.node.cpu_rejection_threshold":       "0.8",
		},
	}
	got := DiffWLM(want, have)
	wantDrift := []Drift{
		{"group", "shardwise-analysts", "resiliency_mode", "soft", "enforced"},
		{"group", "shardwise-old", "group", "absent", "present"},
		{"group", "shardwise-tellers", "resource_limits.cpu", "absent", "0.1"},
		{"group", "shardwise-watchers", "group", "present", "absent"},
		{"rule", "analysts", "workload_group", "shardwise-analysts", "shardwise-tellers"},
		{"rule", "old", "rule", "absent", "present"},
		{"setting", "wlm.workload_group.mode", "value", "enabled", "monitor_only"},
		{"setting", "wlm.workload_group.node.cpu_cancellation_threshold", "value", "0.9", "absent"},
	}
	if !reflect.DeepEqual(got, wantDrift) {
		for _, d := range got {
			t.Logf("got %s", d)
		}
		t.Errorf("drift differs")
	}
}

func TestPlanWLMGroups(t *testing.T) {
	want, err := DesiredWLM(wlmDefs(), WLMSupport{API: QueryGroupAPI})
	if err != nil {
		t.Fatal(err)
	}
	have := WLMState{
		Groups: []LiveGroup{
			// analysts gives up cpu 0.5 → 0.2: lowered first, before watchers is created.
			{ID: "A", Name: "shardwise-analysts", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.5, "memory": 0.3}},
			// tellers has a cpu limit the definitions dropped: delete, then create.
			{ID: "T", Name: "shardwise-tellers", ResiliencyMode: "enforced", ResourceLimits: map[string]float64{"memory": 0.25, "cpu": 0.1}},
			{ID: "O", Name: "shardwise-old", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"memory": 0.4}},
			{ID: "F", Name: "batch", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.3}},
		},
		Settings: want.Settings,
	}
	plan, err := PlanWLMGroups(WLMSupport{Version: "2.19.0", API: QueryGroupAPI}, want, have)
	if err != nil {
		t.Fatal(err)
	}
	calls := plan.Calls
	var got []string
	for _, c := range calls {
		got = append(got, c.Method+" "+c.Path)
	}
	wantCalls := []string{
		"DELETE /_wlm/query_group/shardwise-old",
		"DELETE /_wlm/query_group/shardwise-tellers",
		"PUT /_wlm/query_group/shardwise-analysts",
		"PUT /_wlm/query_group",
		"PUT /_wlm/query_group",
	}
	if !reflect.DeepEqual(got, wantCalls) {
		t.Fatalf("calls got %v, want %v", got, wantCalls)
	}
	if b, _ := json.Marshal(calls[2].Body); string(b) != `{"resiliency_mode":"soft","resource_limits":{"cpu":0.2,"memory":0.3}}` {
		t.Errorf("update body %s", b)
	}
	if !strings.Contains(calls[1].Reason, "drops its cpu limit, which an update cannot remove") {
		t.Errorf("tellers delete reason %q", calls[1].Reason)
	}
	// Settings drift makes one settings call first.
	have.Settings = map[string]string{}
	if plan, _ = PlanWLMGroups(WLMSupport{Version: "2.19.0", API: QueryGroupAPI}, want, have); plan.Calls[0].Path != "/_cluster/settings" {
		t.Errorf("first call %v, want the settings", calls[0])
	}
	// Groups shardwise does not own hold capacity: 0.3 cpu + the sandboxes' 0.3 fits, 0.8 does not.
	have.Groups[3].ResourceLimits["cpu"] = 0.8
	if _, err := PlanWLMGroups(WLMSupport{Version: "2.19.0", API: QueryGroupAPI}, want, have); err == nil || !strings.Contains(err.Error(), "cpu limits (0.3) and the groups shardwise does not own (0.8) sum over 1") {
		t.Errorf("got %v, want the capacity refusal", err)
	}
}

func TestPlanWLMRules(t *testing.T) {
	defs := wlmDefs()
	want, err := DesiredWLM(defs, WLMSupport{API: WorkloadGroupAPI, Rules: true, Principal: true})
	if err != nil {
		t.Fatal(err)
	}
	have := WLMState{
		Groups: []LiveGroup{{ID: "A", Name: "shardwise-analysts"}},
		Rules: []LiveRule{
			{ID: "r1", RuleAttributes: RuleAttributes{Description: "shardwise sandbox analysts", IndexPattern: []string{"logs-*"}, Username: []string{"x"}, Group: "A"}},
			{ID: "r2", RuleAttributes: RuleAttributes{Description: "shardwise sandbox gone", IndexPattern: []string{"g"}, Group: "A"}},
			{ID: "r3", RuleAttributes: RuleAttributes{Description: "hand-made", IndexPattern: []string{"h"}, Group: "A"}},
		},
	}
	calls := PlanWLMRules(want, have)
	var got []string
	for _, c := range calls {
		got = append(got, c.Method+" "+c.Path)
	}
	wantCalls := []string{"DELETE /_rules/workload_group/r2", "DELETE /_rules/workload_group/r1", "PUT /_rules/workload_group", "PUT /_rules/workload_group"}
	if !reflect.DeepEqual(got, wantCalls) {
		t.Fatalf("calls got %v, want %v", got, wantCalls)
	}
	var bodies []string
	for _, c := range calls[2:] {
		b, _ := json.Marshal(c.Body)
		bodies = append(bodies, string(b))
	}
	wantBodies := []string{
		`{"description":"shardwise sandbox analysts","index_pattern":["logs-*","metrics"],"workload_group":"A"}`,
		`{"description":"shardwise sandbox tellers","principal":{"role":["tellers"]},"workload_group":"\u003cid of shardwise-tellers once created\u003e"}`,
	}
	if !reflect.DeepEqual(bodies, wantBodies) {
		t.Errorf("bodies got %v, want %v", bodies, wantBodies)
	}
}

func TestDiffWLMRuleAttributes(t *testing.T) {
	rule := func(index, user, role string) RuleAttributes {
		return RuleAttributes{Description: RulePrefix + "a", IndexPattern: []string{index}, Username: []string{user}, Role: []string{role}, Group: "team"}
	}
	want := WLMDesired{Rules: []WLMRule{{Sandbox: "a", RuleAttributes: rule("logs-*", "ann", "ops")}}}
	have := WLMState{
		Groups: []LiveGroup{{ID: "G", Name: "team"}},
		Rules:  []LiveRule{{ID: "r", RuleAttributes: rule("metrics", "bob", "dev")}},
	}
	have.Rules[0].Group = "G"
	got := DiffWLM(want, have)
	wantDrift := []Drift{
		{"rule", "a", "index_pattern", "[logs-*]", "[metrics]"},
		{"rule", "a", "principal.role", "[ops]", "[dev]"},
		{"rule", "a", "principal.username", "[ann]", "[bob]"},
	}
	if !reflect.DeepEqual(got, wantDrift) {
		t.Errorf("drift got %v, want %v", got, wantDrift)
	}
}

// TestPlanWLMGroupsMode: from 3.2 the plugin changes groups only in mode enabled, so when there are
// group calls and the cluster is not in it the settings call enables it first and the definitions'
// mode comes last; with the mode enabled already nothing is added; before 3.2, and without group
// calls, the settings keep their place and value.
func TestPlanWLMGroupsMode(t *testing.T) {
	monitorOnly := Definitions{Sandboxes: []Sandbox{{Name: "m", Attributes: Attributes{IndicesName: "m"}, Resources: Allocations{CPU: alloc(0.2)}, Enforcement: Monitor}}}
	hard := Definitions{Sandboxes: []Sandbox{{Name: "h", Attributes: Attributes{IndicesName: "h"}, Resources: Allocations{CPU: alloc(0.2)}, Enforcement: Hard}}}
	two := []LiveGroup{
		{ID: "A", Name: "shardwise-a", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.2}},
		{ID: "B", Name: "shardwise-b", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.1}},
	}
	h := []LiveGroup{{ID: "H", Name: "shardwise-h", ResiliencyMode: "enforced", ResourceLimits: map[string]float64{"cpu": 0.2}}}
	for _, tc := range []struct {
		name, version string
		defs          Definitions
		groups        []LiveGroup
		mode          string
		// threshold, when set, is the cluster's cpu rejection threshold (the definitions' is 0.8).
		threshold string
		want      []string
		last      string
	}{
		{name: "[] on 3.8, mode enabled", version: "3.8.0", defs: Definitions{}, groups: two, mode: "enabled",
			want: []string{"DELETE /_wlm/workload_group/shardwise-a", "DELETE /_wlm/workload_group/shardwise-b"},
			last: "wlm.workload_group.mode=monitor_only"},
		{name: "[] on 3.8, mode disabled", version: "3.8.0", defs: Definitions{}, groups: two, mode: "disabled",
			want: []string{"PUT /_cluster/settings wlm.workload_group.mode=enabled", "DELETE /_wlm/workload_group/shardwise-a", "DELETE /_wlm/workload_group/shardwise-b"},
			last: "wlm.workload_group.mode=monitor_only"},
		{name: "monitor sandboxes only on 3.8", version: "3.8.0", defs: monitorOnly, mode: "monitor_only", threshold: "0.7",
			want: []string{"PUT /_cluster/settings wlm.workload_group.mode=enabled wlm.workload_group.node.cpu_rejection_threshold=0.8", "PUT /_wlm/workload_group"},
			last: "wlm.workload_group.mode=monitor_only"},
		{name: "mode enabled already, and wanted", version: "3.8.0", defs: hard, groups: two, mode: "enabled",
			want: []string{"DELETE /_wlm/workload_group/shardwise-a", "DELETE /_wlm/workload_group/shardwise-b", "PUT /_wlm/workload_group"}},
		{name: "enabled wanted, monitor_only had", version: "3.3.0", defs: hard, mode: "monitor_only",
			want: []string{"PUT /_cluster/settings wlm.workload_group.mode=enabled", "PUT /_wlm/workload_group"}},
		{name: "no group call: the mode alone", version: "3.8.0", defs: monitorOnly,
			groups: []LiveGroup{{ID: "M", Name: "shardwise-m", ResiliencyMode: "monitor", ResourceLimits: map[string]float64{"cpu": 0.2}}}, mode: "enabled",
			want: []string{"PUT /_cluster/settings wlm.workload_group.mode=monitor_only"}},
		{name: "hard group updated on 3.2, mode disabled", version: "3.2.0", defs: hard, mode: "disabled",
			groups: []LiveGroup{{ID: "H", Name: "shardwise-h", ResiliencyMode: "soft", ResourceLimits: map[string]float64{"cpu": 0.2}}},
			want:   []string{"PUT /_cluster/settings wlm.workload_group.mode=enabled", "PUT /_wlm/workload_group/shardwise-h"}},
		{name: "hard group in sync on 3.8, mode monitor_only", version: "3.8.0", defs: hard, groups: h, mode: "monitor_only",
			want: []string{"PUT /_cluster/settings wlm.workload_group.mode=enabled"}},
		{name: "3.1 does not check: [] sets the mode first", version: "3.1.0", defs: Definitions{}, groups: two, mode: "enabled",
			want: []string{"PUT /_cluster/settings wlm.workload_group.mode=monitor_only", "DELETE /_wlm/workload_group/shardwise-a", "DELETE /_wlm/workload_group/shardwise-b"}},
		{name: "2.19 does not check: monitor sandboxes only", version: "2.19.0", defs: monitorOnly, mode: "monitor_only",
			want: []string{"PUT /_wlm/query_group"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := map[string]bool{WorkloadGroupAPI.GroupsPath(): true, QueryGroupAPI.GroupsPath(): true, RulesPath: true}
			sup := DetectWLM(tc.version, found)
			want, err := DesiredWLM(tc.defs, sup)
			if err != nil {
				t.Fatal(err)
			}
			have := WLMState{Groups: tc.groups, Settings: map[string]string{}}
			for k, v := range want.Settings {
				have.Settings[k] = v
			}
			p := "wlm." + string(sup.API) + "."
			have.Settings[p+"mode"] = tc.mode
			if tc.threshold != "" {
				have.Settings[p+"node.cpu_rejection_threshold"] = tc.threshold
			}
			plan, err := PlanWLMGroups(sup, want, have)
			if err != nil {
				t.Fatal(err)
			}
			show := func(c Call) string {
				out := c.Method + " " + c.Path
				if b, ok := c.Body.(map[string]any); ok {
					s := b["persistent"].(map[string]string)
					for _, k := range slices.Sorted(maps.Keys(s)) {
						out += " " + k + "=" + s[k]
					}
				}
				return out
			}
			var got []string
			for _, c := range plan.Calls {
				got = append(got, show(c))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls got %q, want %q", got, tc.want)
			}
			last := ""
			if plan.Last != nil {
				last = strings.TrimPrefix(show(*plan.Last), "PUT /_cluster/settings ")
			}
			if last != tc.last {
				t.Errorf("last got %q, want %q", last, tc.last)
			}
			if len(got) > 0 && strings.Contains(got[0], "mode=enabled") && tc.mode != "enabled" && tc.last != "" &&
				!strings.Contains(plan.Calls[0].Reason, "OpenSearch "+tc.version+" creates, updates and deletes groups only in mode enabled (the definitions' monitor_only is set last)") {
				t.Errorf("settings reason %q", plan.Calls[0].Reason)
			}
		})
	}
}
