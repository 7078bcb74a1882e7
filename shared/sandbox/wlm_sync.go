package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// WLMAPI names the workload-management plugin's group endpoint, which was renamed in 3.1.
type WLMAPI string

// The two names of the group API.
const (
	// QueryGroupAPI is _wlm/query_group, OpenSearch 2.18 to 3.0.
	QueryGroupAPI WLMAPI = "query_group"
	// WorkloadGroupAPI is _wlm/workload_group, OpenSearch 3.1 and later.
	WorkloadGroupAPI WLMAPI = "workload_group"
)

// GroupsPath is the collection path: GET lists, PUT creates.
func (a WLMAPI) GroupsPath() string { return "/_wlm/" + string(a) }

// GroupPath is one group's path: GET, PUT (update) and DELETE.
func (a WLMAPI) GroupPath(name string) string { return a.GroupsPath() + "/" + name }

// ListKey is the key of the groups array in a GET answer: query_groups or workload_groups.
func (a WLMAPI) ListKey() string { return string(a) + "s" }

// settingPrefix is where the plugin's cluster settings live: wlm.query_group. or wlm.workload_group.
func (a WLMAPI) settingPrefix() string { return "wlm." + string(a) + "." }

// RulesPath is the 3.x rule API for the workload_group feature type; a rule tags the requests its
// attributes match with a group's id.
const RulesPath = "/_rules/workload_group"

// RulePath is one rule's path.
func RulePath(id string) string { return RulesPath + "/" + id }

// Ownership marks. Sync deletes only what carries them, so groups and rules created by hand or
// by another tool are never touched (they still count against the plugin's 100 % per resource).
const (
	// GroupPrefix starts the name of every group shardwise manages: sandbox "analysts" is group
	// "shardwise-analysts".
	GroupPrefix = "shardwise-"
	// RulePrefix starts the description of every rule shardwise manages.
	RulePrefix = "shardwise sandbox "
	// maxGroupName is the plugin's limit on a group name (WorkloadGroup.validateName).
	maxGroupName = 50
)

// GroupName is the workload group that carries sandbox name.
func GroupName(sandbox string) string { return GroupPrefix + sandbox }

