package wire

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"

	"github.com/shardwise/shardwise/shared/cluster"
)

// FilterPath is OpenSearch's filter_path response filtering: a comma list of dotted patterns, where a
// segment may contain '*' (any characters within one key), a segment "**" matches any number of
// levels, and a leading '-' makes a pattern an exclusion. Exclusions apply first, then inclusions.
// Keys that themselves contain dots (flat settings) match consecutive segments.
type FilterPath struct {
	include [][]string
	exclude [][]string
	// src is the parameter it was read from, which names its memo (takeMemo).
	src string
}

// ParseFilterPath returns nil when the parameter selects nothing to filter.
func ParseFilterPath(param string) *FilterPath {
	var fp FilterPath
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
	fp.src = param
	return &fp
}

// apply filters a response tree. A response left with nothing is an empty object, as in OpenSearch.
func (fp *FilterPath) apply(v any) any {
	if fp == nil {
		return v
	}
	if len(fp.exclude) > 0 {
		v = excludeTree(v, startStates(fp.exclude))
	}
	if len(fp.include) > 0 {
		var ok bool
		if v, ok = includeTree(v, startStates(fp.include)); !ok {
			return Object{}
		}
	}
	return v
}

// fpState is a position in one pattern, the n-th of its list.
type fpState struct {
	pat []string
	n   int
	pos int
}

func startStates(pats [][]string) []fpState {
	out := make([]fpState, len(pats))
	for i, p := range pats {
		out[i] = fpState{pat: p, n: i}
	}
	return out
}

