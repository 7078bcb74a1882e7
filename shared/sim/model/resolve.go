package model

import (
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// ElapsedLocked is ElapsedSeconds for callers that do not hold the lock, such as the HTTP
// fault layer.
func (s *Sim) ElapsedLocked() float64 {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	return s.ElapsedSeconds()
}

// ResolveIndices expands an index expression (comma list, wildcards, -exclusions, _all) in index order.
// A concrete name that does not exist is index_not_found unless ignore_unavailable is set.
func (s *Sim) ResolveIndices(expr string, ignoreUnavailable bool) ([]*Index, *wire.APIError) {
	if expr == "" || expr == "_all" || expr == "*" {
		return slices.Clone(s.Indices), nil
	}
	selected := map[*Index]bool{}
	for i, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if name, ok := strings.CutPrefix(part, "-"); ok && i > 0 {
			for _, ix := range s.Indices {
				if cluster.SimpleMatch(name, ix.Name) {
					delete(selected, ix)
				}
			}
			continue
		}
		if part == "_all" || strings.Contains(part, "*") {
			for _, ix := range s.Indices {
				if part == "_all" || cluster.SimpleMatch(part, ix.Name) {
					selected[ix] = true
				}
			}
			continue
		}
		ix, ok := s.ByIndex[part]
		if !ok {
			if ignoreUnavailable {
				continue
			}
			return nil, wire.IndexNotFound(part)
		}
		selected[ix] = true
	}
	var out []*Index
	for _, ix := range s.Indices {
		if selected[ix] {
			out = append(out, ix)
		}
	}
	return out, nil
}

// MatchNodes resolves node specs as DiscoveryNodes.resolveNodes: _all, _local, _cluster_manager
// (_master), ids, names and addresses, with wildcards; attr:value matches custom attributes.
func (s *Sim) MatchNodes(specs []string) []*Node {
	present := s.PresentNodes()
	if len(specs) == 0 {
		return present
	}
	selected := map[*Node]bool{}
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		switch spec {
		case "", "_all":
			for _, n := range present {
				selected[n] = true
			}
			continue
		case "_local", "_cluster_manager", "_master":
			if m := s.ClusterManager(); m != nil {
				selected[m] = true
			}
			continue
		}
		if k, v, ok := strings.Cut(spec, ":"); ok && !strings.Contains(v, ":") && !strings.Contains(k, ".") {
			for _, n := range present {
				if val, has := n.Attrs()[k]; has && cluster.SimpleMatch(v, val) {
					selected[n] = true
				}
			}
			continue
		}
		for _, n := range present {
			if cluster.SimpleMatch(spec, n.ID) || cluster.SimpleMatch(spec, n.Name) || spec == n.IP() || spec == n.Address() {
				selected[n] = true
			}
		}
	}
	var out []*Node
	for _, n := range present {
		if selected[n] {
			out = append(out, n)
		}
	}
	return out
}

// ClusterManager is the elected cluster manager: the first present node in scenario order.
func (s *Sim) ClusterManager() *Node {
	for _, n := range s.Nodes {
		if n.Present {
			return n
		}
	}
	return nil
}
