package model

import (
	"fmt"
	"slices"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// createIndex adds an index during the run, as PUT {index} or a rollover does: its copies start
// unassigned (INDEX_CREATED) and OpenSearch's reroute places them at once, by the same weights as
// any unassigned copy, so a new index's shards go to the node with the fewest shards, typically a
// node that has just joined (ES#17213, ES#37638). Its empty primaries start at once, as they do in
// well under a second in OpenSearch; replicas then recover from them. With rollover_from, the old
// index's write load moves to the new one once the new one's primaries are active, as a rollover
// switches the write alias after waiting for them.
func (s *Sim) createIndex(spec *scenario.IndexSpec, rolloverFrom string) *Index {
	now := s.NowLocked()
	ix := s.addIndex(spec.Name, spec.Primaries, spec.Replicas, spec.ShardBytes, spec.ShardWeights)
	// A name may return after a delete_index: the new index is another index, with its own uuid.
	ix.UUID = MakeID(s.Spec.Seed, fmt.Sprintf("index/%s/%d", spec.Name, now.UnixNano()))
	ix.Created = now
	for _, sh := range ix.Shards {
		for _, c := range sh.Copies {
			c.UnassignedAt = now
		}
	}
	ix.writeLoad, ix.searchLoad = ProfileOr(spec.WriteLoad), ProfileOr(spec.SearchLoad)
	ix.applySpecSettings(spec)
	if rolloverFrom != "" {
		ix.rolloverOf = s.ByIndex[rolloverFrom]
	}
	s.Changed()
	s.alloc.Allocate()
	s.startEmptyPrimaries(ix)
	s.alloc.Allocate()
	return ix
}

// startEmptyPrimaries starts ix's primaries that are initializing empty (no data to recover).
func (s *Sim) startEmptyPrimaries(ix *Index) {
	for _, sh := range ix.Shards {
		if p := sh.Primary(); p != nil && p.State == StateInitializing && p.Rec != nil && p.Rec.Source == nil && p.Rec.Bytes == 0 {
			s.finishRecovery(p.Rec)
		}
	}
}

// completeRollovers moves each pending rollover's write load from the old index to the new one
// once every primary of the new one is active, and names the rollovers done.
func (s *Sim) completeRollovers() []string {
	var done []string
	for _, ix := range s.Indices {
		old := ix.rolloverOf
		if old == nil || !allPrimariesActive(ix) {
			continue
		}
		ix.rolloverOf = nil
		if s.ByIndex[old.Name] != old {
			continue // the old index was deleted first: nothing to take over
		}
		detachFromGroup(old)
		ix.writeLoad, old.writeLoad = old.writeLoad, scenario.Constant(0)
		done = append(done, "rollover "+old.Name+" → "+ix.Name)
	}
	return done
}

func allPrimariesActive(ix *Index) bool {
	for _, sh := range ix.Shards {
		if p := sh.Primary(); p == nil || !p.Active() {
			return false
		}
	}
	return true
}

// detachFromGroup gives a member of an index group its own loads, its share of the group's, so
// that one of them can change alone.
func detachFromGroup(ix *Index) {
	if ix.group == nil {
		return
	}
	ix.writeLoad, ix.searchLoad = scaled(ix.group.writeLoad, ix.share), scaled(ix.group.searchLoad, ix.share)
	ix.group.members = slices.DeleteFunc(ix.group.members, func(m *Index) bool { return m == ix })
	ix.group = nil
}

// deleteIndex removes an index and its copies: recoveries of its copies stop, its disk is freed,
// and the REST API forgets it.
func (s *Sim) deleteIndex(ix *Index) {
	s.Recoveries = slices.DeleteFunc(s.Recoveries, func(r *Recovery) bool { return r.copy.Sh.Idx == ix })
	detachFromGroup(ix)
	s.Indices = slices.DeleteFunc(s.Indices, func(x *Index) bool { return x == ix })
	for i, x := range s.Indices {
		x.Ord = i
	}
	delete(s.ByIndex, ix.Name)
	s.Changed()
	s.Refresh()
}
