package model

import (
	"fmt"
	"strconv"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/settings"
)

// applyShapeEvent applies one of these events and names it; ok is false for other events. Events
// that waited for green may come later than their at_seconds, so each checks the cluster as it is.
func (s *Sim) applyShapeEvent(e scenario.Event) (name string, ok bool) {
	switch e.Kind {
	case scenario.EventCreateIndex:
		if s.ByIndex[e.Spec.Name] != nil {
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
	case scenario.EventDeleteIndex:
		ix := s.ByIndex[e.Index]
		if ix == nil {
			return "delete_index " + e.Index + " skipped: no such index", true
		}
		s.deleteIndex(ix)
		return "delete_index " + e.Index, true
	case scenario.EventNodeRestart:
		n := s.ByName[e.Node.Name]
		if n == nil || !n.Present {
			return "node_restart " + e.Node.Name + " skipped: not in the cluster", true
		}
		s.restartNode(n, e.DownSeconds)
		return fmt.Sprintf("node_restart %s for %s s", n.Name, strconv.FormatFloat(e.DownSeconds, 'f', -1, 64)), true
	case scenario.EventSetIndexSettings:
		ix := s.ByIndex[e.Index]
		if ix == nil {
			return "set_index_settings " + e.Index + " skipped: no such index", true
		}
		updates, err := settings.IndexSettingUpdates(e.Settings)
		if err != nil || settings.CheckIndexSettingUpdates(updates) != nil {
			// Validated with the scenario; kept as a guard for scenarios built in code.
			return "set_index_settings " + e.Index + " skipped: invalid settings", true
		}
		s.ApplyIndexSettings([]*Index{ix}, updates, true)
		return "set_index_settings " + e.Index, true
	case scenario.EventNodeLeave:
		// A node that leaves while restarting does not come back.
		if n := s.ByName[e.Node.Name]; n != nil {
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
