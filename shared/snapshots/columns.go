package snapshots

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/shardwise/shardwise/shared/cluster"
)

// A chunk of format 2 holds its copies as columns rather than JSON objects: the strings once each
// in a table, every other field as one run of varints or, for the loads, of float bits split into
// byte planes (the high bytes of similar floats repeat, which the compressor then finds). Decoding
// is a few passes over a byte slice with no reflection, and a 30,000-copy snapshot stores in about
// a third of the bytes of its JSON, compressed both.
//
//	byte     columnsVersion
//	uvarint  length of head, then head: the chunk's JSON header (a node and its counters), or none
//	uvarint  n, the copies
//	uvarint  count of strings, then each as uvarint length and bytes; string 0 is ""
//	n × uvarint  index, node, relocating node, state: string numbers, one column each
//	n × uvarint  shard
//	n × byte     flags: flagPrimary, flagLoadKnown, flagCounters, flagDerived
//	n × varint   size in bytes
//	8 bytes      dt, the seconds the loads were derived over (float64 bits, big-endian)
//	d × varint   for the d copies with flagDerived, Δ index time in ms; then Δ search time in ms
//	8 × u bytes  write load of the u = n - d other copies, float64 bits, most significant byte
//	             plane first; then their search load, likewise
//	m × varint   index time in ms of the m copies with flagCounters, then their search time in ms
//
// A copy's loads are its counters' growth over its node's interval dt (cluster.Derive): w =
// float64(Δms)/1000/dt. Where the loads are exactly that for some whole Δms, checked bit for bit,
// the chunk stores Δms, two or three bytes, instead of the eight of a float that compression
// cannot shrink; any other load is stored as it is.
const columnsVersion = 2

const (
	flagPrimary = 1 << iota
	flagLoadKnown
	flagCounters
	flagDerived
)

var errColumns = errors.New("malformed column chunk")

// copyCounters looks up the counters stored with a copy.
type copyCounters func(c *cluster.Copy) (cluster.CopyCounters, bool)

// derivedMillis returns the whole Δms that load comes from over dt seconds, if there is one.
func derivedMillis(load, dt float64) (int64, bool) {
	if dt <= 0 || math.IsNaN(load) || math.IsInf(load, 0) || load < 0 || load*1000*dt > 1<<53 {
		return 0, false
	}
	d := int64(math.Round(load * 1000 * dt))
	return d, math.Float64bits(float64(d)/1000/dt) == math.Float64bits(load)
}

// encodeColumns appends the column encoding of copies, with head, to dst; dt is the seconds the
// copies' loads were derived over (0: unknown).
func encodeColumns(dst, head []byte, copies []cluster.Copy, ctrs copyCounters, dt float64) []byte {
	dst = append(dst, columnsVersion)
	dst = binary.AppendUvarint(dst, uint64(len(head)))
	dst = append(dst, head...)
	dst = binary.AppendUvarint(dst, uint64(len(copies)))
	strs := map[string]uint64{"": 0}
	table := []string{""}
	ref := func(s string) uint64 {
		i, ok := strs[s]
		if !ok {
			i = uint64(len(table))
			strs[s] = i
			table = append(table, s)
		}
		return i
	}
	refs := make([]uint64, 4*len(copies))
	for i := range copies {
		c := &copies[i]
		refs[i], refs[len(copies)+i], refs[2*len(copies)+i], refs[3*len(copies)+i] = ref(c.Index), ref(c.Node), ref(c.RelocatingNode), ref(c.State)
	}
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	for _, s := range table {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	for _, r := range refs {
		dst = binary.AppendUvarint(dst, r)
	}
	for i := range copies {
		dst = binary.AppendUvarint(dst, uint64(copies[i].Shard))
	}
	var counted []cluster.CopyCounters
	var dw, dr []int64
	var raw []cluster.Copy
	for i := range copies {
		c := &copies[i]
		var f byte
		w, wok := derivedMillis(c.WriteLoad, dt)
		r, rok := derivedMillis(c.SearchLoad, dt)
		if wok && rok {
			f |= flagDerived
			dw, dr = append(dw, w), append(dr, r)
		} else {
			raw = append(raw, *c)
		}
		if c.Primary {
			f |= flagPrimary
		}
		if c.LoadKnown {
			f |= flagLoadKnown
		}
		if v, ok := ctrs(c); ok {
			f |= flagCounters
			counted = append(counted, v)
		}
		dst = append(dst, f)
	}
	for i := range copies {
		dst = binary.AppendVarint(dst, copies[i].SizeBytes)
	}
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(dt))
	for _, d := range dw {
		dst = binary.AppendVarint(dst, d)
	}
	for _, d := range dr {
		dst = binary.AppendVarint(dst, d)
	}
	dst = appendPlanes(dst, raw, func(c *cluster.Copy) float64 { return c.WriteLoad })
	dst = appendPlanes(dst, raw, func(c *cluster.Copy) float64 { return c.SearchLoad })
	for _, v := range counted {
		dst = binary.AppendVarint(dst, v.IndexTimeMillis)
	}
	for _, v := range counted {
		dst = binary.AppendVarint(dst, v.SearchTimeMillis)
	}
	return dst
}

