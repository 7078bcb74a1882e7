package allocation

import (
	"math"
	"sort"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Candidate is a copy on a hot node with the rank the shard-choice heuristic gave it.
type Candidate struct {
	Copy *cluster.Copy
	Load float64
	// Tier is the heuristic's preference group: 1 [T, max), 2 (0, T), 3 = max, 4 idle.
	Tier int
}

// ChooseOrder ranks the movable copies on a hot node by the Elasticsearch Serverless heuristic:
// T = ½ × the hottest copy's write load; prefer loads in [T, max) closest to T, then (0, T) closest
// to T, then the hottest, then idle ones. Middling shards relieve the node without disrupting its
// busiest ingest, and idle ones relieve nothing. Copies are excluded when their load alone would make
// a node hot (moving them only moves the hotspot: at or over aloneHot threads) or when they are
// near-idle (under minLoad threads).
func ChooseOrder(copies []*cluster.Copy, aloneHot, minLoad float64) []Candidate {
	maxLoad := 0.0
	for _, c := range copies {
		maxLoad = math.Max(maxLoad, c.WriteLoad)
	}
	t := maxLoad / 2
	out := make([]Candidate, 0, len(copies))
	for _, c := range copies {
		l := c.WriteLoad
		if l >= aloneHot || l < minLoad || !c.LoadKnown {
			continue
		}
		tier := 4
		switch {
		case l >= t && l < maxLoad:
			tier = 1
		case l > 0 && l < t:
			tier = 2
		case l == maxLoad && l > 0:
			tier = 3
		}
		out = append(out, Candidate{Copy: c, Load: l, Tier: tier})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Tier != b.Tier {
			return a.Tier < b.Tier
		}
		if da, db := math.Abs(a.Load-t), math.Abs(b.Load-t); da != db {
			return da < db
		}
		if a.Copy.SizeBytes != b.Copy.SizeBytes {
			return a.Copy.SizeBytes < b.Copy.SizeBytes
		}
		if a.Copy.Index != b.Copy.Index {
			return a.Copy.Index < b.Copy.Index
		}
		if a.Copy.Shard != b.Copy.Shard {
			return a.Copy.Shard < b.Copy.Shard
		}
		// Replicas before primaries: moving a replica never touches the primary's indexing path.
		return !a.Copy.Primary && b.Copy.Primary
	})
	return out
}
