package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/plugins"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// RulesPageSize is the rules one GET answers with before search_after.
const RulesPageSize = 50

// routeWLM serves _wlm and _rules, or answers no handler when the plugin does not serve the path.
func (s *Server) routeWLM(rq *wire.Request) (wire.Reply, *wire.APIError) {
	segs, m := rq.Segs, rq.R.Method
	api, rules, _ := s.Plugins.WlmAPI()
	n := len(segs)
	switch {
	case segs[0] == "_wlm" && api != "" && ((n == 2 && segs[1] == "stats") || (n == 3 && segs[1] != api && (segs[1] == "stats" || segs[2] == "stats"))):
		if m != http.MethodGet && m != http.MethodHead {
			return wire.Reply{}, wire.BadMethod(rq.R, "GET")
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
			return wire.Reply{}, wire.BadMethod(rq.R, "GET", "PUT")
		}
		return wire.Reply{}, wire.BadMethod(rq.R, "GET", "PUT", "DELETE")
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
		return wire.Reply{}, wire.BadMethod(rq.R, "GET", "PUT", "POST", "DELETE")
	}
	return wire.Reply{}, wire.NoHandler(rq.R)
}

func groupNotFound(api, name string) *wire.APIError {
	return wire.NewError(http.StatusNotFound, "resource_not_found_exception", fmt.Sprintf("%s with name %s does not exist", plugins.GroupKind(api), name), nil)
}

func (s *Server) handleListGroups(rq *wire.Request) (wire.Reply, *wire.APIError) {
	api, _, _ := s.Plugins.WlmAPI()
	var list []any
	for _, g := range s.Plugins.WLM.Groups {
		if len(rq.Segs) == 3 && g.Name != rq.Segs[2] {
			continue
		}
		list = append(list, g.JSON())
	}
	if len(rq.Segs) == 3 && len(list) == 0 {
		return wire.Reply{}, groupNotFound(api, rq.Segs[2])
	}
	if list == nil {
		list = []any{}
	}
	return wire.JSONReply(wire.Object{{api + "s", list}}), nil
}

// groupBody is a create or update body; pointers tell given fields from absent ones.
type groupBody struct {
	Name           *string             `json:"name"`
	ResiliencyMode *string             `json:"resiliency_mode"`
	ResourceLimits *map[string]float64 `json:"resource_limits"`
}

func decodeGroupBody(body []byte) (groupBody, *wire.APIError) {
	var b groupBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, wire.ParseError("x_content_parse_exception", "failed to parse the group: "+err.Error())
	}
	if b.ResiliencyMode != nil && !slices.Contains([]string{"enforced", "soft", "monitor"}, *b.ResiliencyMode) {
		return b, wire.IllegalArgument(fmt.Sprintf("Invalid value for ResiliencyMode: %s", *b.ResiliencyMode))
	}
	if b.ResourceLimits != nil {
		for k, v := range *b.ResourceLimits {
			if k != "cpu" && k != "memory" {
				return b, wire.IllegalArgument(fmt.Sprintf("Invalid resource name: %s; valid are cpu and memory", k))
			}
			if !(v > 0 && v <= 1) {
				return b, wire.IllegalArgument(fmt.Sprintf("resource value should be greater than 0 and less or equal to 1.0, got %v for %s", v, k))
			}
		}
	}
	return b, nil
}

// checkCapacity refuses limits that would take a resource's sum over all groups above 1.
func (s *Server) checkCapacity(skip *plugins.WlmGroup, limits map[string]float64) *wire.APIError {
	for _, k := range []string{"cpu", "memory"} {
		v, ok := limits[k]
		if !ok {
			continue
		}
		total := v
		for _, g := range s.Plugins.WLM.Groups {
			if g != skip {
				total += g.Limits[k]
			}
		}
		if total > 1+1e-9 {
			return wire.IllegalArgument(fmt.Sprintf("Total resource allocation for %s will go above the max limit of 1.0.", k))
		}
	}
	return nil
}

