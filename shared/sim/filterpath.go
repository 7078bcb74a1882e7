package sim

import (
	"slices"
	"strings"
)

// filterPath is OpenSearch's filter_path response filtering: a comma list of dotted patterns, where a
// segment may contain '*' (any characters within one key), a segment "**" matches any number of
// levels, and a leading '-' makes a pattern an exclusion. Exclusions apply first, then inclusions.
// Keys that themselves contain dots (flat settings) match consecutive segments.
type filterPath struct {
	include [][]string
	exclude [][]string
}

// parseFilterPath returns nil when the parameter selects nothing to filter.
func parseFilterPath(param string) *filterPath {
	var fp filterPath
	for p := range strings.SplitSeq(param, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(p, "-"); ok {
			if rest != "" {
				fp.exclude = append(fp.exclude, strings.Split(rest, "."))
			}
			continue
		}
		fp.include = append(fp.include, strings.Split(p, "."))
	}
	if len(fp.include) == 0 && len(fp.exclude) == 0 {
		return nil
	}
	return &fp
}

// apply filters a response tree. A response left with nothing is an empty object, as in OpenSearch.
func (fp *filterPath) apply(v any) any {
	if fp == nil {
		return v
	}
	if len(fp.exclude) > 0 {
		v = excludeTree(v, startStates(fp.exclude))
	}
	if len(fp.include) > 0 {
		var ok bool
		if v, ok = includeTree(v, startStates(fp.include)); !ok {
			return object{}
		}
	}
	return v
}

// fpState is a position in one pattern.
type fpState struct {
	pat []string
	pos int
}

func startStates(pats [][]string) []fpState {
	out := make([]fpState, len(pats))
	for i, p := range pats {
		out[i] = fpState{pat: p}
	}
	return out
}

// advance matches key against every state; full reports a pattern that ends at or within this key.
func advance(states []fpState, key string) (next []fpState, full bool) {
	parts := strings.Split(key, ".")
	for _, st := range states {
		for _, pos := range matchParts(st.pat, st.pos, parts) {
			if pos >= len(st.pat) || (pos == len(st.pat)-1 && st.pat[pos] == "**") {
				full = true
				continue
			}
			next = append(next, fpState{pat: st.pat, pos: pos})
		}
	}
	return next, full
}

// matchParts returns the pattern positions reachable after consuming the key's parts from pos.
// A pattern that ends before the parts do matched the whole key (a prefix of a dotted key).
func matchParts(pat []string, pos int, parts []string) []int {
	if len(parts) == 0 || pos >= len(pat) {
		return []int{pos}
	}
	var out []int
	if pat[pos] == "**" {
		// "**" absorbs this part and stays, or matches nothing and the next segment takes the part.
		out = append(out, matchParts(pat, pos, parts[1:])...)
		if pos+1 < len(pat) {
			out = append(out, matchParts(pat, pos+1, parts)...)
		} else {
			out = append(out, pos+1)
		}
	} else if matchValue(pat[pos], parts[0]) {
		out = append(out, matchParts(pat, pos+1, parts[1:])...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// includeTree keeps what the states select; ok is false when nothing is left.
func includeTree(v any, states []fpState) (any, bool) {
	switch t := v.(type) {
	case object:
		out := object{}
		for _, f := range t {
			next, full := advance(states, f.Key)
			if full {
				out = append(out, f)
				continue
			}
			if len(next) == 0 {
				continue
			}
			if sub, ok := includeTree(f.Val, next); ok {
				out = append(out, field{f.Key, sub})
			}
		}
		return out, len(out) > 0
	case []any:
		var out []any
		for _, e := range t {
			if sub, ok := includeTree(e, states); ok {
				out = append(out, sub)
			}
		}
		return out, len(out) > 0
	case []object:
		var out []any
		for _, e := range t {
			if sub, ok := includeTree(e, states); ok {
				out = append(out, sub)
			}
		}
		return out, len(out) > 0
	}
	// A scalar reached with pattern left over is not selected.
	return nil, false
}

// excludeTree drops what the states select and keeps the rest.
func excludeTree(v any, states []fpState) any {
	switch t := v.(type) {
	case object:
		out := make(object, 0, len(t))
		for _, f := range t {
			next, full := advance(states, f.Key)
			switch {
			case full:
			case len(next) == 0:
				out = append(out, f)
			default:
				out = append(out, field{f.Key, excludeTree(f.Val, next)})
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = excludeTree(e, states)
		}
		return out
	case []object:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = excludeTree(e, states)
		}
		return out
	}
	return v
}
