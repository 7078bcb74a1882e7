package alloc

import (
	"github.com/shardwise/shardwise/shared/sim/model"
)

// AllocateExistingData allocates each unassigned copy whose data is on a present node to that node
// when the deciders say YES, as OpenSearch's gateway allocator does before the balancer: a primary
// whose every copy was lost recovers from its own store, a replica whose node_left delay has not
// run out (or has, but it is still unassigned) recovers by replaying the operations it missed.
// Neither copies files, so the recovery ends at the next tick's recoveries; the replay is not
// timed. It returns how many it allocated.
func (s *Allocator) AllocateExistingData() int {
	allocated := 0
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				to := c.DataOn
				if c.State != model.StateUnassigned || to == nil || !to.Present {
					continue
				}
				if s.CanAllocate(sh, c, to, false, false).Typ != DecYes {
					continue
				}
				s.Initialize(c, to, false)
				c.Rec.Bytes = 0 // its files are there
				c.LostData = false
				allocated++
			}
		}
	}
	return allocated
}
