package safety

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
)

// Recoveries are the cluster's recoveries in flight and its limits on them. The breaker holds them
// to what the cluster itself allows, not to zero: a growing cluster's own balancer keeps
// cluster_concurrent_rebalance relocations in flight for hours, and that is when hotspots form.
type Recoveries struct {
	Limits cluster.RecoveryLimits
	// Relocating counts every relocation in the cluster; Own is how many of them shardwise started.
	Relocating int
	Own        int
	// OwnAt holds, by node id, shardwise's moves still in flight from or to that node.
	OwnAt map[string][]allocation.Move
	// Incoming and Outgoing count peer recoveries per node id (relocations, and replicas recovering
	// from their primary). PerNode is false when only the cluster's totals are known.
	Incoming, Outgoing map[string]int
	PerNode            bool
	// Recovering holds, by shard, a copy of it that is relocating or initializing: no other copy
	// of that shard moves until it is done.
	Recovering map[cluster.ShardID]*cluster.Copy
	// ByExclusion is set when the moves go out as index-level allocation exclusions (managed
	// domains that refuse _cluster/reroute): a swap's return is then not sent, as OpenSearch
	// chooses the targets itself, so it takes no recovery slot and no node's hold stops it.
	ByExclusion bool
	names       map[string]string
}

// RecoveriesOf counts the recoveries in flight in a snapshot's routing table; own are shardwise's
// moves still in flight.
func RecoveriesOf(s *cluster.Snapshot, own []allocation.Move) Recoveries {
	r := Recoveries{Limits: s.Settings.Recoveries.Effective(), Own: len(own), PerNode: true, OwnAt: map[string][]allocation.Move{},
		Incoming: map[string]int{}, Outgoing: map[string]int{}, Recovering: map[cluster.ShardID]*cluster.Copy{}, names: map[string]string{}}
	for _, m := range own {
		r.OwnAt[m.From] = append(r.OwnAt[m.From], m)
		r.OwnAt[m.To] = append(r.OwnAt[m.To], m)
	}
	for i := range s.Nodes {
		r.names[s.Nodes[i].ID] = s.Nodes[i].Name
	}
	primaryOn := map[cluster.ShardID]string{}
	for i := range s.Copies {
		if c := &s.Copies[i]; c.Primary && c.Active() {
			primaryOn[c.ID()] = c.Node
		}
	}
	for i := range s.Copies {
		c := &s.Copies[i]
		if c.State == cluster.StateRelocating || c.State == cluster.StateInitializing {
			if _, ok := r.Recovering[c.ID()]; !ok {
				r.Recovering[c.ID()] = c
			}
		}
		switch {
		case c.State == cluster.StateRelocating && c.RelocatingNode != "":
			r.Relocating++
			r.Outgoing[c.Node]++
			r.Incoming[c.RelocatingNode]++
		case c.State == cluster.StateInitializing && !c.Primary && c.Node != "":
			// A replica recovers from its primary: incoming here, outgoing there. A primary
			// initializing from its own store is no peer recovery and counts on neither.
			r.Incoming[c.Node]++
			if p, ok := primaryOn[c.ID()]; ok {
				r.Outgoing[p]++
			}
		}
	}
	if r.Own > r.Relocating {
		r.Own = r.Relocating
	}
	return r
}

func (r Recoveries) name(id string) string { return cmp.Or(r.names[id], id) }

// recovering says what a recovering copy is doing: "relocating node-0→node-3" or "initializing on
// node-2".
func (r Recoveries) recovering(c *cluster.Copy) string {
	if c.State == cluster.StateRelocating {
		return fmt.Sprintf("relocating %s→%s", r.name(c.Node), r.name(c.RelocatingNode))
	}
	return "initializing on " + r.name(c.Node)
}

// checks are the breaker's two recovery checks: the relocations shardwise did not start within
// cluster_concurrent_rebalance, and every node's recoveries within node_concurrent_recoveries.
// Within means at most, not under: a cluster at its own limit is working as configured.
func (r Recoveries) checks(reachable bool) []Check {
	lim := r.Limits.Effective()
	others := max(0, r.Relocating-r.Own)
	var out []Check
	if lim.ClusterRebalance < 0 {
		out = append(out, Check{Name: "cluster_rebalance", OK: reachable, Value: fmt.Sprint(others), Limit: "unlimited",
			Reason: fmt.Sprintf("%d relocations besides shardwise's own, cluster_concurrent_rebalance unlimited", others)})
	} else {
		out = append(out, Check{Name: "cluster_rebalance", OK: reachable && others <= lim.ClusterRebalance, Value: fmt.Sprint(others),
			Limit:  fmt.Sprint(lim.ClusterRebalance),
			Reason: fmt.Sprintf("%d relocations besides shardwise's own, limit %d (cluster_concurrent_rebalance)", others, lim.ClusterRebalance)})
	}
	limit := fmt.Sprintf("%d in, %d out", lim.NodeIncoming, lim.NodeOutgoing)
	if !r.PerNode {
		out = append(out, Check{Name: "node_recoveries", OK: reachable, Value: "not read", Limit: limit,
			Reason: "per-node recoveries not read (no routing table)"})
		return out
	}
	// The busiest node: the one furthest over its limits, then the one with the most recoveries.
	ids := make([]string, 0, len(r.Incoming)+len(r.Outgoing))
	for id := range r.Incoming {
		ids = append(ids, id)
	}
	for id := range r.Outgoing {
		if _, ok := r.Incoming[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(r.name(a), r.name(b)) })
	over := func(id string) int {
		return max(0, r.Incoming[id]-lim.NodeIncoming) + max(0, r.Outgoing[id]-lim.NodeOutgoing)
	}
	busiest, ok := "", true
	for _, id := range ids {
		if over(id) > 0 {
			ok = false
		}
		if busiest == "" || over(id) > over(busiest) ||
			(over(id) == over(busiest) && r.Incoming[id]+r.Outgoing[id] > r.Incoming[busiest]+r.Outgoing[busiest]) {
			busiest = id
		}
	}
	if busiest == "" {
		out = append(out, Check{Name: "node_recoveries", OK: reachable, Value: "none", Limit: limit,
			Reason: fmt.Sprintf("no node recovering a shard, limit %s per node (node_concurrent_recoveries)", limit)})
		return out
	}
	value := fmt.Sprintf("%s: %d in, %d out", r.name(busiest), r.Incoming[busiest], r.Outgoing[busiest])
	out = append(out, Check{Name: "node_recoveries", OK: reachable && ok, Value: value, Limit: limit,
		Reason: fmt.Sprintf("busiest node %s, limit %s per node (node_concurrent_recoveries)", value, limit)})
	return out
}

