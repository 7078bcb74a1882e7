package model

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
func (s *Sim) recoveryRates(cfg *AllocConfig) map[*Recovery]float64 {
	in := make([]int, len(s.Nodes))
	out := make([]int, len(s.Nodes))
	users := make([]int, len(s.Nodes))
	var running []*Recovery
	for _, r := range s.Recoveries {
		if in[r.Target.Ord] >= cfg.Incoming || (r.Source != nil && out[r.Source.Ord] >= cfg.Outgoing) {
			continue
		}
		in[r.Target.Ord]++
		if r.Source != nil {
			out[r.Source.Ord]++
		}
		running = append(running, r)
		if r.done < r.Bytes {
			users[r.Target.Ord]++
			if r.Source != nil {
				users[r.Source.Ord]++
			}
		}
	}
	rates := make(map[*Recovery]float64, len(running))
	for _, r := range running {
		sharers := max(users[r.Target.Ord], 1)
		if r.Source != nil {
			sharers = max(sharers, users[r.Source.Ord])
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
func (s *Sim) keepRelocationTarget(c *ShardCopy) bool {
	if c.Primary || c.State != StateRelocating || c.Target == nil || !c.Target.Present {
		return false
	}
	src := RecoverySource(c.Sh)
	if src == nil || src == c.Node {
		return false
	}
	if old := c.Rec; old != nil {
		s.removeRecovery(old)
	}
	target := c.Target
	s.RecSeq++
	r := &Recovery{seq: s.RecSeq, copy: c, Source: src, Target: target, Bytes: float64(c.Sh.Idx.ShardBytes)}
	c.State, c.Node, c.AllocID, c.Target, c.TargetAllocID, c.Rec = StateInitializing, target, c.TargetAllocID, nil, "", r
	c.External = false
	c.ResetCounters()
	s.Recoveries = append(s.Recoveries, r)
	c.Sh.MovedSinceCmd = true
	s.Changed()
	return true
}

// removeRecovery drops r from the recoveries in flight.
func (s *Sim) removeRecovery(r *Recovery) {
	for i, x := range s.Recoveries {
		if x == r {
			s.Recoveries = append(s.Recoveries[:i], s.Recoveries[i+1:]...)
			return
		}
	}
}
