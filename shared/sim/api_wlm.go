package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The workload-management plugin, served when the scenario's cluster lists it in plugins:
//
//   - groups under _wlm/query_group (2.18 to 3.0) or _wlm/workload_group (3.1 and later): list,
//     get, create (PUT on the collection), update (PUT on the group: the fields given replace
//     theirs, resource limits one by one) and delete, with the plugin's checks (name 1-50
//     characters and unique, resiliency_mode enforced/soft/monitor, each limit in (0, 1], each
//     resource's limits over all groups at most 1);
//   - rules under _rules/workload_group (3.1 and later): list (search_after pages), get, create,
//     update (the fields given replace theirs) and delete; index_pattern holds exact names or
//     prefixes ending in '*', principal (username, role) is accepted from 3.3, workload_group
//     must name an existing group's id;
//   - the wlm.<api>.* cluster settings, validated with the plugin's bounds and reported as
//     defaults;
//   - _wlm/stats, _wlm/{node_id}/stats and _wlm/stats/{group_id}, with the enforcement itself
//     (wlm_enforce.go).
//
// Any other version, or a cluster without the plugin, answers "no handler found", as OpenSearch
// does for a path no plugin registered.

// PluginWorkloadManagement is the plugins entry that turns workload management on.
const PluginWorkloadManagement = "workload-management"

// knownPlugins are the plugins a scenario may list.
var knownPlugins = []string{PluginWorkloadManagement}

// rulesPageSize is the rules one GET answers with before search_after.
const rulesPageSize = 50

type wlmGroup struct {
	id, name, mode string
	limits         map[string]float64
	updated        int64
}

type wlmRule struct {
	id, description string
	indexPattern    []string
	username, role  []string
	group           string
	updated         time.Time
}

type wlmState struct {
	groups []*wlmGroup // in creation order
	rules  []*wlmRule
	seq    int
	rt     wlmRuntime // the plugin at work on tasks (wlm_enforce.go)
}

// osVersion is the version the simulator answers as.
func (s *Sim) osVersion() string { return cmp.Or(s.sc.Cluster.OpenSearchVersion, versionNumber) }

// parseVersion reads major.minor[.patch][-qualifier].
func parseVersion(v string) (major, minor int, err error) {
	num, _, _ := strings.Cut(v, "-")
	parts := strings.Split(num, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, fmt.Errorf("%q: want major.minor.patch", v)
	}
	var n [3]int
	for i, p := range parts {
		if n[i], err = strconv.Atoi(p); err != nil || n[i] < 0 {
			return 0, 0, fmt.Errorf("%q: %q is not a number", v, p)
		}
	}
	return n[0], n[1], nil
}

func atLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || (major == wantMajor && minor >= wantMinor)
}

// wlmAPI is the group API the cluster serves ("" for none), whether it serves rules, and whether
// rules take principal attributes.
func (s *Sim) wlmAPI() (api string, rules, principal bool) {
	if !slices.Contains(s.sc.Cluster.Plugins, PluginWorkloadManagement) {
		return "", false, false
	}
	major, minor, err := parseVersion(s.osVersion())
	if err != nil || !atLeast(major, minor, 2, 18) {
		return "", false, false
	}
	if !atLeast(major, minor, 3, 1) {
		return "query_group", false, false
	}
	return "workload_group", true, atLeast(major, minor, 3, 3)
}

// groupKind is the plugin's name for a group in its messages.
func groupKind(api string) string {
	if api == "query_group" {
		return "QueryGroup"
	}
	return "WorkloadGroup"
}

// validateVersionAndPlugins checks the cluster's opensearch_version and plugins.
func (c ClusterSpec) validateVersionAndPlugins(path string) error {
	if c.OpenSearchVersion != "" {
		major, minor, err := parseVersion(c.OpenSearchVersion)
		if err != nil {
			return fieldError(path+".opensearch_version", "%v", err)
		}
		if !atLeast(major, minor, 2, 0) {
			return fieldError(path+".opensearch_version", "%q: the simulator answers as OpenSearch 2.0 or later", c.OpenSearchVersion)
		}
	}
	seen := map[string]bool{}
	for i, p := range c.Plugins {
		pp := fmt.Sprintf("%s.plugins[%d]", path, i)
		switch {
		case !slices.Contains(knownPlugins, p):
			return fieldError(pp, "%q: the simulator serves only %v", p, knownPlugins)
		case seen[p]:
			return fieldError(pp, "%q listed twice", p)
		}
		seen[p] = true
		if p == PluginWorkloadManagement {
			major, minor, _ := parseVersion(cmp.Or(c.OpenSearchVersion, versionNumber))
			if !atLeast(major, minor, 2, 18) {
				return fieldError(pp, "workload-management needs OpenSearch 2.18 or later, the cluster is %s", cmp.Or(c.OpenSearchVersion, versionNumber))
			}
		}
	}
	return nil
}