func (s *Server) handleCreateGroup(rq *wire.Request) (wire.Reply, *wire.APIError) {
	// From 3.2 the handler checks the mode before it reads the body or the group.
	if err := s.Plugins.EnsureWLMEnabled("create"); err != nil {
		return wire.Reply{}, err
	}
	api, _, _ := s.Plugins.WlmAPI()
	b, err := decodeGroupBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	switch {
	case b.Name == nil || *b.Name == "" || len(*b.Name) > 50:
		return wire.Reply{}, wire.IllegalArgument(plugins.GroupKind(api) + ".name shouldn't be null, empty or more than 50 chars long")
	case b.ResiliencyMode == nil:
		return wire.Reply{}, wire.IllegalArgument(plugins.GroupKind(api) + ".resiliency_mode is required")
	case b.ResourceLimits == nil || len(*b.ResourceLimits) == 0:
		return wire.Reply{}, wire.IllegalArgument(plugins.GroupKind(api) + ".resource_limits should at least have 1 resource limit")
	case s.Plugins.WLM.Group(*b.Name) != nil:
		return wire.Reply{}, wire.IllegalArgument(fmt.Sprintf("%s with name %s already exists", plugins.GroupKind(api), *b.Name))
	}
	if err := s.checkCapacity(nil, *b.ResourceLimits); err != nil {
		return wire.Reply{}, err
	}
	s.Plugins.WLM.Seq++
	g := &plugins.WlmGroup{ID: model.MakeID(s.Spec.Seed, fmt.Sprintf("wlm/group/%d", s.Plugins.WLM.Seq)), Name: *b.Name, Mode: *b.ResiliencyMode,
		Limits: *b.ResourceLimits, Updated: s.NowLocked().UnixMilli()}
	s.Plugins.WLM.Groups = append(s.Plugins.WLM.Groups, g)
	return wire.JSONReply(g.JSON()), nil
}

func (s *Server) handleUpdateGroup(rq *wire.Request) (wire.Reply, *wire.APIError) {
	// From 3.2 the handler checks the mode before it reads the body or the group.
	if err := s.Plugins.EnsureWLMEnabled("update"); err != nil {
		return wire.Reply{}, err
	}
	api, _, _ := s.Plugins.WlmAPI()
	g := s.Plugins.WLM.Group(rq.Segs[2])
	if g == nil {
		return wire.Reply{}, groupNotFound(api, rq.Segs[2])
	}
	b, err := decodeGroupBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	if b.Name != nil {
		return wire.Reply{}, wire.IllegalArgument(plugins.GroupKind(api) + " name cannot be updated")
	}
	limits := map[string]float64{}
	for k, v := range g.Limits {
		limits[k] = v
	}
	if b.ResourceLimits != nil {
		for k, v := range *b.ResourceLimits {
			limits[k] = v
		}
	}
	if err := s.checkCapacity(g, limits); err != nil {
		return wire.Reply{}, err
	}
	if b.ResiliencyMode != nil {
		g.Mode = *b.ResiliencyMode
	}
	g.Limits = limits
	g.Updated = s.NowLocked().UnixMilli()
	return wire.JSONReply(g.JSON()), nil
}

func (s *Server) handleDeleteGroup(rq *wire.Request) (wire.Reply, *wire.APIError) {
	// From 3.2 the handler checks the mode before it reads the body or the group.
	if err := s.Plugins.EnsureWLMEnabled("delete"); err != nil {
		return wire.Reply{}, err
	}
	api, _, _ := s.Plugins.WlmAPI()
	g := s.Plugins.WLM.Group(rq.Segs[2])
	if g == nil {
		return wire.Reply{}, groupNotFound(api, rq.Segs[2])
	}
	// The plugin refuses to delete a group a rule still names, as a real 3.8.0 node refused
	// shardwise's delete of a sandbox's group before its rule (the ids print as the Java objects).
	var named []string
	for _, r := range s.Plugins.WLM.Rules {
		if r.Group == g.ID {
			named = append(named, "org.opensearch.rule.autotagging.Rule@"+r.ID)
		}
	}
	if len(named) > 0 {
		return wire.Reply{}, wire.NewError(http.StatusInternalServerError, "illegal_state_exception",
			g.Name+" workload group has rules with ids: ["+strings.Join(named, ", ")+"] .Please delete them first otherwise system will be an inconsistent state.", nil)
	}
	s.Plugins.WLM.Groups = slices.DeleteFunc(s.Plugins.WLM.Groups, func(x *plugins.WlmGroup) bool { return x == g })
	return wire.JSONReply(wire.Object{{"acknowledged", true}}), nil
}

