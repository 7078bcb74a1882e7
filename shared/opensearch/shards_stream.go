package opensearch

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// streamShardStats reads _stats?level=shards with the JSON library's tokenizer (jsontext) straight
// into the copies, without the map of maps and the struct per copy that the general decode builds:
// that decode took a fifth of the production simulate's CPU (issue 30). It takes only the answer
// whose meaning is plain: every name in the case OpenSearch writes it and once per object,
// integers of at most 18 digits where integers go, shard keys spelled as numbers, valid UTF-8,
// nothing after the answer. OpenSearch and the simulator answer so. For
// anything else it says false, and decodeShardStats decodes the body the general way, so what the
// copies are, and whether the body is an error, is always what encoding/json makes of it
// (TestStreamShardStatsMatches, FuzzDecodeLargeMatchesStd).
func streamShardStats(body []byte) (ShardStats, bool) {
	s := shardStream{dec: jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true)), in: make(interner)}
	out, ok := s.top(len(body))
	if !ok {
		return ShardStats{}, false
	}
	// Nothing may follow the answer.
	if _, err := s.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return ShardStats{}, false
	}
	return out, true
}

type shardStream struct {
	dec  *jsontext.Decoder
	in   interner
	name []byte // the last name or string read, unquoted
	// shards are the shard numbers of the index being read: the decoder lets names repeat (its
	// check of every name cost a tenth of the decode), so the walk finds its own repeats.
	shards []int
}

// indexSpan is where an index's copies sit in the list, in the answer's order.
type indexSpan struct {
	name       string
	start, end int
}

func (s *shardStream) top(size int) (ShardStats, bool) {
	if !s.open('{') {
		return ShardStats{}, false
	}
	var out ShardStats
	seenIndices, seenShards := false, false
	var spans []indexSpan
	for s.dec.PeekKind() != '}' {
		name, ok := s.readName()
		if !ok {
			return ShardStats{}, false
		}
		switch {
		case string(name) == "_shards":
			if seenShards {
				return ShardStats{}, false
			}
			seenShards = true
			if !s.shardsHeader(&out) {
				return ShardStats{}, false
			}
		case string(name) == "indices":
			if seenIndices {
				return ShardStats{}, false
			}
			// Roughly one copy per 300 bytes under shardStatsFilter; append grows it if not.
			out.Copies = make([]ShardCopyStats, 0, size/300+1)
			if spans, ok = s.indices(&out.Copies); !ok {
				return ShardStats{}, false
			}
			seenIndices = true
		default:
			if !s.skipUnknown(name, "_shards", "indices") {
				return ShardStats{}, false
			}
		}
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return ShardStats{}, false
	}
	if !seenIndices {
		out.Copies = []ShardCopyStats{}
		return out, true
	}
	var ok bool
	if out.Copies, ok = inIndexOrder(out.Copies, spans); !ok {
		return ShardStats{}, false
	}
	sortShards(out.Copies, func(c *ShardCopyStats) copyKey { return copyKey{c.Index, c.Shard, c.Primary, c.Node} })
	return out, true
}

// inIndexOrder puts the indices' spans in name order, each index's shards in number order: the
// order shardTable.each lists them in. An index named twice is not plain.
func inIndexOrder(copies []ShardCopyStats, spans []indexSpan) ([]ShardCopyStats, bool) {
	for _, sp := range spans {
		part := copies[sp.start:sp.end]
		if !slices.IsSortedFunc(part, byShard) {
			slices.SortStableFunc(part, byShard)
		}
	}
	if increasing(spans) {
		return copies, true
	}
	slices.SortFunc(spans, byIndexName)
	if !increasing(spans) {
		return nil, false
	}
	sorted := make([]ShardCopyStats, 0, len(copies))
	for _, sp := range spans {
		sorted = append(sorted, copies[sp.start:sp.end]...)
	}
	return sorted, true
}

// increasing is whether every span's name is after the one before it.
func increasing(spans []indexSpan) bool {
	for i := 1; i < len(spans); i++ {
		if spans[i-1].name >= spans[i].name {
			return false
		}
	}
	return true
}

func byShard(a, b ShardCopyStats) int { return a.Shard - b.Shard }

func byIndexName(a, b indexSpan) int { return strings.Compare(a.name, b.name) }

