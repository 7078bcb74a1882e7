package scenario

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/sim/settings"
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

// AwarenessAttributeList is cluster.routing.allocation.awareness.attributes as the scenario sets
// it: awareness_attributes, then each forced attribute not among them, since OpenSearch applies
// forced values only to awareness attributes.
func (c ClusterSpec) AwarenessAttributeList() []string {
	out := slices.Clone(c.AwarenessAttributes)
	for _, a := range slices.Sorted(maps.Keys(c.AwarenessForce)) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// IndexSettingsOf lists the index settings an index spec sets, as flat keys.
func (ix *IndexSpec) IndexSettingsOf() map[string]string {
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

// validateSetIndexSettings checks a set_index_settings event's settings as PUT _settings would.
func validateSetIndexSettings(values map[string]any, path string) error {
	if len(values) == 0 {
		return fieldError(path, "required, e.g. {\"index.number_of_replicas\": 2}")
	}
	updates, err := settings.IndexSettingUpdates(values)
	if err != nil {
		return fieldError(path, "%v", err)
	}
	if e := settings.CheckIndexSettingUpdates(updates); e != nil {
		return fieldError(path+"."+e.Key, "%s", e.Msg)
	}
	return nil
}

// Events that change the cluster's shape: create_index (with rollover_from), delete_index,
// node_restart (with wait_for_green) and set_index_settings.

// validateShapeEvent checks one of these events against the cluster as it is at the event's time:
// present holds the nodes in the cluster, indices the indices that exist, down when each restarted
// node comes back. It updates them as the event will.
func (sc *Scenario) validateShapeEvent(e *Event, p string, present, indices map[string]bool, down map[string]float64) error {
	switch e.Kind {
	case EventCreateIndex:
		if e.Spec == nil {
			return fieldError(p+".spec", "required: the new index, as in indices")
		}
		sp := p + ".spec"
		if e.Spec.Placement != nil {
			return fieldError(sp+".placement", "a new index's copies are placed by the allocator")
		}
		if e.RolloverFrom != "" {
			if !indices[e.RolloverFrom] {
				return fieldError(p+".rollover_from", "unknown index %q at %v s", e.RolloverFrom, e.AtSeconds)
			}
			if e.Spec.WriteLoad != nil {
				return fieldError(sp+".write_load", "a rollover's new index takes rollover_from's write load; leave write_load out")
			}
		}
		if err := e.Spec.validate(sp, present, indices); err != nil {
			return err
		}
	case EventDeleteIndex:
		switch {
		case e.Index == "":
			return fieldError(p+".index", "required")
		case !indices[e.Index]:
			return fieldError(p+".index", "unknown index %q at %v s", e.Index, e.AtSeconds)
		}
		for i, t := range sc.Tenants {
			if t.Index == e.Index {
				return fieldError(p+".index", "%q is searched by tenants[%d] (%s)", e.Index, i, t.Name)
			}
		}
		delete(indices, e.Index)
	case EventNodeRestart:
		switch {
		case e.Node == nil || e.Node.Name == "":
			return fieldError(p+".node", "the name of the node that restarts is required")
		case !e.Node.Bare:
			return fieldError(p+".node", "node_restart takes a node name, not an object")
		case !present[e.Node.Name]:
			return fieldError(p+".node", "node %q is not in the cluster at %v s", e.Node.Name, e.AtSeconds)
		case down[e.Node.Name] > e.AtSeconds && !e.WaitForGreen:
			return fieldError(p+".node", "node %q is still restarting at %v s (until %v s); wait_for_green waits for it", e.Node.Name, e.AtSeconds, down[e.Node.Name])
		case !(e.DownSeconds > 0) || e.DownSeconds > 1e9:
			return fieldError(p+".down_seconds", "must be in (0, 1e9], got %v", e.DownSeconds)
		}
		down[e.Node.Name] = math.Max(down[e.Node.Name], e.AtSeconds) + e.DownSeconds
	case EventSetIndexSettings:
		switch {
		case e.Index == "":
			return fieldError(p+".index", "required")
		case !indices[e.Index]:
			return fieldError(p+".index", "unknown index %q at %v s", e.Index, e.AtSeconds)
		}
		return validateSetIndexSettings(e.Settings, p+".settings")
	}
	return nil
}
