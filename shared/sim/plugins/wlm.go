package plugins

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/settings"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// WlmGroup is a workload group the workload management plugin knows: its resiliency mode and its
// resource limits.
type WlmGroup struct {
	ID, Name, Mode string
	Limits         map[string]float64
	Updated        int64
}

// WlmRule is a rule that sends matching requests (by index pattern or principal) to a group.
type WlmRule struct {
	ID, Description string
	IndexPattern    []string
	Username, Role  []string
	Group           string
	Updated         time.Time
}

// WlmState is the plugin's groups and rules, as its APIs change them, and its runtime state.
type WlmState struct {
	Groups []*WlmGroup // in creation order
	Rules  []*WlmRule
	Seq    int
	Rt     wlmRuntime // the plugin at work on tasks (wlm_enforce.go)
}

// WlmAPI is the group API the cluster serves ("" for none), whether it serves rules, and whether
// rules take principal attributes.
func (s *Plugins) WlmAPI() (api string, rules, principal bool) {
	if !slices.Contains(s.Spec.Cluster.Plugins, scenario.PluginWorkloadManagement) {
		return "", false, false
	}
	major, minor, err := scenario.ParseVersion(s.OsVersion())
	if err != nil || !scenario.AtLeast(major, minor, 2, 18) {
		return "", false, false
	}
	if !scenario.AtLeast(major, minor, 3, 1) {
		return "query_group", false, false
	}
	return "workload_group", true, scenario.AtLeast(major, minor, 3, 3)
}

// GroupKind is the plugin's name for a group in its messages.
func GroupKind(api string) string {
	if api == "query_group" {
		return "QueryGroup"
	}
	return "WorkloadGroup"
}

// GroupWritesNeedEnabled reports whether the plugin of the scenario's version creates, updates and
// deletes groups only in mode enabled: from 3.2 (OpenSearch #18652) its REST create, update and
// delete handlers call WlmClusterSettingValuesProvider.ensureWlmEnabled before anything else.
// The query_group handlers (2.18 to 3.0), 3.1's workload_group handlers and the rule API do not.
func (s *Plugins) GroupWritesNeedEnabled() bool {
	api, _, _ := s.WlmAPI()
	if api == "" {
		return false
	}
	major, minor, err := scenario.ParseVersion(s.OsVersion())
	return err == nil && scenario.AtLeast(major, minor, 3, 2)
}

// EnsureWLMEnabled is the plugin's ensureWlmEnabled for the group call op ("create", "update" or
// "delete"): nil when the version does not check or the mode in effect is enabled, else the
// IllegalStateException the handler throws, which OpenSearch answers as a 500
// illegal_state_exception. The reason is the plugin's, named after the handler
// (create_workload_group), with its missing space after the first sentence.
func (s *Plugins) EnsureWLMEnabled(op string) *wire.APIError {
	if !s.GroupWritesNeedEnabled() {
		return nil
	}
	api, _, _ := s.WlmAPI()
	if s.SettingOr("wlm."+api+".mode", wlmSettingDefaults["mode"]) == "enabled" {
		return nil
	}
	return wire.NewError(http.StatusInternalServerError, "illegal_state_exception",
		"Cannot "+op+"_"+api+" because workload management mode is disabled or monitor_only."+
			"To enable this feature, set [wlm."+api+".mode] to 'enabled' in cluster settings.", nil)
}

