package snapshots

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/shardwise/shardwise/shared/cluster"
)

// A copies item of format 2 holds a run of the snapshot's copies, in the snapshot's order, as
// columns rather than JSON objects: the strings once each in a table, every other field as one run
// of varints. Decoding is a few passes over a byte slice with no reflection.
//
// Two things make the columns small. A copy's loads are its counters' growth over its node's
// interval dt (cluster.Derive): w = float64(Δms)/1000/dt. Where a load is exactly that for a whole
// Δms, checked bit for bit, the column holds Δms, two or three bytes, instead of the eight of a
// float that compression cannot shrink; any other load is stored as it is. And the copies of one
// shard sit side by side in the snapshot's order, with nearly the same size, counters and growth:
// each number of a copy following another copy of its shard is stored as the difference.
//
//	byte     columnsVersion
//	uvarint  n, the copies
//	uvarint  count of strings, then each as uvarint length and bytes; string 0 is ""
//	uvarint  count of intervals, then each as the string number of a node and its dt (float64
//	         bits, big-endian)
//	n × uvarint  index, node, relocating node, state: string numbers, one column each
//	n × uvarint  shard
//	n × byte     flags: flagPrimary, flagLoadKnown, flagCounters, flagDerived
//	n × varint   size in bytes
//	d × varint   for the d copies with flagDerived, Δ index time in ms; then Δ search time in ms
//	8 × u bytes  write load of the u = n - d other copies, float64 bits, most significant byte
//	             plane first; then their search load, likewise
//	m × varint   index time in ms of the m copies with flagCounters, then their search time in ms
//
// Every varint column is "paired": a value whose copy is of the same shard as the column's
// previous copy is stored as the difference from that copy's value.
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

// pairs writes or reads one paired varint column.
type pairs struct {
	prev    int64
	index   string
	shard   int
	started bool
}

// delta is what the column stores for v, the value of copy c.
func (p *pairs) delta(c *cluster.Copy, v int64) int64 {
	d := v
	if p.started && p.index == c.Index && p.shard == c.Shard {
		d = v - p.prev
	}
	p.prev, p.index, p.shard, p.started = v, c.Index, c.Shard, true
	return d
}

// value is the value of copy c whose column holds d.
func (p *pairs) value(c *cluster.Copy, d int64) int64 {
	v := d
	if p.started && p.index == c.Index && p.shard == c.Shard {
		v = p.prev + d
	}
	p.prev, p.index, p.shard, p.started = v, c.Index, c.Shard, true
	return v
}

