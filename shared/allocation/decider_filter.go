package allocation

import (
	"fmt"

	"github.com/shardwise/shardwise/shared/cluster"
)

// DeciderFilter names the allocation-filter decider.
const DeciderFilter = "filter"

// filter: index and cluster allocation filters (include / exclude / require). A copy on a node its
// filters no longer allow may not remain.
type filter struct{}

func (filter) Name() string { return DeciderFilter }

func (filter) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if ix := v.Index(c.Index); ix != nil {
		if ok, why := FiltersAllow(ix.Filters, t); !ok {
			return verdict(DeciderFilter, No, 0, 0, "index %s: %s", c.Index, why)
		}
	}
	if ok, why := FiltersAllow(v.Snap.Settings.Filters, t); !ok {
		return verdict(DeciderFilter, No, 0, 0, "cluster: %s", why)
	}
	return yes(DeciderFilter, "%s matches the allocation filters", t.Name)
}

func (d filter) CanRemain(v *View, c *cluster.Copy, n *cluster.Node) Verdict {
	return d.CanAllocate(v, c, n)
}

// FiltersAllow applies OpenSearch's filter semantics: every require attribute must match, at least one
// include value must match when include is set, and no exclude value may match. It says why not.
func FiltersAllow(f cluster.Filters, n *cluster.Node) (bool, string) {
	for attr, values := range f.Require {
		if !cluster.FilterMatch(cluster.FilterPatterns(values), n.FilterValues(attr)) {
			val, _ := n.Attr(attr)
			return false, fmt.Sprintf("require %s=%q does not match %s (%q)", attr, values, n.Name, val)
		}
	}
	if len(f.Include) > 0 {
		matched := false
		for attr, values := range f.Include {
			if cluster.FilterMatch(cluster.FilterPatterns(values), n.FilterValues(attr)) {
				matched = true
				break
			}
		}
		if !matched {
			return false, fmt.Sprintf("%s matches no include filter", n.Name)
		}
	}
	for attr, values := range f.Exclude {
		if cluster.FilterMatch(cluster.FilterPatterns(values), n.FilterValues(attr)) {
			return false, fmt.Sprintf("exclude %s=%q matches %s", attr, values, n.Name)
		}
	}
	return true, ""
}