// wlmSettingChecks are the plugin's settings under wlm.<api>., with their bounds.
var wlmSettingChecks = map[string]settingCheck{
	"mode":                               oneOf("enabled", "monitor_only", "disabled"),
	"node.memory_rejection_threshold":    fractionAtMost(0.9),
	"node.cpu_rejection_threshold":       fractionAtMost(0.9),
	"node.memory_cancellation_threshold": fractionAtMost(0.95),
	"node.cpu_cancellation_threshold":    fractionAtMost(0.95),
	"duress_streak":                      intAtLeast(3),
	"enforcement_interval":               intAtLeast(1000),
}

var wlmSettingDefaults = map[string]string{
	"mode":                               "monitor_only",
	"node.memory_rejection_threshold":    "0.8",
	"node.cpu_rejection_threshold":       "0.8",
	"node.memory_cancellation_threshold": "0.9",
	"node.cpu_cancellation_threshold":    "0.9",
	"duress_streak":                      "3",
	"enforcement_interval":               "1000",
}

func fractionAtMost(most float64) settingCheck {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || math.IsNaN(f):
			return fmt.Errorf("failed to parse value [%s] as a double", v)
		case f < 0:
			return fmt.Errorf("value [%s] cannot be negative", v)
		case f > most:
			return fmt.Errorf("value [%s] cannot be greater than %v as it can result in a node drop", v, most)
		}
		return nil
	}
}

// initWLM starts the plugin's state and adds its settings to the defaults when it is installed.
func (s *Sim) initWLM() {
	s.wlm = &wlmState{}
	api, _, _ := s.wlmAPI()
	if api == "" {
		return
	}
	for k, v := range wlmSettingDefaults {
		s.defaults["wlm."+api+"."+k] = v
	}
}

// validateSetting is validateClusterSetting with the plugin's settings when it is installed.
func (s *Sim) validateSetting(scope, key, value string) error {
	if api, _, _ := s.wlmAPI(); api != "" {
		if rest, ok := strings.CutPrefix(key, "wlm."+api+"."); ok {
			if check, ok := wlmSettingChecks[rest]; ok {
				if err := check(value); err != nil {
					return fmt.Errorf("%s for setting [%s]", err.Error(), key)
				}
				return nil
			}
		}
	}
	return validateClusterSetting(scope, key, value)
}

// checkWLMThresholds refuses an update after which a resource's cancellation threshold would be
// under its rejection threshold, as the plugin's settings validators do; the values in effect
// (transient over persistent over defaults) after the update are compared.
func (s *Sim) checkWLMThresholds(updates map[string]map[string]*string) error {
	api, _, _ := s.wlmAPI()
	if api == "" {
		return nil
	}
	effective := func(key string) float64 {
		v, ok := s.defaults[key]
		for _, layer := range []struct {
			store map[string]string
			scope string
		}{{s.persistent, "persistent"}, {s.transient, "transient"}} {
			if u, given := updates[layer.scope][key]; given {
				if u != nil {
					v, ok = *u, true
				}
				continue
			}
			if sv, set := layer.store[key]; set {
				v, ok = sv, true
			}
		}
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return math.NaN()
		}
		return f
	}
	for _, r := range []string{"memory", "cpu"} {
		rej, can := "wlm."+api+".node."+r+"_rejection_threshold", "wlm."+api+".node."+r+"_cancellation_threshold"
		if effective(can) < effective(rej) {
			return fmt.Errorf("%s value should not be less than %s", can, rej)
		}
	}
	return nil
}

