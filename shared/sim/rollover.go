package sim

import (
	"fmt"
	"slices"
)

// createIndex adds an index during the run, as PUT {index} or a rollover does: its copies start
// unassigned (INDEX_CREATED) and OpenSearch's reroute places them at once, by the same weights as
// any unassigned copy, so a new index's shards go to the node with the fewest shards, typically a
// node that has just joined (ES#17213, ES#37638). Its empty primaries start at once, as they do in
// well under a second in OpenSearch; replicas then recover from them. With rollover_from, the old
// index's write load moves to the new one once the new one's primaries are active, as a rollover
// switches the write alias after waiting for them.
func (s *Sim) createIndex(spec *IndexSpec, rolloverFrom string) *index {
	now := s.now()
	ix := s.addIndex(spec.Name, spec.Primaries, spec.Replicas, spec.ShardBytes, spec.ShardWeights)
	// A name may return after a delete_index: the new index is another index, with its own uuid.
	ix.uuid = makeID(s.sc.Seed, fmt.Sprintf("index/%s/%d", spec.Name, now.UnixNano()))
	ix.created = now
	for _, sh := range ix.shards {
		for _, c := range sh.copies {
			c.unassignedAt = now
		}
	}
	ix.writeLoad, ix.searchLoad = profileOr(spec.WriteLoad), profileOr(spec.SearchLoad)
	ix.applySpecSettings(spec)
	if rolloverFrom != "" {
		ix.rolloverOf = s.byIndex[rolloverFrom]
	}
	s.changed()
	s.alloc.Allocate()
	s.startEmptyPrimaries(ix)
	s.alloc.Allocate()
	return ix
}

// startEmptyPrimaries starts ix's primaries that are initializing empty (no data to recover).
func (s *Sim) startEmptyPrimaries(ix *index) {
	for _, sh := range ix.shards {
		if p := sh.primary(); p != nil && p.state == stateInitializing && p.rec != nil && p.rec.source == nil && p.rec.bytes == 0 {
			s.finishRecovery(p.rec)
		}
	}
}

// completeRollovers moves each pending rollover's write load from the old index to the new one
// once every primary of the new one is active, and names the rollovers done.
func (s *Sim) completeRollovers() []string {
	var done []string
	for _, ix := range s.indices {
		old := ix.rolloverOf
		if old == nil || !allPrimariesActive(ix) {
			continue
		}
		ix.rolloverOf = nil
		if s.byIndex[old.name] != old {
			continue // the old index was deleted first: nothing to take over
		}
		detachFromGroup(old)
		ix.writeLoad, old.writeLoad = old.writeLoad, Constant(0)
		done = append(done, "rollover "+old.name+" → "+ix.name)
	}
	return done
}

func allPrimariesActive(ix *index) bool {
	for _, sh := range ix.shards {
		if p := sh.primary(); p == nil || !p.active() {
			return false
		}
	}
	return true
}

// detachFromGroup gives a member of an index group its own loads, its share of the group's, so
// that one of them can change alone.
func detachFromGroup(ix *index) {
	if ix.group == nil {
		return
	}
	ix.writeLoad, ix.searchLoad = scaled(ix.group.writeLoad, ix.share), scaled(ix.group.searchLoad, ix.share)
	ix.group.members = slices.DeleteFunc(ix.group.members, func(m *index) bool { return m == ix })
	ix.group = nil
}

// deleteIndex removes an index and its copies: recoveries of its copies stop, its disk is freed,
// and the REST API forgets it.
func (s *Sim) deleteIndex(ix *index) {
	s.recoveries = slices.DeleteFunc(s.recoveries, func(r *recovery) bool { return r.copy.sh.idx == ix })
	detachFromGroup(ix)
	s.indices = slices.DeleteFunc(s.indices, func(x *index) bool { return x == ix })
	for i, x := range s.indices {
		x.ord = i
	}
	delete(s.byIndex, ix.name)
	s.changed()
	s.refresh()
}
