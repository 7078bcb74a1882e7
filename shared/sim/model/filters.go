package model

import (
	"maps"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
)

// nodeFilter is one attribute of an allocation filter with its accepted values
// (OpenSearch's DiscoveryNodeFilters entry).
type nodeFilter struct {
	attr   string
	values []string
}

// filterGroup is the filters under one setting prefix, e.g. index.routing.allocation.require.
type filterGroup struct {
	setting string // e.g. "index.routing.allocation.require"
	and     bool   // require: every attribute must match; include/exclude: any one is enough
	filters []nodeFilter
}

// filterSet is the require/include/exclude filters of an index or of the cluster.
type filterSet struct {
	require, include, exclude filterGroup
}

// compileFilters reads prefix+"{require,include,exclude}.<attr>" from flat settings.
func compileFilters(settings map[string]string, prefix string) filterSet {
	fs := filterSet{
		require: filterGroup{setting: prefix + "require", and: true},
		include: filterGroup{setting: prefix + "include"},
		exclude: filterGroup{setting: prefix + "exclude"},
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		kind, attr, ok := strings.Cut(rest, ".")
		if !ok || attr == "" {
			continue
		}
		values := cluster.FilterPatterns(settings[k])
		if len(values) == 0 {
			continue // an empty value clears the filter, as in OpenSearch
		}
		f := nodeFilter{attr: attr, values: values}
		switch kind {
		case "require":
			fs.require.filters = append(fs.require.filters, f)
		case "include":
			fs.include.filters = append(fs.include.filters, f)
		case "exclude":
			fs.exclude.filters = append(fs.exclude.filters, f)
		}
	}
	return fs
}

// matches reports whether node n matches filter f.
func (f nodeFilter) matches(n *Node) bool {
	var candidates []string
	switch f.attr {
	case "_name":
		candidates = []string{n.Name}
	case "_id":
		candidates = []string{n.ID}
	case "_ip", "_publish_ip", "_host_ip":
		candidates = []string{n.IP()}
	case "_host":
		candidates = []string{n.Host(), n.IP()}
	default:
		v, ok := n.Attrs()[f.attr]
		if !ok {
			return false
		}
		candidates = []string{v}
	}
	return cluster.FilterMatch(f.values, candidates)
}

func (g filterGroup) empty() bool { return len(g.filters) == 0 }

// match applies the group: with and, every attribute must match; otherwise any one.
func (g filterGroup) match(n *Node) bool {
	for _, f := range g.filters {
		m := f.matches(n)
		if g.and && !m {
			return false
		}
		if !g.and && m {
			return true
		}
	}
	return g.and
}

// String is DiscoveryNodeFilters.toString: attr:"v1,v2" joined by AND or OR.
func (g filterGroup) String() string {
	parts := make([]string, len(g.filters))
	for i, f := range g.filters {
		parts[i] = f.attr + `:"` + strings.Join(f.values, ",") + `"`
	}
	if g.and {
		return strings.Join(parts, " AND ")
	}
	return strings.Join(parts, " OR ")
}

// Check returns "" when n passes the set, or OpenSearch's FilterAllocationDecider explanation.
// scope is "index" or "cluster".
func (fs filterSet) Check(n *Node, scope string) string {
	if !fs.require.empty() && !fs.require.match(n) {
		return "node does not match " + scope + " setting [" + fs.require.setting + "] filters [" + fs.require.String() + "]"
	}
	if !fs.include.empty() && !fs.include.match(n) {
		return "node does not match " + scope + " setting [" + fs.include.setting + "] filters [" + fs.include.String() + "]"
	}
	if !fs.exclude.empty() && fs.exclude.match(n) {
		return "node matches " + scope + " setting [" + fs.exclude.setting + "] filters [" + fs.exclude.String() + "]"
	}
	return ""
}
