package opensearch

import (
	"cmp"
	"slices"
	"strings"
)

// decodeShardStatsPlain decodes _stats?level=shards when the answer is in the plain form
// OpenSearch gives it under shardStatsFilter: only the names that filter keeps, each in its own
// case and at most once per object, strings without escapes or bytes outside printable ASCII,
// integers without fraction or exponent that fit in 63 bits, null only where a string, bool or
// integer goes. ok is false for anything else, and the caller then decodes the answer the general
// way (unmarshalLarge), which gives what encoding/json gives; for an answer in the plain form both
// give the same ShardStats (TestDecodeShardStatsPlain, FuzzDecodeLargeMatchesStd).
//
// It reads the bytes once, with no map per index or per shard and no reflection: at 30,000
// copies (13 MB) the general decode was the largest cost of a production-size simulate.
func decodeShardStatsPlain(body []byte) (ShardStats, bool) {
	p := plainScanner{b: body}
	out := ShardStats{Copies: make([]ShardCopyStats, 0, len(body)/256+1)}
	in := make(interner)
	seenIndex := map[string]bool{}
	var (
		seenTop uint8
		runs    []shardRun
	)
	ok := p.object(func(name []byte) bool {
		switch string(name) {
		case "_shards":
			var seen uint8
			return p.once(&seenTop, 1) && p.object(func(name []byte) bool {
				switch string(name) {
				case "total":
					return p.once(&seen, 1) && p.intInto(&out.ShardsTotal)
				case "successful":
					return p.once(&seen, 2) && p.intInto(&out.ShardsSuccessful)
				case "failed":
					return p.once(&seen, 4) && p.intInto(&out.ShardsFailed)
				}
				return false
			}, true)
		case "indices":
			return p.once(&seenTop, 2) && p.object(func(index []byte) bool {
				if seenIndex[string(index)] {
					return false
				}
				name := string(index)
				seenIndex[name] = true
				var seenShards uint8
				return p.object(func(key []byte) bool {
					if string(key) != "shards" || !p.once(&seenShards, 1) {
						return false
					}
					var shards []int
					return p.object(func(key []byte) bool {
						shard, ok := plainShardNumber(key)
						if !ok || slices.Contains(shards, shard) {
							return false
						}
						shards = append(shards, shard)
						start := len(out.Copies)
						defer func() {
							if len(out.Copies) > start {
								runs = append(runs, shardRun{name, shard, start, len(out.Copies)})
							}
						}()
						return p.array(func() bool {
							c := ShardCopyStats{Index: name, Shard: shard}
							if !p.copyStats(&c, in) {
								return false
							}
							out.Copies = append(out.Copies, c)
							return true
						})
					}, false)
				}, false)
			}, false)
		}
		return false
	}, false)
	if !ok || !p.end() {
		return ShardStats{}, false
	}
	// The general decode lists indices by name and shards by number (shardTable.each); the
	// answer lists them in its own order. Each shard's copies are side by side in the answer, and
	// no two runs are of one shard: the runs are sorted, each keeping its copies' order, as each
	// does.
	byShard := func(a, b shardRun) int {
		return cmp.Or(strings.Compare(a.index, b.index), cmp.Compare(a.shard, b.shard))
	}
	if !slices.IsSortedFunc(runs, byShard) {
		slices.SortFunc(runs, byShard)
		sorted := make([]ShardCopyStats, 0, len(out.Copies))
		for _, r := range runs {
			sorted = append(sorted, out.Copies[r.start:r.end]...)
		}
		out.Copies = sorted
	}
	sortShards(out.Copies, func(c *ShardCopyStats) copyKey { return copyKey{c.Index, c.Shard, c.Primary, c.Node} })
	return out, true
}

// shardRun is where one shard's copies are in the decoded list: [start, end).
type shardRun struct {
	index      string
	shard      int
	start, end int
}

