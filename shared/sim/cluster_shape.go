package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
)

// The scenario's cluster shape beyond nodes and indices: node attributes, forced awareness and the
// index settings an index spec sets at creation (allocation filters, total_shards_per_node,
// delayed_timeout_seconds, priority).

// awarenessForcePrefix and awarenessForceSuffix frame the cluster setting that holds an attribute's
// forced awareness values: cluster.routing.allocation.awareness.force.<attribute>.values.
const (
	awarenessForcePrefix = "cluster.routing.allocation.awareness.force."
	awarenessForceSuffix = ".values"
)

// builtinFilterAttrs are the allocation-filter attributes OpenSearch derives from the node itself,
// not from node.attr.*.
var builtinFilterAttrs = []string{"_name", "_id", "_ip", "_host", "_host_ip", "_publish_ip"}

// validAttrName checks a custom node attribute's name: OpenSearch reads node.attr.<name>, and
// filter and awareness settings put the name in a setting key.
func validAttrName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an attribute name is required")
	case strings.HasPrefix(name, "_"):
		return fmt.Errorf("%q: names starting with '_' are OpenSearch's own filter attributes (%s)", name, strings.Join(builtinFilterAttrs, ", "))
	case strings.ContainsAny(name, " ,*\"") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
		return fmt.Errorf("%q: attribute names may not contain spaces, ',', '*' or '\"', nor start or end with '.'", name)
	}
	return nil
}

// validAttrValue checks a node attribute's value: allocation filters split lists on ',' and match
// '*' as a wildcard, so neither can be part of a value.
func validAttrValue(v string) error {
	if strings.TrimSpace(v) == "" || strings.TrimSpace(v) != v || strings.ContainsAny(v, ",*") {
		return fmt.Errorf("%q: a value must be non-empty, without ',' or '*' or surrounding spaces", v)
	}
	return nil
}

// validateAttributes checks a node's attributes. zone has its own field, kept as it always was.
func validateAttributes(attrs map[string]string, path string) error {
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if k == "zone" {
			return fieldError(path+".zone", "give the zone in the node's zone field")
		}
		if err := validAttrName(k); err != nil {
			return fieldError(path, "%v", err)
		}
		if err := validAttrValue(attrs[k]); err != nil {
			return fieldError(path+"."+k, "%v", err)
		}
	}
	return nil
}

// validateAwareness checks awareness_attributes and awareness_force.
func (c ClusterSpec) validateAwareness(path string) error {
	seen := map[string]bool{}
	for i, a := range c.AwarenessAttributes {
		p := fmt.Sprintf("%s.awareness_attributes[%d]", path, i)
		if err := validAttrName(a); err != nil {
			return fieldError(p, "%v", err)
		}
		if seen[a] {
			return fieldError(p, "%q is listed twice", a)
		}
		seen[a] = true
	}
	for _, a := range slices.Sorted(maps.Keys(c.AwarenessForce)) {
		p := path + ".awareness_force." + a
		if err := validAttrName(a); err != nil {
			return fieldError(path+".awareness_force", "%v", err)
		}
		values := c.AwarenessForce[a]
		if len(values) == 0 {
			return fieldError(p, "at least one value is required")
		}
		dup := map[string]bool{}
		for i, v := range values {
			if err := validAttrValue(v); err != nil {
				return fieldError(fmt.Sprintf("%s[%d]", p, i), "%v", err)
			}
			if dup[v] {
				return fieldError(fmt.Sprintf("%s[%d]", p, i), "%q is listed twice", v)
			}
			dup[v] = true
		}
	}
	return nil
}

