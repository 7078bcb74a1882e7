package sim

import "fmt"

// How OpenSearch runs peer recoveries, beyond which may start: how they share a node's recovery
// bandwidth, and what happens to a replica relocation whose source leaves.

// recoveryRates gives each recovery that runs this tick its transfer rate in bytes per second.
// The recoveries that run are those node_concurrent_incoming/outgoing_recoveries let run, oldest
// first, as advanceRecoveries takes them. indices.recovery.max_bytes_per_sec is one rate limiter
// per node (RecoverySettings.rateLimiter), which the source pauses on as it sends file chunks and
// the target as it writes them; so a node's concurrent recoveries, incoming and outgoing, share
// its rate. Each recovery gets an equal share on each of its two nodes and runs at the smaller.
// Recoveries that copy no files (an empty primary, a copy back on a restarted node) or have copied
// them and replay the translog, which is not rate-limited, take no share.
func (s *Sim) recoveryRates(cfg *allocConfig) map[*recovery]float64 {
	in := make([]int, len(s.nodes))
	out := make([]int, len(s.nodes))
	users := make([]int, len(s.nodes))
	var running []*recovery
	for _, r := range s.recoveries {
		if in[r.target.ord] >= cfg.incoming || (r.source != nil && out[r.source.ord] >= cfg.outgoing) {
			continue
		}
		in[r.target.ord]++
		if r.source != nil {
			out[r.source.ord]++
		}
		running = append(running, r)
		if r.done < r.bytes {
			users[r.target.ord]++
			if r.source != nil {
				users[r.source.ord]++
			}
		}
	}
	rates := make(map[*recovery]float64, len(running))
	for _, r := range running {
		sharers := max(users[r.target.ord], 1)
		if r.source != nil {
			sharers = max(sharers, users[r.source.ord])
		}
		rates[r] = cfg.recoveryRate / float64(sharers)
	}
	return rates
}

// keepRelocationTarget handles a replica relocating off a node that leaves as OpenSearch does
// (RoutingNodes.failShard, removeRelocationSource): the relocation's target is kept, now an
// initializing replica without a relocation source, and recovers from the primary from the start.
// It reports whether it kept c; a primary's relocation, or one whose primary is not active, is not
// kept and the copy is lost with the node.
func (s *Sim) keepRelocationTarget(c *shardCopy) bool {
	if c.primary || c.state != stateRelocating || c.target == nil || !c.target.present {
		return false
	}
	src := recoverySource(c.sh)
	if src == nil || src == c.node {
		return false
	}
	if old := c.rec; old != nil {
		s.removeRecovery(old)
	}
	target := c.target
	s.recSeq++
	r := &recovery{seq: s.recSeq, copy: c, source: src, target: target, bytes: float64(c.sh.idx.shardBytes)}
	c.state, c.node, c.allocID, c.target, c.targetAllocID, c.rec = stateInitializing, target, c.targetAllocID, nil, "", r
	c.external = false
	c.resetCounters()
	s.recoveries = append(s.recoveries, r)
	c.sh.movedSinceCmd = true
	s.changed()
	return true
}

// removeRecovery drops r from the recoveries in flight.
func (s *Sim) removeRecovery(r *recovery) {
	for i, x := range s.recoveries {
		if x == r {
			s.recoveries = append(s.recoveries[:i], s.recoveries[i+1:]...)
			return
		}
	}
}

// initialPrimariesThrottle is ThrottlingAllocationDecider for a primary's first recovery: at most
// cluster.routing.allocation.node_initial_primaries_recoveries (4) of them initializing on n.
func (s *Sim) initialPrimariesThrottle(v *verdict, n *node) {
	limit := s.intSetting("cluster.routing.allocation.node_initial_primaries_recoveries", defaultInitialPrimariesRecoveries)
	ongoing := 0
	for _, r := range s.recoveries {
		if r.target == n && r.source == nil && !r.relocation {
			ongoing++
		}
	}
	if ongoing >= limit {
		v.add(decThrottle, "throttling", func() string {
			return fmt.Sprintf("reached the limit of ongoing initial primary recoveries [%d], cluster setting "+
				"[cluster.routing.allocation.node_initial_primaries_recoveries=%d]", ongoing, limit)
		})
		return
	}
	v.add(decYes, "throttling", func() string {
		return fmt.Sprintf("below primary recovery limit of [%d]", limit)
	})
}

// defaultInitialPrimariesRecoveries is OpenSearch's
// cluster.routing.allocation.node_initial_primaries_recoveries default.
const defaultInitialPrimariesRecoveries = 4