// ownAt is shardwise's move in flight on node that holds m back, the zero Move if none: the hot move
// a staged return completes (allocation.PhaseStagedReturn) does not hold it, as the two are one
// swap, but any other of shardwise's moves on the node does.
func (r Recoveries) ownAt(m allocation.Move, node string) allocation.Move {
	for _, busy := range r.OwnAt[node] {
		if c := m.Completes; c != nil && busy.Index == c.Index && busy.Shard == c.Shard && busy.From == c.From && busy.To == c.To {
			continue
		}
		return busy
	}
	return allocation.Move{}
}

// unsent reports whether m is a swap's return that moves by exclusion leave unsent (ByExclusion).
func (r Recoveries) unsent(m allocation.Move) bool {
	return r.ByExclusion && m.Phase == allocation.PhaseSwapReturn
}

// Throttle keeps the moves that touch no node with one of shardwise's moves still in flight (its
// effect is measured before the next; a young index's quick copy may leave such a node,
// allocation.Move.YoungIndex), move no shard with a copy already relocating or initializing
// (never two copies of a shard in flight at once), and leave every node within its recovery limits, counting
// the recoveries already in flight and the moves kept before them, in plan order. OpenSearch
// applies no throttle to an explicit reroute command, so shardwise applies the cluster's own.
// Moves of one swap group are kept or refused together. Without per-node counts every move is kept.
func Throttle(moves []allocation.Move, r Recoveries) ([]allocation.Move, []Refusal) {
	if !r.PerNode {
		return moves, nil
	}
	lim := r.Limits.Effective()
	in, out := map[string]int{}, map[string]int{}
	var kept []allocation.Move
	var refused []Refusal
	for _, g := range allocation.Groups(moves) {
		din, dout := map[string]int{}, map[string]int{}
		for _, m := range g {
			if r.unsent(m) {
				continue
			}
			dout[m.From]++
			din[m.To]++
		}
		why, setting, limit := "", "", 0
		for _, m := range g {
			if r.unsent(m) {
				continue
			}
			// A young index's quick copy may leave a held node (allocation.YoungIndexAge); its
			// target is held as any.
			busy, node := allocation.Move{}, m.FromName
			if !m.YoungIndex {
				busy = r.ownAt(m, m.From)
			}
			if busy.Index == "" {
				busy, node = r.ownAt(m, m.To), m.ToName
			}
			if busy.Index != "" {
				why, setting, limit = fmt.Sprintf("%s has one of shardwise's moves still relocating (%s[%d] %s→%s)", node, busy.Index, busy.Shard, busy.FromName, busy.ToName),
					"own_move_in_flight_per_node", 1
				break
			}
			if c, ok := r.Recovering[cluster.ShardID{Index: m.Index, Shard: m.Shard}]; ok {
				why, setting, limit = fmt.Sprintf("%s[%d] has a copy still %s; never two copies of a shard in flight at once", m.Index, m.Shard, r.recovering(c)),
					"shard_in_flight", 1
				break
			}
			if n := r.Incoming[m.To] + in[m.To] + din[m.To]; n > lim.NodeIncoming {
				why, setting, limit = fmt.Sprintf("%s would have %d incoming recoveries, limit %d", m.ToName, n, lim.NodeIncoming),
					"node_concurrent_incoming_recoveries", lim.NodeIncoming
				break
			}
			if n := r.Outgoing[m.From] + out[m.From] + dout[m.From]; n > lim.NodeOutgoing {
				why, setting, limit = fmt.Sprintf("%s would have %d outgoing recoveries, limit %d", m.FromName, n, lim.NodeOutgoing),
					"node_concurrent_outgoing_recoveries", lim.NodeOutgoing
				break
			}
		}
		if why != "" {
			for _, m := range g {
				refused = append(refused, Refusal{Move: m, Budget: setting, Limit: int64(limit), Reason: why})
			}
			continue
		}
		for id, n := range din {
			in[id] += n
		}
		for id, n := range dout {
			out[id] += n
		}
		kept = append(kept, g...)
	}
	return kept, refused
}
