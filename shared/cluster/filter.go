package cluster

import "strings"

// The one implementation of OpenSearch's allocation-filter matching (DiscoveryNodeFilters), used by
// the planner's filter decider and by the simulator.

// SimpleMatch is OpenSearch's Regex.simpleMatch: '*' matches any run of characters and nothing else
// is special ("node-[12]" is a literal, not a character class). It backtracks only to the last '*',
// which is enough for a pattern of literal runs.
func SimpleMatch(pattern, value string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == value
	}
	if !strings.HasPrefix(value, pattern[:star]) {
		return false
	}
	value = value[star:]
	pattern = pattern[star+1:]
	for {
		next := strings.IndexByte(pattern, '*')
		if next < 0 {
			return strings.HasSuffix(value, pattern)
		}
		i := strings.Index(value, pattern[:next])
		if i < 0 {
			return false
		}
		value = value[i+next:]
		pattern = pattern[next+1:]
	}
}

// FilterPatterns splits a filter setting's comma-separated value into its patterns, trimmed; an
// empty value has none (and clears the filter, as in OpenSearch).
func FilterPatterns(list string) []string {
	var out []string
	for v := range strings.SplitSeq(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// FilterMatch reports whether any pattern matches any of a node's values for one attribute.
func FilterMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if SimpleMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// FilterValues are the values a filter on attr matches against for node n, as OpenSearch's
// DiscoveryNodeFilters reads them: _name, _id, the IP for _ip, _publish_ip and _host_ip, the host
// name or the IP for _host, else the custom attribute. None when the node lacks it.
func (n *Node) FilterValues(attr string) []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
		}
	}
	switch attr {
	case "_name":
		add(n.Name)
	case "_id":
		add(n.ID)
	case "_ip", "_publish_ip", "_host_ip":
		add(n.IP)
	case "_host":
		add(n.Host)
		add(n.IP)
	default:
		if v, ok := n.Attributes[attr]; ok {
			out = append(out, v)
		}
	}
	return out
}