// appendPlanes appends the float64 bits of f over copies as 8 planes, the most significant byte
// of every value first.
func appendPlanes(dst []byte, copies []cluster.Copy, f func(*cluster.Copy) float64) []byte {
	n := len(copies)
	start := len(dst)
	dst = append(dst, make([]byte, 8*n)...)
	planes := dst[start:]
	for i := range copies {
		bits := math.Float64bits(f(&copies[i]))
		for p := range 8 {
			planes[p*n+i] = byte(bits >> (56 - 8*p))
		}
	}
	return dst
}

// columnReader reads a column chunk, remembering the first error.
type columnReader struct {
	b   []byte
	err error
}

func (r *columnReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", errColumns, what, len(r.b))
	}
	r.b = nil
}

func (r *columnReader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *columnReader) varint(what string) int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *columnReader) bytes(n uint64, what string) []byte {
	if n > uint64(len(r.b)) {
		r.fail(what)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// decodeColumns reads a chunk written by encodeColumns: its head, and its copies appended to
// copies. Each copy's counters go to ctrs under cluster.CopyKey.
func decodeColumns(raw []byte, copies []cluster.Copy, ctrs map[string]cluster.CopyCounters) (head []byte, _ []cluster.Copy, _ error) {
	r := &columnReader{b: raw}
	if v := r.bytes(1, "version"); r.err == nil && v[0] != columnsVersion {
		return nil, copies, fmt.Errorf("%w: version %d, want %d", errColumns, v[0], columnsVersion)
	}
	head = r.bytes(r.uvarint("head length"), "head")
	n := r.uvarint("copy count")
	// Every copy takes at least 9 bytes (4 string numbers, a shard, flags, a size, 2 load bytes):
	// a count beyond that is corrupt, and must not size an allocation.
	if n > uint64(len(r.b))/9 {
		r.fail("copy count")
	}
	ns := r.uvarint("string count")
	if ns > uint64(len(r.b)) {
		r.fail("string count")
	}
	table := make([]string, 0, ns)
	for range ns {
		table = append(table, string(r.bytes(r.uvarint("string length"), "string")))
	}
	if r.err != nil {
		return nil, copies, r.err
	}
	if len(table) == 0 || table[0] != "" {
		return nil, copies, fmt.Errorf("%w: string 0 is not empty", errColumns)
	}
	start := len(copies)
	copies = append(copies, make([]cluster.Copy, n)...)
	out := copies[start:]
	str := func(what string) string {
		i := r.uvarint(what)
		if i >= uint64(len(table)) {
			r.fail(what)
			return ""
		}
		return table[i]
	}
	for i := range out {
		out[i].Index = str("index")
	}
	for i := range out {
		out[i].Node = str("node")
	}
	for i := range out {
		out[i].RelocatingNode = str("relocating node")
	}
	for i := range out {
		out[i].State = str("state")
	}
	for i := range out {
		out[i].Shard = int(r.uvarint("shard"))
	}
	flags := r.bytes(n, "flags")
	for i := range out {
		out[i].SizeBytes = r.varint("size")
	}
	dtBits := r.bytes(8, "interval")
	if r.err != nil {
		return nil, copies[:start], r.err
	}
	dt := math.Float64frombits(binary.BigEndian.Uint64(dtBits))
	derived := 0
	for i := range out {
		if flags[i]&flagDerived != 0 {
			derived++
		}
	}
	for i := range out {
		if flags[i]&flagDerived != 0 {
			out[i].WriteLoad = float64(r.varint("write Δms")) / 1000 / dt
		}
	}
	for i := range out {
		if flags[i]&flagDerived != 0 {
			out[i].SearchLoad = float64(r.varint("search Δms")) / 1000 / dt
		}
	}
	u := len(out) - derived
	write := r.bytes(uint64(8*u), "write load")
	search := r.bytes(uint64(8*u), "search load")
	if r.err != nil {
		return nil, copies[:start], r.err
	}
	counted, k := 0, 0
	for i := range out {
		out[i].Primary = flags[i]&flagPrimary != 0
		out[i].LoadKnown = flags[i]&flagLoadKnown != 0
		if flags[i]&flagDerived == 0 {
			out[i].WriteLoad = planeFloat(write, u, k)
			out[i].SearchLoad = planeFloat(search, u, k)
			k++
		}
		if flags[i]&flagCounters != 0 {
			counted++
		}
	}
	idx := make([]int64, counted)
	for i := range idx {
		idx[i] = r.varint("index time")
	}
	j := 0
	for i := range out {
		if flags[i]&flagCounters == 0 {
			continue
		}
		c := &out[i]
		ctrs[cluster.CopyKey(c.Index, c.Shard, c.Node)] = cluster.CopyCounters{IndexTimeMillis: idx[j], SearchTimeMillis: r.varint("search time")}
		j++
	}
	if r.err != nil {
		return nil, copies[:start], r.err
	}
	if len(r.b) != 0 {
		return nil, copies[:start], fmt.Errorf("%w: %d bytes after the last column", errColumns, len(r.b))
	}
	return head, copies, nil
}

func planeFloat(planes []byte, n, i int) float64 {
	var bits uint64
	for p := range 8 {
		bits |= uint64(planes[p*n+i]) << (56 - 8*p)
	}
	return math.Float64frombits(bits)
}