// wlmSettingChecks are the plugin's settings under wlm.<api>., with their bounds.
var wlmSettingChecks = map[string]settings.SettingCheck{
	"mode":                               settings.OneOf("enabled", "monitor_only", "disabled"),
	"node.memory_rejection_threshold":    fractionAtMost(0.9),
	"node.cpu_rejection_threshold":       fractionAtMost(0.9),
	"node.memory_cancellation_threshold": fractionAtMost(0.95),
	"node.cpu_cancellation_threshold":    fractionAtMost(0.95),
	"duress_streak":                      settings.IntAtLeast(3),
	"enforcement_interval":               settings.IntAtLeast(1000),
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

func fractionAtMost(most float64) settings.SettingCheck {
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

// InitWLM starts the plugin's state and adds its settings to the defaults when it is installed.
func (s *Plugins) InitWLM() {
	s.WLM = &WlmState{}
	api, _, _ := s.WlmAPI()
	if api == "" {
		return
	}
	for k, v := range wlmSettingDefaults {
		s.Defaults["wlm."+api+"."+k] = v
	}
}

// ValidateSetting is validateClusterSetting with the plugin's settings when it is installed.
func (s *Plugins) ValidateSetting(scope, key, value string) error {
	if api, _, _ := s.WlmAPI(); api != "" {
		if rest, ok := strings.CutPrefix(key, "wlm."+api+"."); ok {
			if check, ok := wlmSettingChecks[rest]; ok {
				if err := check(value); err != nil {
					return fmt.Errorf("%s for setting [%s]", err.Error(), key)
				}
				return nil
			}
		}
	}
	return settings.ValidateClusterSetting(scope, key, value)
}

// CheckWLMThresholds refuses an update after which a resource's cancellation threshold would be
// under its rejection threshold, as the plugin's settings validators do; the values in effect
// (transient over persistent over defaults) after the update are compared.
func (s *Plugins) CheckWLMThresholds(updates map[string]map[string]*string) error {
	api, _, _ := s.WlmAPI()
	if api == "" {
		return nil
	}
	effective := func(key string) float64 {
		v, ok := s.Defaults[key]
		for _, layer := range []struct {
			store map[string]string
			scope string
		}{{s.Persistent, "persistent"}, {s.Transient, "transient"}} {
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

// JSON is the group as the workload group API returns it.
func (g *WlmGroup) JSON() wire.Object {
	limits := wire.Object{}
	for _, k := range []string{"cpu", "memory"} {
		if v, ok := g.Limits[k]; ok {
			limits = append(limits, wire.Field{k, v})
		}
	}
	return wire.Object{{"_id", g.ID}, {"name", g.Name}, {"resiliency_mode", g.Mode}, {"resource_limits", limits}, {"updated_at", g.Updated}}
}

// Group is the group named name, or nil.
func (w *WlmState) Group(name string) *WlmGroup {
	for _, g := range w.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// JSON is the rule as the rules API returns it.
func (r *WlmRule) JSON() wire.Object {
	o := wire.Object{{"id", r.ID}, {"description", r.Description}}
	if len(r.IndexPattern) > 0 {
		o = append(o, wire.Field{"index_pattern", slices.Clone(r.IndexPattern)})
	}
	if len(r.Username)+len(r.Role) > 0 {
		p := wire.Object{}
		if len(r.Username) > 0 {
			p = append(p, wire.Field{"username", r.Username})
		}
		if len(r.Role) > 0 {
			p = append(p, wire.Field{"role", r.Role})
		}
		o = append(o, wire.Field{"principal", p})
	}
	return append(o, wire.Field{"workload_group", r.Group}, wire.Field{"updated_at", r.Updated.UTC().Format("2006-01-02T15:04:05.000Z")})
}

// Rule is the rule with id, or nil.
func (w *WlmState) Rule(id string) *WlmRule {
	for _, r := range w.Rules {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// RuleBody is a rule's create or update body.
type RuleBody struct {
	Description  *string   `json:"description"`
	IndexPattern *[]string `json:"index_pattern"`
	Principal    *struct {
		Username *[]string `json:"username"`
		Role     *[]string `json:"role"`
	} `json:"principal"`
	WorkloadGroup *string `json:"workload_group"`
}

// Apply sets the fields the body gives and leaves the others, as an update does.
func (r *WlmRule) Apply(b RuleBody) {
	if b.Description != nil {
		r.Description = *b.Description
	}
	if b.IndexPattern != nil {
		r.IndexPattern = slices.Clone(*b.IndexPattern)
	}
	if b.Principal != nil && b.Principal.Username != nil {
		r.Username = slices.Clone(*b.Principal.Username)
	}
	if b.Principal != nil && b.Principal.Role != nil {
		r.Role = slices.Clone(*b.Principal.Role)
	}
	if b.WorkloadGroup != nil {
		r.Group = *b.WorkloadGroup
	}
}