// routeWLM serves _wlm and _rules, or answers no handler when the plugin does not serve the path.
func (s *Sim) routeWLM(rq *request) (reply, *apiError) {
	segs, m := rq.segs, rq.r.Method
	api, rules, _ := s.wlmAPI()
	n := len(segs)
	switch {
	case segs[0] == "_wlm" && api != "" && ((n == 2 && segs[1] == "stats") || (n == 3 && segs[1] != api && (segs[1] == "stats" || segs[2] == "stats"))):
		if m != http.MethodGet && m != http.MethodHead {
			return reply{}, badMethod(rq.r, "GET")
		}
		return s.read(rq, s.handleWLMStats)
	case segs[0] == "_wlm" && api != "" && n >= 2 && n <= 3 && segs[1] == api:
		switch {
		case n == 2 && (m == http.MethodGet || m == http.MethodHead):
			return s.read(rq, s.handleListGroups)
		case n == 3 && (m == http.MethodGet || m == http.MethodHead):
			return s.read(rq, s.handleListGroups)
		case n == 2 && m == http.MethodPut:
			return s.write(rq, s.handleCreateGroup)
		case n == 3 && m == http.MethodPut:
			return s.write(rq, s.handleUpdateGroup)
		case n == 3 && m == http.MethodDelete:
			return s.write(rq, s.handleDeleteGroup)
		case n == 2:
			return reply{}, badMethod(rq.r, "GET", "PUT")
		}
		return reply{}, badMethod(rq.r, "GET", "PUT", "DELETE")
	case segs[0] == "_rules" && rules && n >= 2 && n <= 3 && segs[1] == "workload_group":
		switch {
		case m == http.MethodGet || m == http.MethodHead:
			return s.read(rq, s.handleListRules)
		case n == 2 && (m == http.MethodPut || m == http.MethodPost):
			return s.write(rq, s.handleCreateRule)
		case n == 3 && (m == http.MethodPut || m == http.MethodPost):
			return s.write(rq, s.handleUpdateRule)
		case n == 3 && m == http.MethodDelete:
			return s.write(rq, s.handleDeleteRule)
		}
		return reply{}, badMethod(rq.r, "GET", "PUT", "POST", "DELETE")
	}
	return reply{}, noHandler(rq.r)
}

func (g *wlmGroup) json() object {
	limits := object{}
	for _, k := range []string{"cpu", "memory"} {
		if v, ok := g.limits[k]; ok {
			limits = append(limits, field{k, v})
		}
	}
	return object{{"_id", g.id}, {"name", g.name}, {"resiliency_mode", g.mode}, {"resource_limits", limits}, {"updated_at", g.updated}}
}

func (w *wlmState) group(name string) *wlmGroup {
	for _, g := range w.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

func groupNotFound(api, name string) *apiError {
	return newError(http.StatusNotFound, "resource_not_found_exception", fmt.Sprintf("%s with name %s does not exist", groupKind(api), name), nil)
}

func (s *Sim) handleListGroups(rq *request) (reply, *apiError) {
	api, _, _ := s.wlmAPI()
	var list []any
	for _, g := range s.wlm.groups {
		if len(rq.segs) == 3 && g.name != rq.segs[2] {
			continue
		}
		list = append(list, g.json())
	}
	if len(rq.segs) == 3 && len(list) == 0 {
		return reply{}, groupNotFound(api, rq.segs[2])
	}
	if list == nil {
		list = []any{}
	}
	return jsonReply(object{{api + "s", list}}), nil
}

// groupBody is a create or update body; pointers tell given fields from absent ones.
type groupBody struct {
	Name           *string             `json:"name"`
	ResiliencyMode *string             `json:"resiliency_mode"`
	ResourceLimits *map[string]float64 `json:"resource_limits"`
}

func decodeGroupBody(body []byte) (groupBody, *apiError) {
	var b groupBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, parseError("x_content_parse_exception", "failed to parse the group: "+err.Error())
	}
	if b.ResiliencyMode != nil && !slices.Contains([]string{"enforced", "soft", "monitor"}, *b.ResiliencyMode) {
		return b, illegalArgument(fmt.Sprintf("Invalid value for ResiliencyMode: %s", *b.ResiliencyMode))
	}
	if b.ResourceLimits != nil {
		for k, v := range *b.ResourceLimits {
			if k != "cpu" && k != "memory" {
				return b, illegalArgument(fmt.Sprintf("Invalid resource name: %s; valid are cpu and memory", k))
			}
			if !(v > 0 && v <= 1) {
				return b, illegalArgument(fmt.Sprintf("resource value should be greater than 0 and less or equal to 1.0, got %v for %s", v, k))
			}
		}
	}
	return b, nil
}