func ruleNotFound(id string) *wire.APIError {
	return wire.NewError(http.StatusNotFound, "resource_not_found_exception", "Rule with id "+id+" not found", nil)
}

func (s *Server) handleListRules(rq *wire.Request) (wire.Reply, *wire.APIError) {
	if len(rq.Segs) == 3 {
		r := s.Plugins.WLM.Rule(rq.Segs[2])
		if r == nil {
			return wire.Reply{}, ruleNotFound(rq.Segs[2])
		}
		return wire.JSONReply(wire.Object{{"rules", []any{r.JSON()}}}), nil
	}
	start := 0
	if after := rq.Param("search_after"); after != "" {
		start = len(s.Plugins.WLM.Rules)
		for i, r := range s.Plugins.WLM.Rules {
			if r.ID == after {
				start = i + 1
			}
		}
	}
	end := min(start+RulesPageSize, len(s.Plugins.WLM.Rules))
	list := []any{}
	for _, r := range s.Plugins.WLM.Rules[start:end] {
		list = append(list, r.JSON())
	}
	o := wire.Object{{"rules", list}}
	if end < len(s.Plugins.WLM.Rules) {
		o = append(o, wire.Field{"search_after", []any{s.Plugins.WLM.Rules[end-1].ID}})
	}
	return wire.JSONReply(o), nil
}

func (s *Server) decodeRuleBody(body []byte) (plugins.RuleBody, *wire.APIError) {
	var b plugins.RuleBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, wire.ParseError("x_content_parse_exception", "failed to parse the rule: "+err.Error())
	}
	_, _, principal := s.Plugins.WlmAPI()
	if b.Principal != nil && !principal {
		return b, wire.IllegalArgument("principal is not a valid attribute for feature type workload_group on OpenSearch " + s.OsVersion())
	}
	if b.IndexPattern != nil {
		for _, p := range *b.IndexPattern {
			if i := strings.IndexByte(p, '*'); p == "" || (i >= 0 && i != len(p)-1) {
				return b, wire.IllegalArgument(fmt.Sprintf("index_pattern [%s]: a value is an index name or a prefix ending in '*'", p))
			}
		}
	}
	if b.WorkloadGroup != nil && !slices.ContainsFunc(s.Plugins.WLM.Groups, func(g *plugins.WlmGroup) bool { return g.ID == *b.WorkloadGroup }) {
		return b, wire.IllegalArgument(fmt.Sprintf("Couldn't find an existing workload group with id: %s", *b.WorkloadGroup))
	}
	return b, nil
}

func (s *Server) handleCreateRule(rq *wire.Request) (wire.Reply, *wire.APIError) {
	b, err := s.decodeRuleBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	r := &plugins.WlmRule{Updated: s.NowLocked()}
	r.Apply(b)
	switch {
	case r.Description == "":
		return wire.Reply{}, wire.IllegalArgument("Rule description can't be null or empty")
	case r.Group == "":
		return wire.Reply{}, wire.IllegalArgument("Rule workload_group can't be null or empty")
	case len(r.IndexPattern)+len(r.Username)+len(r.Role) == 0:
		return wire.Reply{}, wire.IllegalArgument("Rule should have at least 1 attribute requirement")
	}
	s.Plugins.WLM.Seq++
	r.ID = model.MakeID(s.Spec.Seed, fmt.Sprintf("wlm/rule/%d", s.Plugins.WLM.Seq))
	s.Plugins.WLM.Rules = append(s.Plugins.WLM.Rules, r)
	return wire.JSONReply(r.JSON()), nil
}

