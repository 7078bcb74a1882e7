package replicas

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// PlacementNode is a node that may hold an index's copies (after allocation filters), as the
// placement rules see it.
type PlacementNode struct {
	Host  string
	Attrs map[string]string
	// Others is the shard copies of other indices on the node, for the cluster-wide
	// total_shards_per_node.
	Others int
}

// PlacementRules are the OpenSearch settings that bound how many copies of each shard can be
// assigned on the nodes.
type PlacementRules struct {
	Primaries int
	// TotalShardsPerNode is index.routing.allocation.total_shards_per_node; 0 or less: unlimited.
	TotalShardsPerNode int
	// ClusterTotalShardsPerNode is cluster.routing.allocation.total_shards_per_node; 0 or less:
	// unlimited.
	ClusterTotalShardsPerNode int
	// SameShardHost is cluster.routing.allocation.same_shard.host: one copy of a shard per host.
	SameShardHost bool
	// Awareness is cluster.routing.allocation.awareness.attributes; ForcedAwareness their forced
	// values (awareness.force.<attr>.values).
	Awareness       []string
	ForcedAwareness map[string][]string
}

// MaxCopies is the most copies of each shard OpenSearch can assign on nodes under r, and which
// rule sets it ("" when only the node count does). Each copy of a shard needs a node of its own
// (a host of its own under same_shard.host); total_shards_per_node bounds the copies each node
// takes; awareness lets each value of an attribute hold at most ceil(copies / values) copies of a
// shard, so with forced values that have no node the rest cannot be assigned. A scale-up above
// this would leave copies unassigned and turn the cluster yellow.
func MaxCopies(nodes []PlacementNode, r PlacementRules) (int, string) {
	s := max(r.Primaries, 1)
	// Units are what may each hold one copy of a shard: nodes, or hosts under same_shard.host.
	type unit struct {
		room  int // copies of this index it can take, at most one per shard
		attrs map[string]string
	}
	units := make([]unit, 0, len(nodes))
	var byHost map[string]int // only under same_shard.host
	if r.SameShardHost {
		byHost = map[string]int{}
	}
	// Which limit last held a node's room: its text is made once, after the loop.
	const (
		noLimit = iota
		indexLimit
		clusterLimit
	)
	limitedBy := noLimit
	for _, n := range nodes {
		room := s
		if r.TotalShardsPerNode > 0 && r.TotalShardsPerNode < room {
			room, limitedBy = r.TotalShardsPerNode, indexLimit
		}
		if r.ClusterTotalShardsPerNode > 0 {
			if left := max(r.ClusterTotalShardsPerNode-n.Others, 0); left < room {
				room, limitedBy = left, clusterLimit
			}
		}
		if r.SameShardHost {
			if i, ok := byHost[n.Host]; ok && n.Host != "" {
				units[i].room = min(units[i].room+room, s)
				continue
			}
			byHost[n.Host] = len(units)
		}
		units = append(units, unit{room: room, attrs: n.Attrs})
	}
	limited := ""
	switch limitedBy {
	case indexLimit:
		limited = fmt.Sprintf("index.routing.allocation.total_shards_per_node=%d", r.TotalShardsPerNode)
	case clusterLimit:
		limited = fmt.Sprintf("cluster.routing.allocation.total_shards_per_node=%d", r.ClusterTotalShardsPerNode)
	}
	// perShard: every unit that takes anything can hold one copy of each shard it is given.
	total, holders := 0, 0
	for _, u := range units {
		total += u.room
		if u.room > 0 {
			holders++
		}
	}
	best, why := len(nodes), ""
	if len(units) < best {
		best, why = len(units), fmt.Sprintf("cluster.routing.allocation.same_shard.host: %d hosts for %d nodes", len(units), len(nodes))
	}
	if c := min(holders, total/s); c < best {
		best, why = c, fmt.Sprintf("%s on %d nodes: room for %d copies of %d shards", limited, len(nodes), total, s)
	}
	for _, attr := range r.Awareness {
		values := r.ForcedAwareness[attr]
		count := map[string]int{}
		for _, u := range units {
			if v, ok := u.attrs[attr]; ok && u.room > 0 {
				count[v]++
			}
		}
		if len(values) == 0 {
			for v := range count {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			continue
		}
		c := best
		for ; c > 0 && !awarenessFits(c, values, count); c-- {
		}
		if c < best {
			// Sorted for the reason's text on a copy: values may be the caller's forced values.
			best, why = c, fmt.Sprintf("awareness on %s over %s: at most ceil(copies/%d) per value", attr, strings.Join(slices.Sorted(slices.Values(values)), ","), len(values))
		}
	}
	return best, why
}

// awarenessFits reports whether c copies of a shard fit when each value takes at most
// ceil(c / len(values)) of them and no more than it has units.
func awarenessFits(c int, values []string, count map[string]int) bool {
	per := int(math.Ceil(float64(c) / float64(len(values))))
	fit := 0
	for _, v := range values {
		fit += min(count[v], per)
	}
	return fit >= c
}