// checkCapacity refuses limits that would take a resource's sum over all groups above 1.
func (s *Sim) checkCapacity(skip *wlmGroup, limits map[string]float64) *apiError {
	for _, k := range []string{"cpu", "memory"} {
		v, ok := limits[k]
		if !ok {
			continue
		}
		total := v
		for _, g := range s.wlm.groups {
			if g != skip {
				total += g.limits[k]
			}
		}
		if total > 1+1e-9 {
			return illegalArgument(fmt.Sprintf("Total resource allocation for %s will go above the max limit of 1.0.", k))
		}
	}
	return nil
}

func (s *Sim) handleCreateGroup(rq *request) (reply, *apiError) {
	api, _, _ := s.wlmAPI()
	b, err := decodeGroupBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	switch {
	case b.Name == nil || *b.Name == "" || len(*b.Name) > 50:
		return reply{}, illegalArgument(groupKind(api) + ".name shouldn't be null, empty or more than 50 chars long")
	case b.ResiliencyMode == nil:
		return reply{}, illegalArgument(groupKind(api) + ".resiliency_mode is required")
	case b.ResourceLimits == nil || len(*b.ResourceLimits) == 0:
		return reply{}, illegalArgument(groupKind(api) + ".resource_limits should at least have 1 resource limit")
	case s.wlm.group(*b.Name) != nil:
		return reply{}, illegalArgument(fmt.Sprintf("%s with name %s already exists", groupKind(api), *b.Name))
	}
	if err := s.checkCapacity(nil, *b.ResourceLimits); err != nil {
		return reply{}, err
	}
	s.wlm.seq++
	g := &wlmGroup{id: makeID(s.sc.Seed, fmt.Sprintf("wlm/group/%d", s.wlm.seq)), name: *b.Name, mode: *b.ResiliencyMode,
		limits: *b.ResourceLimits, updated: s.now().UnixMilli()}
	s.wlm.groups = append(s.wlm.groups, g)
	return jsonReply(g.json()), nil
}

func (s *Sim) handleUpdateGroup(rq *request) (reply, *apiError) {
	api, _, _ := s.wlmAPI()
	g := s.wlm.group(rq.segs[2])
	if g == nil {
		return reply{}, groupNotFound(api, rq.segs[2])
	}
	b, err := decodeGroupBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	if b.Name != nil {
		return reply{}, illegalArgument(groupKind(api) + " name cannot be updated")
	}
	limits := map[string]float64{}
	for k, v := range g.limits {
		limits[k] = v
	}
	if b.ResourceLimits != nil {
		for k, v := range *b.ResourceLimits {
			limits[k] = v
		}
	}
	if err := s.checkCapacity(g, limits); err != nil {
		return reply{}, err
	}
	if b.ResiliencyMode != nil {
		g.mode = *b.ResiliencyMode
	}
	g.limits = limits
	g.updated = s.now().UnixMilli()
	return jsonReply(g.json()), nil
}

func (s *Sim) handleDeleteGroup(rq *request) (reply, *apiError) {
	api, _, _ := s.wlmAPI()
	g := s.wlm.group(rq.segs[2])
	if g == nil {
		return reply{}, groupNotFound(api, rq.segs[2])
	}
	s.wlm.groups = slices.DeleteFunc(s.wlm.groups, func(x *wlmGroup) bool { return x == g })
	return jsonReply(object{{"acknowledged", true}}), nil
}

func (r *wlmRule) json() object {
	o := object{{"id", r.id}, {"description", r.description}}
	if len(r.indexPattern) > 0 {
		o = append(o, field{"index_pattern", slices.Clone(r.indexPattern)})
	}
	if len(r.username)+len(r.role) > 0 {
		p := object{}
		if len(r.username) > 0 {
			p = append(p, field{"username", r.username})
		}
		if len(r.role) > 0 {
			p = append(p, field{"role", r.role})
		}
		o = append(o, field{"principal", p})
	}
	return append(o, field{"workload_group", r.group}, field{"updated_at", r.updated.UTC().Format("2006-01-02T15:04:05.000Z")})
}

func (w *wlmState) rule(id string) *wlmRule {
	for _, r := range w.rules {
		if r.id == id {
			return r
		}
	}
	return nil
}

func ruleNotFound(id string) *apiError {
	return newError(http.StatusNotFound, "resource_not_found_exception", "Rule with id "+id+" not found", nil)
}

