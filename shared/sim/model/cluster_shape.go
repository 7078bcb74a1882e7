package model

import (
	"cmp"
	"maps"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/settings"
)

// applyClusterShape sets the awareness settings the scenario gives, persistently, as an operator
// would before the run.
func (s *Sim) applyClusterShape() {
	if attrs := s.Spec.Cluster.AwarenessAttributeList(); len(attrs) > 0 {
		s.Persistent["cluster.routing.allocation.awareness.attributes"] = strings.Join(attrs, ",")
	}
	for a, values := range s.Spec.Cluster.AwarenessForce {
		s.Persistent[settings.AwarenessForcePrefix+a+settings.AwarenessForceSuffix] = strings.Join(values, ",")
	}
}

// nodeAttributes are a node's custom attributes: node_defaults' under the node's own, and zone.
func nodeAttributes(ns, defaults scenario.NodeSpec) map[string]string {
	out := map[string]string{}
	maps.Copy(out, defaults.Attributes)
	maps.Copy(out, ns.Attributes)
	if z := cmp.Or(ns.Zone, defaults.Zone); z != "" {
		out["zone"] = z
	}
	return out
}

// compileSettings derives what the allocator reads from an index's settings.
func (ix *Index) compileSettings() {
	ix.Filters = compileFilters(ix.Settings, "index.routing.allocation.")
	ix.operatorFilters = compileFilters(ix.OperatorSettings, "index.routing.allocation.")
	ix.TotalShardsCap = 0
	if v, ok := ix.Settings["index.routing.allocation.total_shards_per_node"]; ok {
		ix.TotalShardsCap, _ = strconv.Atoi(v)
	}
	ix.TotalPrimaryCap = 0
	if v, ok := ix.Settings["index.routing.allocation.total_primary_shards_per_node"]; ok {
		ix.TotalPrimaryCap, _ = strconv.Atoi(v)
	}
	ix.Priority = 0
	if v, ok := ix.Settings["index.priority"]; ok {
		ix.Priority, _ = strconv.Atoi(v)
	}
}

// applySpecSettings gives a new index the settings its spec sets.
func (ix *Index) applySpecSettings(spec *scenario.IndexSpec) {
	maps.Copy(ix.Settings, spec.IndexSettingsOf())
	maps.Copy(ix.OperatorSettings, spec.IndexSettingsOf())
	ix.compileSettings()
}