// Version is an OpenSearch version number.
type Version struct{ Major, Minor, Patch int }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// ParseVersion reads "2.19.3" or "3.1.0-SNAPSHOT" (the qualifier is ignored).
func ParseVersion(s string) (Version, error) {
	num, _, _ := strings.Cut(strings.TrimSpace(s), "-")
	parts := strings.Split(num, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("version %q: want major.minor[.patch]", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// WLMSupport is what a cluster offers of workload management, with the reason as data.
type WLMSupport struct {
	Version string `json:"version"`
	// API is the group endpoint the cluster serves; empty when it has none.
	API WLMAPI `json:"api,omitempty"`
	// Rules is true when the cluster serves _rules/workload_group.
	Rules bool `json:"rules"`
	// Principal is true when rules may match principal.username and principal.role (3.3 and later,
	// and only with the Security plugin: without it the cluster refuses such a rule, and sync reports it).
	Principal bool   `json:"principal"`
	Reason    string `json:"reason"`
}

// Supported reports whether groups can be synced.
func (s WLMSupport) Supported() bool { return s.API != "" }

// GroupWritesNeedEnabled reports whether the plugin creates, updates and deletes groups only in
// mode enabled: from 3.2 (OpenSearch #18652) its REST create, update and delete handlers refuse
// in mode monitor_only or disabled ("Cannot delete_workload_group because workload management
// mode is disabled or monitor_only"). The query_group API (2.18 to 3.0), 3.1's workload_group API
// and the rule API do not check the mode.
func (s WLMSupport) GroupWritesNeedEnabled() bool {
	v, err := ParseVersion(s.Version)
	return s.Supported() && err == nil && v.AtLeast(3, 2)
}

// WLMProbes returns the paths to probe for a cluster of version: the group API its version should
// serve and, from 3.0, the rule API. A version before 2.18 needs no probe: it has no workload
// management.
func WLMProbes(version string) ([]string, error) {
	v, err := ParseVersion(version)
	if err != nil {
		return nil, err
	}
	switch {
	case !v.AtLeast(2, 18):
		return nil, nil
	case !v.AtLeast(3, 0):
		return []string{QueryGroupAPI.GroupsPath()}, nil
	case !v.AtLeast(3, 1):
		return []string{QueryGroupAPI.GroupsPath(), RulesPath}, nil
	}
	return []string{WorkloadGroupAPI.GroupsPath(), RulesPath}, nil
}

// DetectWLM decides what a cluster of version offers from the probes of WLMProbes: found maps
// each probed path to whether the cluster served it (a 404, or a 400 "no handler found", means no).
func DetectWLM(version string, found map[string]bool) WLMSupport {
	sup := WLMSupport{Version: version}
	v, err := ParseVersion(version)
	if err != nil {
		sup.Reason = "cannot tell whether the cluster has workload management: " + err.Error()
		return sup
	}
	api := WorkloadGroupAPI
	if !v.AtLeast(3, 1) {
		api = QueryGroupAPI
	}
	switch {
	case !v.AtLeast(2, 18):
		sup.Reason = fmt.Sprintf("OpenSearch %s has no workload management: it arrived in 2.18 (_wlm/query_group)", version)
		return sup
	case !found[api.GroupsPath()]:
		sup.Reason = fmt.Sprintf("OpenSearch %s answers no handler for %s: the workload-management plugin is not installed", version, api.GroupsPath())
		return sup
	}
	sup.API = api
	sup.Rules = v.AtLeast(3, 0) && found[RulesPath]
	sup.Principal = sup.Rules && v.AtLeast(3, 3)
	switch {
	case !sup.Rules && v.AtLeast(3, 0):
		sup.Reason = fmt.Sprintf("OpenSearch %s serves %s but not %s: groups are synced, requests reach them only by their workload-group header", version, api.GroupsPath(), RulesPath)
	case !sup.Rules:
		sup.Reason = fmt.Sprintf("OpenSearch %s serves %s; rules arrived in 3.x, so requests reach groups only by their workload-group header", version, api.GroupsPath())
	case !sup.Principal:
		sup.Reason = fmt.Sprintf("OpenSearch %s serves %s and %s (index_pattern rules; principal rules arrived in 3.3)", version, api.GroupsPath(), RulesPath)
	default:
		sup.Reason = fmt.Sprintf("OpenSearch %s serves %s and %s with index_pattern and principal rules", version, api.GroupsPath(), RulesPath)
	}
	return sup
}

// RuleAttributes are what a workload-management rule says: which requests (by index pattern,
// user name, role) go to which group. Group is a name in a WLMRule, the group's id in a LiveRule.
type RuleAttributes struct {
	Description  string   `json:"description"`
	IndexPattern []string `json:"index_pattern,omitempty"`
	Username     []string `json:"username,omitempty"`
	Role         []string `json:"role,omitempty"`
	Group        string   `json:"workload_group"`
}

// WLMRule is a rule as shardwise wants it, for a sandbox.
type WLMRule struct {
	Sandbox string `json:"sandbox"`
	RuleAttributes
}

// WLMDesired is the workload-management state the definitions call for.
type WLMDesired struct {
	Groups []WorkloadGroup `json:"groups"`
	Rules  []WLMRule       `json:"rules,omitempty"`
	// Settings are the wlm.* cluster settings: mode and node thresholds.
	Settings map[string]string `json:"settings"`
	// Notes say what of the definitions the plugin cannot carry, one sentence each.
	Notes []string `json:"notes,omitempty"`
}

// The plugin's bounds on its node thresholds (WorkloadManagementSettings).
const (
	maxRejection    = 0.9
	maxCancellation = 0.95
)

// DesiredWLM maps definitions onto the groups, rules and settings of a cluster with sup. It fails,
// before anything is sent, when a sandbox name makes a group name over the plugin's 50 characters
// or a threshold is outside the plugin's bounds. defs must have passed Validate.
func DesiredWLM(defs Definitions, sup WLMSupport) (WLMDesired, error) {
	if !sup.Supported() {
		return WLMDesired{}, errors.New("workload management: " + sup.Reason)
	}
	d := WLMDesired{Settings: map[string]string{}}
	var errs []error
	enforcing := false
	for _, g := range ToWLM(defs) {
		name := GroupName(g.Name)
		if len(name) > maxGroupName {
			errs = append(errs, fmt.Errorf("sandbox %q: group name %q is over the plugin's %d characters", g.Name, name, maxGroupName))
			continue
		}
		if strings.ContainsAny(g.Name, "/?#*,") || strings.TrimSpace(g.Name) != g.Name {
			errs = append(errs, fmt.Errorf("sandbox %q: a group name is one path segment of the plugin's API, without / ? # * , or surrounding spaces", g.Name))
			continue
		}
		if g.ResiliencyMode != "monitor" {
			enforcing = true
		}
		g.Name = name
		d.Groups = append(d.Groups, g)
	}
	for _, s := range defs.Sandboxes {
		for _, r := range resources {
			if th, ok := s.Resources.threshold(r); ok {
				d.Notes = append(d.Notes, fmt.Sprintf("sandbox %q's own %s threshold %v is not carried: the plugin's thresholds are the node's, for every group", s.Name, r, th))
			}
		}
		rule, note := ruleFor(s, sup)
		if note != "" {
			d.Notes = append(d.Notes, note)
		}
		if rule != nil {
			d.Rules = append(d.Rules, *rule)
		}
	}
	p := sup.API.settingPrefix()
	// monitor_only tracks and logs; enabled rejects and cancels for soft and enforced groups.
	d.Settings[p+"mode"] = "monitor_only"
	if enforcing {
		d.Settings[p+"mode"] = "enabled"
	}
	for _, r := range resources {
		l := defs.Resources.limit(r)
		plugin := "memory"
		if r == CPU {
			plugin = "cpu"
		}
		rej, can := float64(l.Threshold.Rejection), float64(l.Threshold.Cancellation)
		switch {
		case rej > maxRejection:
			errs = append(errs, fmt.Errorf("%s rejection threshold %v: the plugin refuses over %v", r, rej, maxRejection))
		case can > maxCancellation:
			errs = append(errs, fmt.Errorf("%s cancellation threshold %v: the plugin refuses over %v", r, can, maxCancellation))
		case can < rej:
			errs = append(errs, fmt.Errorf("%s cancellation threshold %v is under its rejection threshold %v: the plugin refuses it", r, can, rej))
		}
		d.Settings[p+"node."+plugin+"_rejection_threshold"] = formatFraction(rej)
		d.Settings[p+"node."+plugin+"_cancellation_threshold"] = formatFraction(can)
		if l.Enforcement != "" {
			d.Notes = append(d.Notes, fmt.Sprintf("the cluster-level %s enforcement %q is not carried: the plugin's mode is per group", r, l.Enforcement))
		}
	}
	if len(errs) > 0 {
		return WLMDesired{}, fmt.Errorf("workload management: %w", errors.Join(errs...))
	}
	return d, nil
}

// ruleFor maps a sandbox's attributes onto one rule, or says why it cannot. A rule carries all
// of a sandbox's attributes or none: one matching on part of them would tag requests the sandbox
// does not cover.
func ruleFor(s Sandbox, sup WLMSupport) (*WLMRule, string) {
	a := s.Attributes
	if !sup.Rules {
		return nil, ""
	}
	why := func(format string, args ...any) (*WLMRule, string) {
		return nil, fmt.Sprintf("sandbox %q gets no rule: %s; its requests reach group %q only by their workload-group header",
			s.Name, fmt.Sprintf(format, args...), GroupName(s.Name))
	}
	if a.CustomID != "" {
		return why("custom_id (X-Opaque-Id) is not a rule attribute")
	}
	r := &WLMRule{Sandbox: s.Name, RuleAttributes: RuleAttributes{Description: RulePrefix + s.Name, Group: GroupName(s.Name)}}
	for _, p := range splitValues(a.IndicesName) {
		if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
			return why("index pattern %q has a '*' before its end; rules match an exact name or a prefix ending in '*'", p)
		}
		r.IndexPattern = append(r.IndexPattern, p)
	}
	for _, attr := range []struct {
		name, values string
		dst          *[]string
	}{{"user_name", a.UserName, &r.Username}, {"role", a.Role, &r.Role}} {
		vals := splitValues(attr.values)
		if len(vals) == 0 {
			continue
		}
		if !sup.Principal {
			return why("%s needs principal rules (OpenSearch 3.3 and later, with the Security plugin)", attr.name)
		}
		for _, v := range vals {
			if strings.Contains(v, "*") {
				return why("%s value %q has a wildcard; principal rules match exactly", attr.name, v)
			}
		}
		*attr.dst = vals
	}
	if len(r.IndexPattern)+len(r.Username)+len(r.Role) == 0 {
		return why("it has no attribute a rule can match")
	}
	return r, ""
}

func splitValues(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func formatFraction(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// LiveGroup is a group as the cluster reports it.
type LiveGroup struct {
	ID             string             `json:"_id"`
	Name           string             `json:"name"`
	ResiliencyMode string             `json:"resiliency_mode"`
	ResourceLimits map[string]float64 `json:"resource_limits"`
}

// LiveRule is a rule as the cluster reports it; Group is the group's id.
type LiveRule struct {
	ID string `json:"id"`
	RuleAttributes
}

// WLMState is what the cluster has: every group and rule (owned or not) and the wlm.* settings in
// effect (transient over persistent over defaults).
type WLMState struct {
	Groups   []LiveGroup       `json:"groups"`
	Rules    []LiveRule        `json:"rules,omitempty"`
	Settings map[string]string `json:"settings"`
}

// Drift is one difference between what the definitions want and what the cluster has.
type Drift struct {
	// Kind is "group", "rule" or "setting".
	Kind string `json:"kind"`
	// Name is the group's name, the rule's sandbox or the setting's key.
	Name  string `json:"name"`
	Field string `json:"field"`
	Want  string `json:"want"`
	Have  string `json:"have"`
}

func (d Drift) String() string {
	return fmt.Sprintf("%s %s %s: want %s, have %s", d.Kind, d.Name, d.Field, d.Want, d.Have)
}

const (
	absent  = "absent"
	present = "present"
)

// limitKeys are the plugin's resource names in report order.
var limitKeys = []string{"cpu", "memory"}

func limitsOf(g WorkloadGroup) map[string]float64 {
	m := map[string]float64{}
	if g.ResourceLimits.CPU != nil {
		m["cpu"] = *g.ResourceLimits.CPU
	}
	if g.ResourceLimits.Memory != nil {
		m["memory"] = *g.ResourceLimits.Memory
	}
	return m
}

func limitString(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return absent
	}
	return formatFraction(v)
}

// sameFraction compares limits and thresholds as the numbers they are ("0.8" is "0.80").
func sameFraction(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// DiffWLM lists every drift of have from want, groups first, then rules, then settings, each
// sorted by name. Groups and rules not owned by shardwise are not drift.
func DiffWLM(want WLMDesired, have WLMState) []Drift {
	var out []Drift
	live := map[string]LiveGroup{}
	names := map[string]string{} // group id → name
	for _, g := range have.Groups {
		live[g.Name] = g
		names[g.ID] = g.Name
	}
	wanted := map[string]bool{}
	for _, g := range want.Groups {
		wanted[g.Name] = true
		h, ok := live[g.Name]
		if !ok {
			out = append(out, Drift{Kind: "group", Name: g.Name, Field: "group", Want: present, Have: absent})
			continue
		}
		if h.ResiliencyMode != g.ResiliencyMode {
			out = append(out, Drift{Kind: "group", Name: g.Name, Field: "resiliency_mode", Want: g.ResiliencyMode, Have: h.ResiliencyMode})
		}
		wl := limitsOf(g)
		for _, k := range limitKeys {
			w, wok := wl[k]
			hv, hok := h.ResourceLimits[k]
			if wok != hok || (wok && !sameFraction(w, hv)) {
				out = append(out, Drift{Kind: "group", Name: g.Name, Field: "resource_limits." + k, Want: limitString(wl, k), Have: limitString(h.ResourceLimits, k)})
			}
		}
	}
	for _, h := range have.Groups {
		if strings.HasPrefix(h.Name, GroupPrefix) && !wanted[h.Name] {
			out = append(out, Drift{Kind: "group", Name: h.Name, Field: "group", Want: absent, Have: present})
		}
	}
	liveRules := map[string]LiveRule{}
	for _, r := range ownedRules(have.Rules) {
		liveRules[strings.TrimPrefix(r.Description, RulePrefix)] = r
	}
	wantRules := map[string]bool{}
	for _, r := range want.Rules {
		wantRules[r.Sandbox] = true
		h, ok := liveRules[r.Sandbox]
		if !ok {
			out = append(out, Drift{Kind: "rule", Name: r.Sandbox, Field: "rule", Want: present, Have: absent})
			continue
		}
		for _, f := range ruleFields(r.RuleAttributes, h.RuleAttributes) {
			if !sameSet(f.want, f.have) {
				out = append(out, Drift{Kind: "rule", Name: r.Sandbox, Field: f.field, Want: listString(f.want), Have: listString(f.have)})
			}
		}
		if hg := cmp.Or(names[h.Group], "id "+h.Group); hg != r.Group {
			out = append(out, Drift{Kind: "rule", Name: r.Sandbox, Field: "workload_group", Want: r.Group, Have: hg})
		}
	}
	for sb := range liveRules {
		if !wantRules[sb] {
			out = append(out, Drift{Kind: "rule", Name: sb, Field: "rule", Want: absent, Have: present})
		}
	}
	for k, w := range want.Settings {
		h, ok := have.Settings[k]
		if !ok {
			out = append(out, Drift{Kind: "setting", Name: k, Field: "value", Want: w, Have: absent})
			continue
		}
		if !sameSetting(w, h) {
			out = append(out, Drift{Kind: "setting", Name: k, Field: "value", Want: w, Have: h})
		}
	}
	kindOrder := map[string]int{"group": 0, "rule": 1, "setting": 2}
	slices.SortStableFunc(out, func(a, b Drift) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Field, b.Field))
	})
	return out
}

// ruleField is one matching attribute of a rule, by its name in the rule API, as wanted and as the
// cluster has it.
type ruleField struct {
	field      string
	want, have []string
}

// ruleFields pairs the matching attributes of a wanted rule with a live one's.
func ruleFields(want, have RuleAttributes) []ruleField {
	return []ruleField{
		{"index_pattern", want.IndexPattern, have.IndexPattern},
		{"principal.username", want.Username, have.Username},
		{"principal.role", want.Role, have.Role},
	}
}

func ownedRules(rules []LiveRule) []LiveRule {
	var out []LiveRule
	for _, r := range rules {
		if strings.HasPrefix(r.Description, RulePrefix) {
			out = append(out, r)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func listString(v []string) string {
	if len(v) == 0 {
		return absent
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return "[" + strings.Join(s, ",") + "]"
}

func sameSetting(want, have string) bool {
	w, werr := strconv.ParseFloat(want, 64)
	h, herr := strconv.ParseFloat(have, 64)
	if werr == nil && herr == nil {
		return sameFraction(w, h)
	}
	return want == have
}

// Call is one request sync makes, with the reason it is made.
type Call struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   any    `json:"body,omitempty"`
	Reason string `json:"reason"`
}

func (c Call) String() string { return fmt.Sprintf("%s %s (%s)", c.Method, c.Path, c.Reason) }

// groupUpdate is the plugin's update body (QueryGroupUpdate): the name is in the path.
type groupUpdate struct {
	ResiliencyMode string         `json:"resiliency_mode"`
	ResourceLimits ResourceLimits `json:"resource_limits"`
}

// WLMGroupPlan is what brings the wlm.* settings and the owned groups to what the definitions
// want: Calls in order, and Last to end the sync with.
type WLMGroupPlan struct {
	// Calls are the settings call, then the group calls.
	Calls []Call `json:"calls"`
	// Last, when set, puts the definitions' mode in place once the group and rule calls are done:
	// where the plugin changes groups only in mode enabled (GroupWritesNeedEnabled) and the
	// definitions want another mode, Calls run in mode enabled (the settings call sets it if the
	// cluster is not in it) and the definitions' mode comes last. Last is made even when one of
	// the calls before it fails, once any of them was made, so the mode is left as it was before
	// the sync or as the definitions want it, never enabled against them.
	Last *Call `json:"last,omitempty"`
}

// PlanWLMGroups returns the calls that bring the wlm.* settings and the owned groups to want, in
// an order the plugin accepts: settings; deletes; updates that only lower limits; other updates;
// creates. The plugin refuses any step after which a resource's limits over all groups sum over 1,
// so capacity is freed before it is taken. An update cannot remove a resource limit (the plugin
// keeps limits the body leaves out), so a group losing one is deleted and created again; its id
// changes, and the rules pointing at it follow in PlanWLMRules. foreign groups' limits are
// checked: when want does not fit beside them, PlanWLMGroups fails and nothing is sent. Where the
// plugin changes groups only in mode enabled (sup.GroupWritesNeedEnabled) and there are group
// calls, the settings call sets the mode to enabled when the cluster is not in it, and the
// definitions' mode, when it is not enabled, is the plan's Last.
func PlanWLMGroups(sup WLMSupport, want WLMDesired, have WLMState) (WLMGroupPlan, error) {
	api := sup.API
	settings := map[string]string{}
	var keys []string
	for k, w := range want.Settings {
		if h, ok := have.Settings[k]; !ok || !sameSetting(w, h) {
			settings[k] = w
			keys = append(keys, k)
		}
	}
	live := map[string]LiveGroup{}
	foreign := map[string]float64{}
	for _, g := range have.Groups {
		live[g.Name] = g
		if !strings.HasPrefix(g.Name, GroupPrefix) {
			for k, v := range g.ResourceLimits {
				foreign[k] += v
			}
		}
	}
	total := map[string]float64{}
	for _, g := range want.Groups {
		for k, v := range limitsOf(g) {
			total[k] += v
		}
	}
	for _, k := range limitKeys {
		if total[k]+foreign[k] > 1+1e-9 {
			return WLMGroupPlan{}, fmt.Errorf("workload management: the sandboxes' %s limits (%s) and the groups shardwise does not own (%s) sum over 1, which the plugin refuses",
				k, formatFraction(math.Round(total[k]*1e6)/1e6), formatFraction(math.Round(foreign[k]*1e6)/1e6))
		}
	}
	wanted := map[string]bool{}
	var deletes, lowers, updates, creates []Call
	for _, g := range want.Groups {
		wanted[g.Name] = true
		h, ok := live[g.Name]
		create := Call{Method: "PUT", Path: api.GroupsPath(), Body: g, Reason: "create group " + g.Name + " for sandbox " + strings.TrimPrefix(g.Name, GroupPrefix)}
		if !ok {
			creates = append(creates, create)
			continue
		}
		wl := limitsOf(g)
		var changed, dropped []string
		lowerOnly := true
		if h.ResiliencyMode != g.ResiliencyMode {
			changed = append(changed, "resiliency_mode "+h.ResiliencyMode+"→"+g.ResiliencyMode)
		}
		for _, k := range limitKeys {
			w, wok := wl[k]
			hv, hok := h.ResourceLimits[k]
			switch {
			case hok && !wok:
				dropped = append(dropped, k)
			case wok && (!hok || !sameFraction(w, hv)):
				changed = append(changed, fmt.Sprintf("%s %s→%s", k, limitString(h.ResourceLimits, k), formatFraction(w)))
				if !hok || w > hv {
					lowerOnly = false
				}
			}
		}
		switch {
		case len(dropped) > 0:
			deletes = append(deletes, Call{Method: "DELETE", Path: api.GroupPath(g.Name),
				Reason: fmt.Sprintf("group %s drops its %s limit, which an update cannot remove: delete it, then create it again", g.Name, strings.Join(dropped, ", "))})
			create.Reason = fmt.Sprintf("create group %s again without its %s limit", g.Name, strings.Join(dropped, ", "))
			creates = append(creates, create)
		case len(changed) > 0:
			c := Call{Method: "PUT", Path: api.GroupPath(g.Name), Body: groupUpdate{ResiliencyMode: g.ResiliencyMode, ResourceLimits: g.ResourceLimits},
				Reason: "update group " + g.Name + ": " + strings.Join(changed, ", ")}
			if lowerOnly {
				lowers = append(lowers, c)
			} else {
				updates = append(updates, c)
			}
		}
	}
	for _, h := range have.Groups {
		if strings.HasPrefix(h.Name, GroupPrefix) && !wanted[h.Name] {
			deletes = append(deletes, Call{Method: "DELETE", Path: api.GroupPath(h.Name),
				Reason: "delete group " + h.Name + ": no sandbox " + strings.TrimPrefix(h.Name, GroupPrefix) + " in the definitions"})
		}
	}
	var groups []Call
	for _, part := range [][]Call{deletes, lowers, updates, creates} {
		slices.SortStableFunc(part, func(a, b Call) int { return cmp.Compare(a.Path, b.Path) })
		groups = append(groups, part...)
	}
	var plan WLMGroupPlan
	modeKey := api.settingPrefix() + "mode"
	wantMode, haveMode := want.Settings[modeKey], have.Settings[modeKey]
	enable := false
	if sup.GroupWritesNeedEnabled() && len(groups) > 0 && wantMode != "" {
		if haveMode != "enabled" {
			enable = true
			if _, ok := settings[modeKey]; !ok {
				keys = append(keys, modeKey)
			}
			settings[modeKey] = "enabled"
		} else if _, ok := settings[modeKey]; ok {
			// The cluster is in mode enabled already: it stays so until the groups are changed.
			delete(settings, modeKey)
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == modeKey })
		}
		if wantMode != "enabled" {
			plan.Last = &Call{Method: "PUT", Path: "/_cluster/settings", Body: map[string]any{"persistent": map[string]string{modeKey: wantMode}},
				Reason: fmt.Sprintf("set %s to %s, the definitions' mode, once the groups are changed in mode enabled", modeKey, wantMode)}
		}
	}
	if len(settings) > 0 {
		slices.Sort(keys)
		reason := "set " + strings.Join(keys, ", ") + " to the definitions' mode and node thresholds"
		if enable {
			var others []string
			for _, k := range keys {
				if k != modeKey {
					others = append(others, k)
				}
			}
			reason = fmt.Sprintf("set %s to enabled while the groups change, since OpenSearch %s creates, updates and deletes groups only in mode enabled", modeKey, sup.Version)
			if wantMode != "enabled" {
				reason += " (the definitions' " + wantMode + " is set last)"
			}
			if len(others) > 0 {
				reason = "set " + strings.Join(others, ", ") + " to the definitions' node thresholds, and " + strings.TrimPrefix(reason, "set ")
			}
		}
		plan.Calls = append(plan.Calls, Call{Method: "PUT", Path: "/_cluster/settings", Body: map[string]any{"persistent": settings}, Reason: reason})
	}
	plan.Calls = append(plan.Calls, groups...)
	return plan, nil
}

// ruleBody is the rule API's create and update body.
type ruleBody struct {
	Description   string     `json:"description,omitempty"`
	IndexPattern  []string   `json:"index_pattern,omitempty"`
	Principal     *principal `json:"principal,omitempty"`
	WorkloadGroup string     `json:"workload_group,omitempty"`
}

type principal struct {
	Username []string `json:"username,omitempty"`
	Role     []string `json:"role,omitempty"`
}

// PendingID stands for the id of a group not created yet, in the rule calls of a dry run.
func PendingID(group string) string { return "<id of " + group + " once created>" }

// PlanWLMRules returns the rule calls that bring the owned rules to want, given the groups as
// they are once PlanWLMGroups' calls are made (a group still missing is referred to by
// PendingID). A rule that loses an attribute is deleted and created again: an update keeps the
// attributes its body leaves out.
func PlanWLMRules(want WLMDesired, have WLMState) []Call {
	ids := map[string]string{}
	for _, g := range have.Groups {
		ids[g.Name] = g.ID
	}
	live := map[string]LiveRule{}
	for _, r := range ownedRules(have.Rules) {
		live[strings.TrimPrefix(r.Description, RulePrefix)] = r
	}
	var deletes, updates, creates []Call
	wanted := map[string]bool{}
	for _, r := range want.Rules {
		wanted[r.Sandbox] = true
		id := cmp.Or(ids[r.Group], PendingID(r.Group))
		body := ruleBody{Description: r.Description, IndexPattern: r.IndexPattern, WorkloadGroup: id}
		if len(r.Username)+len(r.Role) > 0 {
			body.Principal = &principal{Username: r.Username, Role: r.Role}
		}
		create := Call{Method: "PUT", Path: RulesPath, Body: body, Reason: "create the rule of sandbox " + r.Sandbox + " for group " + r.Group}
		h, ok := live[r.Sandbox]
		if !ok {
			creates = append(creates, create)
			continue
		}
		var changed, dropped []string
		for _, f := range ruleFields(r.RuleAttributes, h.RuleAttributes) {
			switch {
			case len(f.want) == 0 && len(f.have) > 0:
				dropped = append(dropped, f.field)
			case !sameSet(f.want, f.have):
				changed = append(changed, fmt.Sprintf("%s %s→%s", f.field, listString(f.have), listString(f.want)))
			}
		}
		if h.Group != id {
			changed = append(changed, "workload_group → "+r.Group)
		}
		switch {
		case len(dropped) > 0:
			deletes = append(deletes, Call{Method: "DELETE", Path: RulePath(h.ID),
				Reason: fmt.Sprintf("the rule of sandbox %s drops %s, which an update cannot remove: delete it, then create it again", r.Sandbox, strings.Join(dropped, ", "))})
			creates = append(creates, create)
		case len(changed) > 0:
			updates = append(updates, Call{Method: "PUT", Path: RulePath(h.ID), Body: body,
				Reason: "update the rule of sandbox " + r.Sandbox + ": " + strings.Join(changed, ", ")})
		}
	}
	for sb, h := range live {
		if !wanted[sb] {
			deletes = append(deletes, Call{Method: "DELETE", Path: RulePath(h.ID), Reason: "delete the rule of sandbox " + sb + ": the definitions give it no rule"})
		}
	}
	var calls []Call
	for _, part := range [][]Call{deletes, updates, creates} {
		slices.SortStableFunc(part, func(a, b Call) int { return cmp.Compare(a.Reason, b.Reason) })
		calls = append(calls, part...)
	}
	return calls
}

// WithRuleDeletes returns the group calls with, before the first group delete, a DELETE of each
// owned rule naming a group they delete. The plugin refuses to delete a group a rule still names:
// a real 3.8.0 node answered shardwise's delete of a removed sandbox's group, made before its rule,
// with 500 illegal_state_exception "shardwise-batch workload group has rules with ids: [...]
// .Please delete them first". A rule the definitions still want, of a group deleted to be created
// again, is created again by PlanWLMRules for the new group.
func WithRuleDeletes(calls []Call, have WLMState) []Call {
	byPath := map[string]string{}
	for _, g := range have.Groups {
		byPath[QueryGroupAPI.GroupPath(g.Name)] = g.ID
		byPath[WorkloadGroupAPI.GroupPath(g.Name)] = g.ID
	}
	first := -1
	deleted := map[string]bool{}
	for i, c := range calls {
		if id, ok := byPath[c.Path]; ok && c.Method == "DELETE" {
			deleted[id] = true
			if first < 0 {
				first = i
			}
		}
	}
	var rules []Call
	for _, r := range ownedRules(have.Rules) {
		if deleted[r.Group] {
			rules = append(rules, Call{Method: "DELETE", Path: RulePath(r.ID),
				Reason: "delete the rule of sandbox " + strings.TrimPrefix(r.Description, RulePrefix) + " before its group, which the plugin deletes only once no rule names it"})
		}
	}
	if len(rules) == 0 {
		return calls
	}
	slices.SortStableFunc(rules, func(a, b Call) int { return cmp.Compare(a.Reason, b.Reason) })
	return slices.Concat(calls[:first], rules, calls[first:])
}

// ApplyGroupCalls returns have as it would be once calls from PlanWLMGroups (WithRuleDeletes) are
// made, for a dry run's rule plan: deleted groups and rules are gone, created groups present
// without an id.
func ApplyGroupCalls(have WLMState, calls []Call) WLMState {
	out := WLMState{Settings: have.Settings}
	gone := map[string]bool{}
	for _, c := range calls {
		if c.Method == "DELETE" {
			gone[c.Path] = true
		}
	}
	for _, r := range have.Rules {
		if !gone[RulePath(r.ID)] {
			out.Rules = append(out.Rules, r)
		}
	}
	for _, g := range have.Groups {
		if !gone[QueryGroupAPI.GroupPath(g.Name)] && !gone[WorkloadGroupAPI.GroupPath(g.Name)] {
			out.Groups = append(out.Groups, g)
		}
	}
	return out
}