// advance matches key against every state; full reports a pattern that ends at or within this key.
func advance(next, states []fpState, key string) ([]fpState, bool) {
	full := false
	dotted := strings.IndexByte(key, '.') >= 0
	var parts []string
	for _, st := range states {
		// The common case, a plain segment against a key without dots, needs no allocation.
		if seg := st.pat[st.pos]; seg != "**" && !dotted {
			if !cluster.SimpleMatch(seg, key) {
				continue
			}
			if st.pos+1 >= len(st.pat) || (st.pos+1 == len(st.pat)-1 && st.pat[st.pos+1] == "**") {
				full = true
				continue
			}
			next = append(next, fpState{pat: st.pat, n: st.n, pos: st.pos + 1})
			continue
		}
		if parts == nil {
			parts = strings.Split(key, ".")
		}
		for _, pos := range matchParts(st.pat, st.pos, parts) {
			if pos >= len(st.pat) || (pos == len(st.pat)-1 && st.pat[pos] == "**") {
				full = true
				continue
			}
			next = append(next, fpState{pat: st.pat, n: st.n, pos: pos})
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
	} else if cluster.SimpleMatch(pat[pos], parts[0]) {
		out = append(out, matchParts(pat, pos+1, parts[1:])...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// fpMemo numbers the sets of pattern positions a filter reaches and remembers where each set goes
// on each key, so a large answer's repeated keys (every copy's "routing", "docs", ...) are matched
// against the patterns once per answer instead of once per occurrence. Set -1 is the empty set.
type fpMemo struct {
	sets  [][]fpState
	ids   map[string]int32    // the sets' (pattern, position) lists, encoded → set
	steps []map[string]fpNext // set → key → where it goes
	// programs are the shapes met so far, as each filter position writes them.
	programs map[shapeKey]*shapeProgram
	// start is the set of the patterns' starts; keys counts the keys stepped on.
	start int32
	keys  int
}

// memos keeps the memo of each filter_path a client sends, between answers: the functions read
// the same large answers with the same filters every cycle, and matching an answer's 4,000 index
// names and 30,000 shard keys against the patterns again each time was a third of writing it.
// A memo is taken out while an answer uses it, so concurrent answers never share one.
var memos struct {
	sync.Mutex
	m map[string]*fpMemo
}

// memoMaxKeys and memoMaxFilters bound what memos keeps.
const (
	memoMaxKeys    = 1 << 18
	memoMaxFilters = 32
)

// takeMemo returns fp's memo, kept from an earlier answer or new.
func takeMemo(fp *FilterPath) *fpMemo {
	memos.Lock()
	m, ok := memos.m[fp.src]
	delete(memos.m, fp.src)
	memos.Unlock()
	if ok {
		return m
	}
	m, start := newFPMemo(startStates(fp.include))
	m.start = start
	return m
}

// putMemo keeps fp's memo m for the next answer, without the shapes it compiled, which were this
// answer's own.
func putMemo(fp *FilterPath, m *fpMemo) {
	if m.keys > memoMaxKeys {
		return
	}
	m.programs = nil
	memos.Lock()
	defer memos.Unlock()
	if memos.m == nil || len(memos.m) >= memoMaxFilters {
		memos.m = map[string]*fpMemo{}
	}
	memos.m[fp.src] = m
}

type fpNext struct {
	set  int32
	full bool
}

func newFPMemo(states []fpState) (*fpMemo, int32) {
	m := &fpMemo{ids: map[string]int32{}}
	return m, m.intern(states)
}

// step is advance from a set: the set it reaches on key, and whether a pattern ends there.
func (m *fpMemo) step(set int32, key string) (int32, bool) {
	if r, ok := m.steps[set][key]; ok {
		return r.set, r.full
	}
	next, full := advance(nil, m.sets[set], key)
	m.keys++
	r := fpNext{m.intern(next), full}
	m.steps[set][key] = r
	return r.set, r.full
}

func (m *fpMemo) intern(states []fpState) int32 {
	if len(states) == 0 {
		return -1
	}
	sig := make([]byte, 0, 4*len(states))
	for _, st := range states {
		sig = binary.AppendUvarint(sig, uint64(st.n))
		sig = binary.AppendUvarint(sig, uint64(st.pos))
	}
	if id, ok := m.ids[string(sig)]; ok {
		return id
	}
	id := int32(len(m.sets))
	m.sets = append(m.sets, states)
	m.steps = append(m.steps, map[string]fpNext{})
	m.ids[string(sig)] = id
	return id
}

// fpWalker reuses one state buffer per depth, so walking a large answer allocates only for what it keeps.
type fpWalker struct {
	bufs [][]fpState
}

func (w *fpWalker) buf(depth int) []fpState {
	for len(w.bufs) <= depth {
		w.bufs = append(w.bufs, nil)
	}
	return w.bufs[depth][:0]
}

// includeTree keeps what the states select; ok is false when nothing is left.
func includeTree(v any, states []fpState) (any, bool) {
	var w fpWalker
	return w.include(v, states, 0)
}

func (w *fpWalker) include(v any, states []fpState, depth int) (any, bool) {
	switch t := v.(type) {
	case LazyObject:
		v = t()
	case Shaped:
		v = t.Object()
	}
	switch t := v.(type) {
	case Object:
		var out Object
		for _, f := range t {
			next, full := advance(w.buf(depth), states, f.Key)
			w.bufs[depth] = next
			if full {
				out = append(out, f)
				continue
			}
			if len(next) == 0 {
				continue
			}
			if sub, ok := w.include(f.Val, next, depth+1); ok {
				out = append(out, Field{f.Key, sub})
			}
		}
		return out, len(out) > 0
	case []any:
		return includeElems(w, t, states, depth)
	case []Object:
		return includeElems(w, t, states, depth)
	}
	// A scalar reached with pattern left over is not selected.
	return nil, false
}

// includeElems keeps what the states select of each element of an array, dropping the elements
// with nothing selected.
func includeElems[T any](w *fpWalker, elems []T, states []fpState, depth int) (any, bool) {
	var out []any
	for _, e := range elems {
		if sub, ok := w.include(e, states, depth); ok {
			out = append(out, sub)
		}
	}
	return out, len(out) > 0
}

// excludeTree drops what the states select and keeps the rest.
func excludeTree(v any, states []fpState) any {
	switch t := v.(type) {
	case LazyObject:
		v = t()
	case Shaped:
		v = t.Object()
	}
	switch t := v.(type) {
	case Object:
		out := make(Object, 0, len(t))
		for _, f := range t {
			next, full := advance(nil, states, f.Key)
			switch {
			case full:
			case len(next) == 0:
				out = append(out, f)
			default:
				out = append(out, Field{f.Key, excludeTree(f.Val, next)})
			}
		}
		return out
	case []any:
		return excludeElems(t, states)
	case []Object:
		return excludeElems(t, states)
	}
	return v
}

// excludeElems drops what the states select from each element of an array.
func excludeElems[T any](elems []T, states []fpState) []any {
	out := make([]any, len(elems))
	for i, e := range elems {
		out[i] = excludeTree(e, states)
	}
	return out
}
