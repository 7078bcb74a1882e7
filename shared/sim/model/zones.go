package model

import (
	"maps"
	"slices"
)

// ZoneNeed is the WRITE load one awareness value (a zone) must carry whatever the placement: the
// lightest copies of each shard that the awareness decider leaves no other zone room for, against
// the WRITE threads of the zone's present nodes. Tests judge a zone-capacity Scale Up Needed by it.
type ZoneNeed struct {
	Attribute string  `json:"attribute"`
	Value     string  `json:"value"`
	Load      float64 `json:"write_load"`
	Threads   int     `json:"write_threads"`
}

// zoneNeeds gives every awareness value's ZoneNeed at time t: a shard of k copies over v values
// keeps at least k − (v−1)·ceil(k/v) of them in each value (each other value holds at most
// ceil(k/v)), and each copy would bear its shard's offered write load at its share (all of it, or
// the segment-replication share for a replica). None without awareness.
func (s *Sim) zoneNeeds(t float64) []ZoneNeed {
	cfg := s.Config()
	if len(cfg.Awareness) == 0 {
		return nil
	}
	var out []ZoneNeed
	for _, attr := range cfg.Awareness {
		values := map[string]bool{}
		for _, v := range cfg.Forced[attr] {
			values[v] = true
		}
		threads := map[string]int{}
		for _, n := range s.Nodes {
			v, ok := n.Attrs()[attr]
			if !ok {
				continue
			}
			values[v] = true
			if n.Present {
				threads[v] += n.Write.Threads
			}
		}
		if len(values) < 2 {
			continue
		}
		need := 0.0
		for _, ix := range s.Indices {
			w, _ := ix.Loads(t)
			k := 1 + ix.Replicas
			least := k - (len(values)-1)*((k+len(values)-1)/len(values))
			if least <= 0 {
				continue
			}
			for _, sh := range ix.Shards {
				shares := make([]float64, 0, len(sh.Copies))
				for _, c := range sh.Copies {
					shares = append(shares, c.copyWriteShare())
				}
				slices.Sort(shares)
				for _, share := range shares[:min(least, len(shares))] {
					need += w * ix.weights[sh.Num] * share
				}
			}
		}
		for _, v := range slices.Sorted(maps.Keys(values)) {
			out = append(out, ZoneNeed{Attribute: attr, Value: v, Load: need, Threads: threads[v]})
		}
	}
	return out
}