// awarenessAttributeList is cluster.routing.allocation.awareness.attributes as the scenario sets
// it: awareness_attributes, then each forced attribute not among them, since OpenSearch applies
// forced values only to awareness attributes.
func (c ClusterSpec) awarenessAttributeList() []string {
	out := slices.Clone(c.AwarenessAttributes)
	for _, a := range slices.Sorted(maps.Keys(c.AwarenessForce)) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// applyClusterShape sets the awareness settings the scenario gives, persistently, as an operator
// would before the run.
func (s *Sim) applyClusterShape() {
	if attrs := s.sc.Cluster.awarenessAttributeList(); len(attrs) > 0 {
		s.persistent["cluster.routing.allocation.awareness.attributes"] = strings.Join(attrs, ",")
	}
	for a, values := range s.sc.Cluster.AwarenessForce {
		s.persistent[awarenessForcePrefix+a+awarenessForceSuffix] = strings.Join(values, ",")
	}
}

// isAwarenessForceKey reports whether k is a cluster.routing.allocation.awareness.force.*.values key.
func isAwarenessForceKey(k string) bool {
	rest, ok := strings.CutPrefix(k, awarenessForcePrefix)
	if !ok {
		return false
	}
	attr, ok := strings.CutSuffix(rest, awarenessForceSuffix)
	return ok && attr != ""
}

// nodeAttributes are a node's custom attributes: node_defaults' under the node's own, and zone.
func nodeAttributes(ns, defaults NodeSpec) map[string]string {
	out := map[string]string{}
	maps.Copy(out, defaults.Attributes)
	maps.Copy(out, ns.Attributes)
	if z := cmp.Or(ns.Zone, defaults.Zone); z != "" {
		out["zone"] = z
	}
	return out
}

// indexSettingsOf lists the index settings an index spec sets, as flat keys.
func (ix *IndexSpec) indexSettingsOf() map[string]string {
	out := map[string]string{}
	if a := ix.Allocation; a != nil {
		for kind, m := range map[string]map[string]string{"include": a.Include, "exclude": a.Exclude, "require": a.Require} {
			for attr, v := range m {
				out["index.routing.allocation."+kind+"."+attr] = v
			}
		}
	}
	if ix.TotalShardsPerNode != 0 {
		out["index.routing.allocation.total_shards_per_node"] = strconv.Itoa(ix.TotalShardsPerNode)
	}
	if ix.DelayedTimeoutSeconds != nil {
		out["index.unassigned.node_left.delayed_timeout"] = secondsTimeValue(*ix.DelayedTimeoutSeconds)
	}
	if ix.Priority != 0 {
		out["index.priority"] = strconv.Itoa(ix.Priority)
	}
	return out
}

// secondsTimeValue writes seconds as an OpenSearch time value: whole seconds as "120s", else
// milliseconds.
func secondsTimeValue(sec float64) string {
	if sec == math.Trunc(sec) {
		return strconv.FormatFloat(sec, 'f', 0, 64) + "s"
	}
	return strconv.FormatFloat(math.Round(sec*1000), 'f', 0, 64) + "ms"
}

// validateSettingsFields checks the index settings fields of an index spec.
func (ix *IndexSpec) validateSettingsFields(path string) error {
	if a := ix.Allocation; a != nil {
		for _, kind := range []struct {
			name string
			m    map[string]string
		}{{"include", a.Include}, {"exclude", a.Exclude}, {"require", a.Require}} {
			for _, attr := range slices.Sorted(maps.Keys(kind.m)) {
				p := path + ".allocation." + kind.name + "." + attr
				if !slices.Contains(builtinFilterAttrs, attr) {
					if err := validAttrName(attr); err != nil {
						return fieldError(path+".allocation."+kind.name, "%v", err)
					}
				}
				if len(cluster.FilterPatterns(kind.m[attr])) == 0 {
					return fieldError(p, "needs at least one value (comma-separated, * as a wildcard)")
				}
			}
		}
	}
	switch d := ix.DelayedTimeoutSeconds; {
	case ix.TotalShardsPerNode < 0:
		return fieldError(path+".total_shards_per_node", "must be positive (leave it out for no limit), got %d", ix.TotalShardsPerNode)
	case d != nil && (!(*d >= 0) || math.IsInf(*d, 0) || *d > 1e9):
		return fieldError(path+".delayed_timeout_seconds", "must be in [0, 1e9], got %v", *d)
	case ix.Priority < 0:
		return fieldError(path+".priority", "must not be negative, got %d", ix.Priority)
	}
	return nil
}

// compileSettings derives what the allocator reads from an index's settings.
func (ix *index) compileSettings() {
	ix.filters = compileFilters(ix.settings, "index.routing.allocation.")
	ix.totalShardsCap = 0
	if v, ok := ix.settings["index.routing.allocation.total_shards_per_node"]; ok {
		ix.totalShardsCap, _ = strconv.Atoi(v)
	}
	ix.priority = 0
	if v, ok := ix.settings["index.priority"]; ok {
		ix.priority, _ = strconv.Atoi(v)
	}
}

// applySpecSettings gives a new index the settings its spec sets.
func (ix *index) applySpecSettings(spec *IndexSpec) {
	maps.Copy(ix.settings, spec.indexSettingsOf())
	ix.compileSettings()
}
