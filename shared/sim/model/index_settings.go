package model

import (
	"fmt"
	"slices"
	"strconv"
)

// ApplyIndexSettings sets checked updates on indices. Replicas and allocation filters take effect
// at once, as OpenSearch's reroute after a settings change does: new replicas start initializing,
// copies on newly excluded nodes start relocating. byOperator says the scenario made the change (a
// set_index_settings event), not a client of the settings API: OpenSearch's relocations for it are
// then the operator's, not the client's moves.
//
// A client's change that pushes a copy off its node while another copy of its shard is recovering
// or leaving by a filter is a safety violation, as the same reroute move would be: two copies of a
// shard in flight at once.
func (s *Sim) ApplyIndexSettings(indices []*Index, updates map[string]*string, byOperator bool) {
	for _, ix := range indices {
		allowed := map[*ShardCopy]bool{}
		if !byOperator {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					allowed[c] = c.Node == nil || ix.Filters.Check(c.Node, "index") == ""
				}
			}
		}
		for k, v := range updates {
			if byOperator {
				if v == nil {
					delete(ix.OperatorSettings, k)
				} else {
					ix.OperatorSettings[k] = *v
				}
			}
			if k == "index.number_of_replicas" {
				want := 1 // OpenSearch's default when the setting is reset
				if v != nil {
					want, _ = strconv.Atoi(*v)
				}
				s.setReplicas(ix, want)
				continue
			}
			if v == nil {
				delete(ix.Settings, k)
			} else {
				ix.Settings[k] = *v
			}
		}
		ix.compileSettings()
		ix.SettingsVersion++
		if !byOperator {
			s.checkPushedOff(ix, allowed)
		}
	}
	s.Changed()
	s.alloc.AllocateAndMove()
}

// setReplicas changes number_of_replicas: new copies wait unassigned for the allocator; removed ones go
// at once, unassigned first, then initializing, then started, never the primary.
func (s *Sim) setReplicas(ix *Index, want int) {
	if want == ix.Replicas {
		return
	}
	s.Res.ReplicaChanges++
	for _, sh := range ix.Shards {
		for len(sh.Copies) < want+1 {
			sh.Copies = append(sh.Copies, &ShardCopy{Sh: sh, UnassignedReason: "REPLICA_ADDED", UnassignedAt: s.NowLocked()})
		}
		for len(sh.Copies) > want+1 {
			victim := -1
			for _, st := range []shardState{StateUnassigned, StateInitializing, StateStarted, StateRelocating} {
				for i := len(sh.Copies) - 1; i >= 0 && victim < 0; i-- {
					if c := sh.Copies[i]; !c.Primary && c.State == st {
						victim = i
					}
				}
			}
			if c := sh.Copies[victim]; c.Rec != nil {
				s.Recoveries = slices.DeleteFunc(s.Recoveries, func(x *Recovery) bool { return x == c.Rec })
			}
			sh.Copies = slices.Delete(sh.Copies, victim, victim+1)
		}
	}
	ix.Replicas = want
	s.Changed()
}

// checkPushedOff records a violation for each shard of ix whose copy the settings change just
// pushed off its node (allowed there before, not now) while another copy of the shard is
// recovering or not allowed on its own node either.
func (s *Sim) checkPushedOff(ix *Index, allowed map[*ShardCopy]bool) {
shards:
	for _, sh := range ix.Shards {
		for _, c := range sh.Copies {
			if c.Node == nil || c.State != StateStarted || !allowed[c] || ix.Filters.Check(c.Node, "index") == "" {
				continue
			}
			for _, o := range sh.Copies {
				if o == c || o.State == StateUnassigned {
					continue
				}
				if o.State != StateStarted || o.Node != nil && ix.Filters.Check(o.Node, "index") != "" {
					s.Violate(fmt.Sprintf("an allocation filter pushing %s off %s accepted while another copy of the shard was in flight or leaving: two copies of a shard in flight at once",
						sh, c.Node.Name))
					continue shards
				}
			}
		}
	}
}