func (s *Server) handleUpdateRule(rq *wire.Request) (wire.Reply, *wire.APIError) {
	r := s.Plugins.WLM.Rule(rq.Segs[2])
	if r == nil {
		return wire.Reply{}, ruleNotFound(rq.Segs[2])
	}
	b, err := s.decodeRuleBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	r.Apply(b)
	r.Updated = s.NowLocked()
	return wire.JSONReply(r.JSON()), nil
}

func (s *Server) handleDeleteRule(rq *wire.Request) (wire.Reply, *wire.APIError) {
	r := s.Plugins.WLM.Rule(rq.Segs[2])
	if r == nil {
		return wire.Reply{}, ruleNotFound(rq.Segs[2])
	}
	s.Plugins.WLM.Rules = slices.DeleteFunc(s.Plugins.WLM.Rules, func(x *plugins.WlmRule) bool { return x == r })
	return wire.JSONReply(wire.Object{{"acknowledged", true}}), nil
}

// handleWLMStats is GET _wlm/stats, _wlm/{node_id}/stats and _wlm/stats/{group_id}: per node, each
// group's counters and last recorded usage, the default group included.
func (s *Server) handleWLMStats(rq *wire.Request) (wire.Reply, *wire.APIError) {
	api, _, _ := s.Plugins.WlmAPI()
	nodes := s.PresentNodes()
	wantGroup := ""
	switch {
	case len(rq.Segs) == 3 && rq.Segs[1] == "stats":
		wantGroup = rq.Segs[2]
	case len(rq.Segs) == 3:
		nodes = s.MatchNodes(strings.Split(rq.Segs[1], ","))
	}
	ids := []string{plugins.DefaultGroupID(api)}
	for _, g := range s.Plugins.WLM.Groups {
		ids = append(ids, g.ID)
	}
	if wantGroup != "" && wantGroup != "_all" && !slices.Contains(ids, wantGroup) {
		return wire.Reply{}, wire.NewError(http.StatusNotFound, "resource_not_found_exception",
			fmt.Sprintf("%s with id %s does not exist", plugins.GroupKind(api), wantGroup), nil)
	}
	var breach *bool
	if v := rq.Param("breach"); v != "" {
		b := v == "true"
		breach = &b
	}
	key, completions, rejections := "workload_groups", "total_completions", "total_rejections"
	if api == "query_group" {
		key, completions, rejections = "query_groups", "completions", "rejections"
	}
	out := wire.Object{{"_nodes", nodesHeader(len(nodes))}, {"cluster_name", model.ClusterName}}
	for _, n := range nodes {
		groups := wire.Object{}
		for _, id := range slices.Sorted(slices.Values(ids)) {
			if wantGroup != "" && wantGroup != "_all" && id != wantGroup {
				continue
			}
			if breach != nil && *breach != s.Plugins.Breached(api, n, id) {
				continue
			}
			st := s.Plugins.GroupStats(n, id)
			o := wire.Object{{completions, st.Completions}, {rejections, st.Rejections}}
			if api == "query_group" {
				o = append(o, wire.Field{"failures", st.Failures})
			}
			o = append(o, wire.Field{"total_cancellations", st.Cancellations})
			for i, r := range plugins.WlmResources {
				o = append(o, wire.Field{r, wire.Object{{"current_usage", st.Res[i].Usage},
					{"cancellations", st.Res[i].Cancellations}, {"rejections", st.Res[i].Rejections}}})
			}
			groups = append(groups, wire.Field{id, o})
		}
		out = append(out, wire.Field{n.ID, wire.Object{{key, groups}}})
	}
	return wire.JSONReply(out), nil
}