// encodeColumns appends the column encoding of copies to dst. dt gives the interval each node's
// loads were derived over (absent or 0: unknown).
func encodeColumns(dst []byte, copies []cluster.Copy, ctrs copyCounters, dt map[string]float64) []byte {
	dst = append(dst, columnsVersion)
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
	n := len(copies)
	refs := make([]uint64, 4*n)
	for i := range copies {
		c := &copies[i]
		refs[i], refs[n+i], refs[2*n+i], refs[3*n+i] = ref(c.Index), ref(c.Node), ref(c.RelocatingNode), ref(c.State)
	}
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	for _, s := range table {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	var nodes []uint64
	for i, s := range table {
		if dt[s] > 0 {
			nodes = append(nodes, uint64(i))
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(nodes)))
	for _, i := range nodes {
		dst = binary.AppendUvarint(dst, i)
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(dt[table[i]]))
	}
	for _, r := range refs {
		dst = binary.AppendUvarint(dst, r)
	}
	for i := range copies {
		dst = binary.AppendUvarint(dst, uint64(copies[i].Shard))
	}
	type counted struct {
		c *cluster.Copy
		v cluster.CopyCounters
	}
	var withCtrs []counted
	var derived []*cluster.Copy
	var dw, dr []int64
	var raw []cluster.Copy
	for i := range copies {
		c := &copies[i]
		var f byte
		if c.Primary {
			f |= flagPrimary
		}
		if c.LoadKnown {
			f |= flagLoadKnown
		}
		if v, ok := ctrs(c); ok {
			f |= flagCounters
			withCtrs = append(withCtrs, counted{c, v})
		}
		w, wok := derivedMillis(c.WriteLoad, dt[c.Node])
		r, rok := derivedMillis(c.SearchLoad, dt[c.Node])
		if wok && rok {
			f |= flagDerived
			derived, dw, dr = append(derived, c), append(dw, w), append(dr, r)
		} else {
			raw = append(raw, *c)
		}
		dst = append(dst, f)
	}
	var size pairs
	for i := range copies {
		dst = binary.AppendVarint(dst, size.delta(&copies[i], copies[i].SizeBytes))
	}
	var pw, pr pairs
	for i, c := range derived {
		dst = binary.AppendVarint(dst, pw.delta(c, dw[i]))
	}
	for i, c := range derived {
		dst = binary.AppendVarint(dst, pr.delta(c, dr[i]))
	}
	dst = appendPlanes(dst, raw, func(c *cluster.Copy) float64 { return c.WriteLoad })
	dst = appendPlanes(dst, raw, func(c *cluster.Copy) float64 { return c.SearchLoad })
	var pi, ps pairs
	for _, w := range withCtrs {
		dst = binary.AppendVarint(dst, pi.delta(w.c, w.v.IndexTimeMillis))
	}
	for _, w := range withCtrs {
		dst = binary.AppendVarint(dst, ps.delta(w.c, w.v.SearchTimeMillis))
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

// decodeColumns reads a chunk written by encodeColumns, appending its copies to copies. Each
// copy's counters go to ctrs under cluster.CopyKey.
func decodeColumns(raw []byte, copies []cluster.Copy, ctrs map[string]cluster.CopyCounters) ([]cluster.Copy, error) {
	start := len(copies)
	out, err := readColumns(&columnReader{b: raw}, ctrs)
	if err != nil {
		return copies[:start], err
	}
	return append(copies, out...), nil
}

func readColumns(r *columnReader, ctrs map[string]cluster.CopyCounters) ([]cluster.Copy, error) {
	if v := r.bytes(1, "version"); r.err == nil && v[0] != columnsVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errColumns, v[0], columnsVersion)
	}
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
	nd := r.uvarint("interval count")
	if nd > uint64(len(r.b))/9 {
		r.fail("interval count")
	}
	dt := make([]float64, len(table))
	for range nd {
		i := r.uvarint("interval node")
		bits := r.bytes(8, "interval")
		if r.err != nil {
			break
		}
		if i >= uint64(len(table)) {
			r.fail("interval node")
			break
		}
		dt[i] = math.Float64frombits(binary.BigEndian.Uint64(bits))
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(table) == 0 || table[0] != "" {
		return nil, fmt.Errorf("%w: string 0 is not empty", errColumns)
	}
	out := make([]cluster.Copy, n)
	nodeRefs := make([]uint64, n)
	str := func(what string) (string, uint64) {
		i := r.uvarint(what)
		if i >= uint64(len(table)) {
			r.fail(what)
			return "", 0
		}
		return table[i], i
	}
	for i := range out {
		out[i].Index, _ = str("index")
	}
	for i := range out {
		out[i].Node, nodeRefs[i] = str("node")
	}
	for i := range out {
		out[i].RelocatingNode, _ = str("relocating node")
	}
	for i := range out {
		out[i].State, _ = str("state")
	}
	for i := range out {
		out[i].Shard = int(r.uvarint("shard"))
	}
	flags := r.bytes(n, "flags")
	var size pairs
	for i := range out {
		out[i].SizeBytes = size.value(&out[i], r.varint("size"))
	}
	if r.err != nil {
		return nil, r.err
	}
	var derived []int
	for i := range out {
		if flags[i]&flagDerived != 0 {
			derived = append(derived, i)
		}
	}
	for _, i := range derived {
		if dt[nodeRefs[i]] <= 0 {
			return nil, fmt.Errorf("%w: a derived load on node %q, which has no interval", errColumns, out[i].Node)
		}
	}
	var pw, pr pairs
	for _, i := range derived {
		out[i].WriteLoad = float64(pw.value(&out[i], r.varint("write Δms"))) / 1000 / dt[nodeRefs[i]]
	}
	for _, i := range derived {
		out[i].SearchLoad = float64(pr.value(&out[i], r.varint("search Δms"))) / 1000 / dt[nodeRefs[i]]
	}
	u := len(out) - len(derived)
	write := r.bytes(uint64(8*u), "write load")
	search := r.bytes(uint64(8*u), "search load")
	if r.err != nil {
		return nil, r.err
	}
	var counted []int
	k := 0
	for i := range out {
		out[i].Primary = flags[i]&flagPrimary != 0
		out[i].LoadKnown = flags[i]&flagLoadKnown != 0
		if flags[i]&flagDerived == 0 {
			out[i].WriteLoad = planeFloat(write, u, k)
			out[i].SearchLoad = planeFloat(search, u, k)
			k++
		}
		if flags[i]&flagCounters != 0 {
			counted = append(counted, i)
		}
	}
	idx := make([]int64, len(counted))
	var pi, ps pairs
	for j, i := range counted {
		idx[j] = pi.value(&out[i], r.varint("index time"))
	}
	for j, i := range counted {
		c := &out[i]
		v := cluster.CopyCounters{IndexTimeMillis: idx[j], SearchTimeMillis: ps.value(c, r.varint("search time"))}
		if r.err != nil {
			return nil, r.err
		}
		ctrs[cluster.CopyKey(c.Index, c.Shard, c.Node)] = v
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last column", errColumns, len(r.b))
	}
	return out, nil
}

func planeFloat(planes []byte, n, i int) float64 {
	var bits uint64
	for p := range 8 {
		bits |= uint64(planes[p*n+i]) << (56 - 8*p)
	}
	return math.Float64frombits(bits)
}
