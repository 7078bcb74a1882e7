package sim

import (
	"fmt"
	"math"
	"strconv"
)

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

// applyShapeEvent applies one of these events and names it; ok is false for other events. Events
// that waited for green may come later than their at_seconds, so each checks the cluster as it is.
func (s *Sim) applyShapeEvent(e Event) (name string, ok bool) {
	switch e.Kind {
	case EventCreateIndex:
		if s.byIndex[e.Spec.Name] != nil {
			return "create_index " + e.Spec.Name + " skipped: the index exists", true
		}
		s.createIndex(e.Spec, e.RolloverFrom)
		name := "create_index " + e.Spec.Name
		if e.RolloverFrom != "" {
			name += " rollover_from " + e.RolloverFrom
			for _, done := range s.completeRollovers() {
				name += "; " + done
			}
		}
		return name, true
	case EventDeleteIndex:
		ix := s.byIndex[e.Index]
		if ix == nil {
			return "delete_index " + e.Index + " skipped: no such index", true
		}
		s.deleteIndex(ix)
		return "delete_index " + e.Index, true
	case EventNodeRestart:
		n := s.byName[e.Node.Name]
		if n == nil || !n.present {
			return "node_restart " + e.Node.Name + " skipped: not in the cluster", true
		}
		s.restartNode(n, e.DownSeconds)
		return fmt.Sprintf("node_restart %s for %s s", n.name, strconv.FormatFloat(e.DownSeconds, 'f', -1, 64)), true
	case EventSetIndexSettings:
		ix := s.byIndex[e.Index]
		if ix == nil {
			return "set_index_settings " + e.Index + " skipped: no such index", true
		}
		updates, err := indexSettingUpdates(e.Settings)
		if err != nil || checkIndexSettingUpdates(updates) != nil {
			// Validated with the scenario; kept as a guard for scenarios built in code.
			return "set_index_settings " + e.Index + " skipped: invalid settings", true
		}
		s.applyIndexSettings([]*index{ix}, updates)
		return "set_index_settings " + e.Index, true
	case EventNodeLeave:
		// A node that leaves while restarting does not come back.
		if n := s.byName[e.Node.Name]; n != nil {
			n.restart = nil
		}
	}
	return "", false
}

// shapeTick is what the cluster's shape does by itself at a tick's start, before its events:
// restarted nodes come back, and rollovers whose new primaries are active take the write load.
func (s *Sim) shapeTick() []string {
	return append(s.returnRestartedNodes(), s.completeRollovers()...)
}