// copyStats reads one copy's object into c.
func (p *plainScanner) copyStats(c *ShardCopyStats, in interner) bool {
	var seen uint8
	return p.object(func(name []byte) bool {
		switch string(name) {
		case "routing":
			var seen2 uint8
			return p.once(&seen, 1) && p.object(func(name []byte) bool {
				switch string(name) {
				case "state":
					return p.once(&seen2, 1) && p.internInto(&c.State, in)
				case "primary":
					return p.once(&seen2, 2) && p.boolInto(&c.Primary)
				case "node":
					return p.once(&seen2, 4) && p.internInto(&c.Node, in)
				case "relocating_node":
					return p.once(&seen2, 8) && p.internInto(&c.RelocatingNode, in)
				}
				return false
			}, true)
		case "indexing":
			var seen2 uint8
			return p.once(&seen, 2) && p.object(func(name []byte) bool {
				switch string(name) {
				case "index_time_in_millis":
					return p.once(&seen2, 1) && p.int64Into(&c.IndexTimeMillis)
				case "index_total":
					return p.once(&seen2, 2) && p.int64Into(&c.IndexTotal)
				}
				return false
			}, true)
		case "search":
			var seen2 uint8
			return p.once(&seen, 4) && p.object(func(name []byte) bool {
				switch string(name) {
				case "query_time_in_millis":
					return p.once(&seen2, 1) && p.int64Into(&c.QueryTimeMillis)
				case "fetch_time_in_millis":
					return p.once(&seen2, 2) && p.int64Into(&c.FetchTimeMillis)
				case "query_total":
					return p.once(&seen2, 4) && p.int64Into(&c.QueryTotal)
				}
				return false
			}, true)
		case "store":
			var seen2 uint8
			return p.once(&seen, 8) && p.object(func(name []byte) bool {
				return string(name) == "size_in_bytes" && p.once(&seen2, 1) && p.int64Into(&c.StoreBytes)
			}, true)
		case "docs":
			var seen2 uint8
			return p.once(&seen, 16) && p.object(func(name []byte) bool {
				return string(name) == "count" && p.once(&seen2, 1) && p.int64Into(&c.Docs)
			}, true)
		}
		return false
	}, true)
}

// plainScanner reads the plain form decodeShardStatsPlain accepts; each method reports false at
// anything outside it.
type plainScanner struct {
	b []byte
	i int
}

func (p *plainScanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end reports whether only whitespace is left.
func (p *plainScanner) end() bool {
	p.ws()
	return p.i == len(p.b)
}

func (p *plainScanner) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// null reads null if it is next.
func (p *plainScanner) null() bool {
	p.ws()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// once reports whether bit was not yet set in seen, and sets it: each name at most once per object.
func (p *plainScanner) once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// str reads a string of printable ASCII without escapes and returns its bytes, which alias the body.
func (p *plainScanner) str() ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, false
		}
	}
	return nil, false
}

// object reads an object, calling field after each name's colon to read its value. With
// nullable, null stands for the object and leaves everything as it was, as encoding/json does.
func (p *plainScanner) object(field func(name []byte) bool, nullable bool) bool {
	if nullable && p.null() {
		return true
	}
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		name, ok := p.str()
		if !ok || !p.byte(':') || !field(name) {
			return false
		}
		if p.byte(',') {
			continue
		}
		return p.byte('}')
	}
}

// array reads an array, calling elem to read each element.
func (p *plainScanner) array(elem func() bool) bool {
	if !p.byte('[') {
		return false
	}
	if p.byte(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.byte(',') {
			continue
		}
		return p.byte(']')
	}
}

// internInto reads a string or null; null leaves *dst as it was.
func (p *plainScanner) internInto(dst *string, in interner) bool {
	if p.null() {
		return true
	}
	s, ok := p.str()
	if !ok {
		return false
	}
	if len(s) == 0 {
		*dst = ""
		return true
	}
	if v, found := in[string(s)]; found {
		*dst = v
		return true
	}
	v := string(s)
	in[v] = v
	*dst = v
	return true
}

func (p *plainScanner) boolInto(dst *bool) bool {
	if p.null() {
		return true
	}
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		*dst, p.i = true, p.i+4
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		*dst, p.i = false, p.i+5
	default:
		return false
	}
	return p.delimited()
}

// delimited reports whether a literal or number just read ends where JSON says it may.
func (p *plainScanner) delimited() bool {
	if p.i == len(p.b) {
		return true
	}
	switch p.b[p.i] {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

// int64Into reads an integer of at most 18 digits (no fraction, no exponent, no leading zero) or
// null; null leaves *dst as it was.
func (p *plainScanner) int64Into(dst *int64) bool {
	if p.null() {
		return true
	}
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	j := p.i
	if neg {
		j++
	}
	start := j
	var v int64
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		v = v*10 + int64(p.b[j]-'0')
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || (digits > 1 && p.b[start] == '0') {
		return false
	}
	p.i = j
	if !p.delimited() {
		return false
	}
	if neg {
		v = -v
	}
	*dst = v
	return true
}

func (p *plainScanner) intInto(dst *int) bool {
	v := int64(*dst)
	if !p.int64Into(&v) {
		return false
	}
	*dst = int(v)
	return true
}

// plainShardNumber reads a shard key of at most 9 digits without a leading zero.
func plainShardNumber(key []byte) (int, bool) {
	if len(key) == 0 || len(key) > 9 || (len(key) > 1 && key[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range key {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