func (s *Sim) handleListRules(rq *request) (reply, *apiError) {
	if len(rq.segs) == 3 {
		r := s.wlm.rule(rq.segs[2])
		if r == nil {
			return reply{}, ruleNotFound(rq.segs[2])
		}
		return jsonReply(object{{"rules", []any{r.json()}}}), nil
	}
	start := 0
	if after := rq.param("search_after"); after != "" {
		start = len(s.wlm.rules)
		for i, r := range s.wlm.rules {
			if r.id == after {
				start = i + 1
			}
		}
	}
	end := min(start+rulesPageSize, len(s.wlm.rules))
	list := []any{}
	for _, r := range s.wlm.rules[start:end] {
		list = append(list, r.json())
	}
	o := object{{"rules", list}}
	if end < len(s.wlm.rules) {
		o = append(o, field{"search_after", []any{s.wlm.rules[end-1].id}})
	}
	return jsonReply(o), nil
}

// ruleBody is a rule's create or update body.
type ruleBody struct {
	Description  *string   `json:"description"`
	IndexPattern *[]string `json:"index_pattern"`
	Principal    *struct {
		Username *[]string `json:"username"`
		Role     *[]string `json:"role"`
	} `json:"principal"`
	WorkloadGroup *string `json:"workload_group"`
}

func (s *Sim) decodeRuleBody(body []byte) (ruleBody, *apiError) {
	var b ruleBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, parseError("x_content_parse_exception", "failed to parse the rule: "+err.Error())
	}
	_, _, principal := s.wlmAPI()
	if b.Principal != nil && !principal {
		return b, illegalArgument("principal is not a valid attribute for feature type workload_group on OpenSearch " + s.osVersion())
	}
	if b.IndexPattern != nil {
		for _, p := range *b.IndexPattern {
			if i := strings.IndexByte(p, '*'); p == "" || (i >= 0 && i != len(p)-1) {
				return b, illegalArgument(fmt.Sprintf("index_pattern [%s]: a value is an index name or a prefix ending in '*'", p))
			}
		}
	}
	if b.WorkloadGroup != nil && !slices.ContainsFunc(s.wlm.groups, func(g *wlmGroup) bool { return g.id == *b.WorkloadGroup }) {
		return b, illegalArgument(fmt.Sprintf("Couldn't find an existing workload group with id: %s", *b.WorkloadGroup))
	}
	return b, nil
}

func (r *wlmRule) apply(b ruleBody) {
	if b.Description != nil {
		r.description = *b.Description
	}
	if b.IndexPattern != nil {
		r.indexPattern = slices.Clone(*b.IndexPattern)
	}
	if b.Principal != nil && b.Principal.Username != nil {
		r.username = slices.Clone(*b.Principal.Username)
	}
	if b.Principal != nil && b.Principal.Role != nil {
		r.role = slices.Clone(*b.Principal.Role)
	}
	if b.WorkloadGroup != nil {
		r.group = *b.WorkloadGroup
	}
}

func (s *Sim) handleCreateRule(rq *request) (reply, *apiError) {
	b, err := s.decodeRuleBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	r := &wlmRule{updated: s.now()}
	r.apply(b)
	switch {
	case r.description == "":
		return reply{}, illegalArgument("Rule description can't be null or empty")
	case r.group == "":
		return reply{}, illegalArgument("Rule workload_group can't be null or empty")
	case len(r.indexPattern)+len(r.username)+len(r.role) == 0:
		return reply{}, illegalArgument("Rule should have at least 1 attribute requirement")
	}
	s.wlm.seq++
	r.id = makeID(s.sc.Seed, fmt.Sprintf("wlm/rule/%d", s.wlm.seq))
	s.wlm.rules = append(s.wlm.rules, r)
	return jsonReply(r.json()), nil
}

func (s *Sim) handleUpdateRule(rq *request) (reply, *apiError) {
	r := s.wlm.rule(rq.segs[2])
	if r == nil {
		return reply{}, ruleNotFound(rq.segs[2])
	}
	b, err := s.decodeRuleBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	r.apply(b)
	r.updated = s.now()
	return jsonReply(r.json()), nil
}

func (s *Sim) handleDeleteRule(rq *request) (reply, *apiError) {
	r := s.wlm.rule(rq.segs[2])
	if r == nil {
		return reply{}, ruleNotFound(rq.segs[2])
	}
	s.wlm.rules = slices.DeleteFunc(s.wlm.rules, func(x *wlmRule) bool { return x == r })
	return jsonReply(object{{"acknowledged", true}}), nil
}