func (s *shardStream) shardsHeader(out *ShardStats) bool {
	if s.null() {
		return true
	}
	if !s.open('{') {
		return false
	}
	var seen uint
	for s.dec.PeekKind() != '}' {
		name, ok := s.readName()
		if !ok {
			return false
		}
		var dst *int
		var bit uint
		switch string(name) {
		case "total":
			dst, bit = &out.ShardsTotal, 1
		case "successful":
			dst, bit = &out.ShardsSuccessful, 2
		case "failed":
			dst, bit = &out.ShardsFailed, 4
		default:
			if !s.skipUnknown(name, "total", "successful", "failed") {
				return false
			}
			continue
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		n, ok := s.readInt()
		if !ok {
			return false
		}
		*dst = int(n) // 0 for null
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

func (s *shardStream) indices(copies *[]ShardCopyStats) ([]indexSpan, bool) {
	if s.null() {
		return nil, true
	}
	if !s.open('{') {
		return nil, false
	}
	var spans []indexSpan
	for s.dec.PeekKind() != '}' {
		if _, ok := s.readName(); !ok {
			return nil, false
		}
		sp := indexSpan{name: string(s.name), start: len(*copies)}
		if !s.index(sp.name, copies) {
			return nil, false
		}
		sp.end = len(*copies)
		spans = append(spans, sp)
	}
	_, err := s.dec.ReadToken()
	return spans, err == nil
}

func (s *shardStream) index(index string, copies *[]ShardCopyStats) bool {
	if s.null() {
		return true
	}
	if !s.open('{') {
		return false
	}
	seen := false
	for s.dec.PeekKind() != '}' {
		name, ok := s.readName()
		if !ok {
			return false
		}
		if string(name) != "shards" {
			if !s.skipUnknown(name, "shards") {
				return false
			}
			continue
		}
		if seen {
			return false
		}
		seen = true
		if s.null() {
			continue
		}
		s.shards = s.shards[:0]
		if !s.open('{') {
			return false
		}
		for s.dec.PeekKind() != '}' {
			if _, ok := s.readName(); !ok {
				return false
			}
			shard, ok := shardNumber(s.name)
			if !ok || slices.Contains(s.shards, shard) {
				return false
			}
			s.shards = append(s.shards, shard)
			if s.null() {
				continue
			}
			if !s.open('[') {
				return false
			}
			for s.dec.PeekKind() != ']' {
				c := ShardCopyStats{Index: index, Shard: shard}
				if !s.copyStats(&c) {
					return false
				}
				*copies = append(*copies, c)
			}
			if _, err := s.dec.ReadToken(); err != nil {
				return false
			}
		}
		if _, err := s.dec.ReadToken(); err != nil {
			return false
		}
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

// shardNumber is the shard a key names, if the key is a number as strconv.Itoa spells it.
func shardNumber(key []byte) (int, bool) {
	if len(key) == 0 || len(key) > 9 || (key[0] == '0' && len(key) > 1) {
		return 0, false
	}
	n := 0
	for _, b := range key {
		if b < '0' || b > '9' {
			return 0, false
		}
		n = n*10 + int(b-'0')
	}
	return n, true
}

func (s *shardStream) copyStats(c *ShardCopyStats) bool {
	if s.null() {
		return true
	}
	if !s.open('{') {
		return false
	}
	var seen uint
	for s.dec.PeekKind() != '}' {
		name, ok := s.readName()
		if !ok {
			return false
		}
		i := nameIndex(copyNames, name)
		if i >= 0 {
			if seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
		}
		switch i {
		case 0:
			ok = s.fields(routingNames, func(i int) bool {
				switch i {
				case 0:
					return s.readString(&c.State)
				case 1:
					return s.readBool(&c.Primary)
				case 2:
					return s.readString(&c.Node)
				default:
					return s.readString(&c.RelocatingNode)
				}
			})
		case 1:
			ok = s.ints(indexingNames, &c.IndexTimeMillis, &c.IndexTotal)
		case 2:
			ok = s.ints(searchNames, &c.QueryTimeMillis, &c.FetchTimeMillis, &c.QueryTotal)
		case 3:
			ok = s.ints(storeNames, &c.StoreBytes)
		case 4:
			ok = s.ints(docsNames, &c.Docs)
		default:
			ok = s.skipUnknown(name, copyNames...)
		}
		if !ok {
			return false
		}
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

// The names shardCopyWire reads, by object.
var (
	copyNames     = []string{"routing", "indexing", "search", "store", "docs"}
	routingNames  = []string{"state", "primary", "node", "relocating_node"}
	indexingNames = []string{"index_time_in_millis", "index_total"}
	searchNames   = []string{"query_time_in_millis", "fetch_time_in_millis", "query_total"}
	storeNames    = []string{"size_in_bytes"}
	docsNames     = []string{"count"}
)

// ints reads an object of integers named names into dst, in that order.
func (s *shardStream) ints(names []string, dst ...*int64) bool {
	return s.fields(names, func(i int) bool {
		n, ok := s.readInt()
		*dst[i] = n
		return ok
	})
}

// fields reads an object, calling read with the index in names of each name it has, and skipping
// the others.
func (s *shardStream) fields(names []string, read func(i int) bool) bool {
	if s.null() {
		return true
	}
	if !s.open('{') {
		return false
	}
	var seen uint
	for s.dec.PeekKind() != '}' {
		name, ok := s.readName()
		if !ok {
			return false
		}
		i := nameIndex(names, name)
		switch {
		case i < 0:
			ok = s.skipUnknown(name, names...)
		case seen&(1<<i) != 0:
			return false
		default:
			seen |= 1 << i
			ok = read(i)
		}
		if !ok {
			return false
		}
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

func nameIndex(names []string, name []byte) int {
	for i, n := range names {
		if string(name) == n {
			return i
		}
	}
	return -1
}

// open reads the start of an object or array; any other value is not plain.
func (s *shardStream) open(kind jsontext.Kind) bool {
	if s.dec.PeekKind() != kind {
		return false
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

// null reads a null if one is next. encoding/json leaves a field alone for null (a map or a list
// it makes nil), and each name comes once, so a null is a value left at zero: OpenSearch writes
// "relocating_node":null for every copy that is not moving.
func (s *shardStream) null() bool {
	if s.dec.PeekKind() != 'n' {
		return false
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

// readName reads an object's name into s.name and returns it, valid until the next read: the
// callers convert it to a string only to compare it, which does not allocate.
func (s *shardStream) readName() ([]byte, bool) {
	if !s.readQuoted() {
		return nil, false
	}
	return s.name, true
}

// readQuoted reads a string value or name, unquoted, into s.name.
func (s *shardStream) readQuoted() bool {
	if s.dec.PeekKind() != '"' {
		return false
	}
	v, err := s.dec.ReadValue()
	if err != nil || len(v) < 2 {
		return false
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		s.name = append(s.name[:0], raw...)
		return true
	}
	s.name, err = jsontext.AppendUnquote(s.name[:0], v)
	return err == nil
}

func (s *shardStream) readString(dst *string) bool {
	if s.null() {
		return true
	}
	if !s.readQuoted() {
		return false
	}
	*dst = s.in.bytes(s.name)
	return true
}

func (s *shardStream) readBool(dst *bool) bool {
	if s.null() {
		return true
	}
	switch s.dec.PeekKind() {
	case 't', 'f':
	default:
		return false
	}
	v, err := s.dec.ReadValue()
	if err != nil {
		return false
	}
	*dst = v[0] == 't'
	return true
}

// readInt reads an integer that fits an int64, as encoding/json decodes one into an int64; a
// fraction, an exponent or a number past int64 is not plain.
func (s *shardStream) readInt() (int64, bool) {
	if s.null() {
		return 0, true
	}
	if s.dec.PeekKind() != '0' {
		return 0, false
	}
	v, err := s.dec.ReadValue()
	if err != nil {
		return 0, false
	}
	neg := v[0] == '-'
	if neg {
		v = v[1:]
	}
	// 18 digits always fit; longer numbers go the general way.
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, b := range v {
		if b < '0' || b > '9' {
			return 0, false
		}
		n = n*10 + int64(b-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// skipUnknown skips the value of a name the decode does not read, unless the name could be taken
// for one of known: encoding/json matches names without regard to case, and v2's matching also
// ignores '_' and '-', so any such name (or one with bytes past ASCII, which Unicode folding could
// match) is not plain.
func (s *shardStream) skipUnknown(name []byte, known ...string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return false
		}
	}
	for _, k := range known {
		if looseEqual(name, k) {
			return false
		}
	}
	return s.dec.SkipValue() == nil
}

// looseEqual is whether a and b are equal ignoring ASCII case, '_' and '-'.
func looseEqual(a []byte, b string) bool {
	i, j := 0, 0
	for {
		for i < len(a) && (a[i] == '_' || a[i] == '-') {
			i++
		}
		for j < len(b) && (b[j] == '_' || b[j] == '-') {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if lower(a[i]) != lower(b[j]) {
			return false
		}
		i++
		j++
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// bytes is get for a string held as bytes: the lookup does not allocate.
func (in interner) bytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := in[string(b)]; ok {
		return v
	}
	s := string(b)
	in[s] = s
	return s
}
