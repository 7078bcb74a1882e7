package rest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/settings"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// catColumn is one _cat column: its name, aliases, whether it shows by default, and whether it is
// right-aligned (OpenSearch's "text-align:right" columns).
type catColumn struct {
	name    string
	aliases []string
	def     bool
	right   bool
}

// catTable is rows of cells; a nil cell is JSON null and blank in text.
type catTable struct {
	cols []catColumn
	rows [][]*string
}

func cell(s string) *string { return &s }

// catFormat holds the parameters every _cat call takes.
type catFormat struct {
	bytes string // b, kb, mb, gb, tb, pb or "" for human
}

func (f catFormat) size(b float64) string {
	mult := map[string]float64{"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50}
	if m, ok := mult[f.bytes]; ok {
		return strconv.FormatInt(int64(b/m), 10)
	}
	return settings.FormatBytes(b)
}

// formatMillis is TimeValue.toString: the largest unit with one decimal.
func formatMillis(ms float64) string {
	switch {
	case ms >= 86_400_000:
		return settings.TrimZero(strconv.FormatFloat(ms/86_400_000, 'f', 1, 64)) + "d"
	case ms >= 3_600_000:
		return settings.TrimZero(strconv.FormatFloat(ms/3_600_000, 'f', 1, 64)) + "h"
	case ms >= 60_000:
		return settings.TrimZero(strconv.FormatFloat(ms/60_000, 'f', 1, 64)) + "m"
	case ms >= 1000:
		return settings.TrimZero(strconv.FormatFloat(ms/1000, 'f', 1, 64)) + "s"
	}
	return strconv.FormatInt(int64(ms), 10) + "ms"
}

// render answers a _cat request: h picks columns (names, aliases, wildcards), s sorts, v adds a header
// line, format=json gives an array of objects, help lists the columns.
func (t *catTable) render(rq *wire.Request) (wire.Reply, *wire.APIError) {
	if rq.Flag("help") {
		var b strings.Builder
		for _, c := range t.cols {
			fmt.Fprintf(&b, "%s | %s |\n", c.name, strings.Join(c.aliases, ","))
		}
		return wire.Reply{Status: 200, Text: b.String(), IsText: true}, nil
	}
	type shown struct {
		idx     int
		display string
	}
	var cols []shown
	if h := rq.Param("h"); h != "" {
		for _, want := range strings.Split(h, ",") {
			want = strings.TrimSpace(want)
			for i, c := range t.cols {
				if cluster.SimpleMatch(want, c.name) || slices.Contains(c.aliases, want) {
					display := c.name
					if !strings.Contains(want, "*") {
						display = want
					}
					cols = append(cols, shown{i, display})
					if !strings.Contains(want, "*") {
						break
					}
				}
			}
		}
	} else {
		for i, c := range t.cols {
			if c.def {
				cols = append(cols, shown{i, c.name})
			}
		}
	}
	rows := slices.Clone(t.rows)
	if sortSpec := rq.Param("s"); sortSpec != "" {
		type key struct {
			idx  int
			desc bool
		}
		var keys []key
		for part := range strings.SplitSeq(sortSpec, ",") {
			name, dir, _ := strings.Cut(strings.TrimSpace(part), ":")
			i := slices.IndexFunc(t.cols, func(c catColumn) bool { return c.name == name || slices.Contains(c.aliases, name) })
			if i < 0 {
				return wire.Reply{}, wire.IllegalArgument(fmt.Sprintf("Unable to sort by unknown sort key `%s`", name))
			}
			keys = append(keys, key{i, dir == "desc"})
		}
		slices.SortStableFunc(rows, func(a, b []*string) int {
			for _, k := range keys {
				c := compareCells(a[k.idx], b[k.idx])
				if k.desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if rq.Param("format") == "json" {
		out := make([]any, 0, len(rows))
		for _, r := range rows {
			o := make(wire.Object, 0, len(cols))
			for _, c := range cols {
				var v any
				if r[c.idx] != nil {
					v = *r[c.idx]
				}
				o = append(o, wire.Field{c.display, v})
			}
			out = append(out, o)
		}
		return wire.JSONReply(out), nil
	}
	widths := make([]int, len(cols))
	if rq.Flag("v") {
		for i, c := range cols {
			widths[i] = utf8.RuneCountInString(c.display)
		}
	}
	for _, r := range rows {
		for i, c := range cols {
			if r[c.idx] != nil {
				widths[i] = max(widths[i], utf8.RuneCountInString(*r[c.idx]))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, v := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v))
			if t.cols[cols[i].idx].right {
				b.WriteString(pad + v)
			} else {
				b.WriteString(v)
				if i < len(cells)-1 {
					b.WriteString(pad)
				}
			}
			if i < len(cells)-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	if rq.Flag("v") {
		hdr := make([]string, len(cols))
		for i, c := range cols {
			hdr[i] = c.display
		}
		line(hdr)
	}
	for _, r := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			if r[c.idx] != nil {
				cells[i] = *r[c.idx]
			}
		}
		line(cells)
	}
	return wire.Reply{Status: 200, Text: b.String(), IsText: true}, nil
}

// compareCells orders numbers numerically and everything else as text; blanks sort first.
func compareCells(a, b *string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	fa, ea := strconv.ParseFloat(*a, 64)
	fb, eb := strconv.ParseFloat(*b, 64)
	if ea == nil && eb == nil {
		return cmp.Compare(fa, fb)
	}
	return strings.Compare(*a, *b)
}

// catIndices reads what _cat/shards[/{index}] and _cat/indices[/{index}] share: the indices the
// path names (all when none) and the format of byte sizes.
func (s *Server) catIndices(rq *wire.Request) ([]*model.Index, catFormat, *wire.APIError) {
	expr := ""
	if len(rq.Segs) == 3 {
		expr = rq.Segs[2]
	}
	indices, err := s.ResolveIndices(expr, false)
	return indices, catFormat{bytes: rq.Param("bytes")}, err
}

func (s *Server) handleCatShards(rq *wire.Request) (wire.Reply, *wire.APIError) {
	indices, f, err := s.catIndices(rq)
	if err != nil {
		return wire.Reply{}, err
	}
	lag := s.Lag()
	t := &catTable{cols: []catColumn{
		{name: "index", aliases: []string{"i", "idx"}, def: true},
		{name: "shard", aliases: []string{"s", "sh"}, def: true, right: true},
		{name: "prirep", aliases: []string{"p", "pr", "primaryOrReplica"}, def: true, right: true},
		{name: "state", aliases: []string{"st"}, def: true, right: true},
		{name: "docs", aliases: []string{"d", "dc"}, def: true, right: true},
		{name: "store", aliases: []string{"sto"}, def: true, right: true},
		{name: "ip", def: true},
		{name: "id"},
		{name: "node", aliases: []string{"n"}, def: true},
		{name: "unassigned.reason", aliases: []string{"ur"}},
		{name: "unassigned.at", aliases: []string{"ua"}},
		{name: "indexing.index_total", aliases: []string{"iito", "indexingIndexTotal"}, right: true},
		{name: "indexing.index_time", aliases: []string{"iiti", "indexingIndexTime"}, right: true},
		{name: "indexing.index_current", aliases: []string{"iic", "indexingIndexCurrent"}, right: true},
		{name: "search.query_total", aliases: []string{"sqto", "searchQueryTotal"}, right: true},
		{name: "search.query_time", aliases: []string{"sqti", "searchQueryTime"}, right: true},
		{name: "search.fetch_total", aliases: []string{"sfto", "searchFetchTotal"}, right: true},
		{name: "search.fetch_time", aliases: []string{"sfti", "searchFetchTime"}, right: true},
		{name: "seq_no.max", aliases: []string{"sqm", "maxSeqNo"}, right: true},
	}}
	for _, ix := range indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				pr := "r"
				if c.Primary {
					pr = "p"
				}
				row := []*string{cell(ix.Name), cell(strconv.Itoa(sh.Num)), cell(pr), cell(c.State.String())}
				if c.Node == nil {
					row = append(row, nil, nil, nil, nil, nil, cell(c.UnassignedReason), cell(c.UnassignedAt.UTC().Format("2006-01-02T15:04:05.000Z")),
						nil, nil, nil, nil, nil, nil, nil, nil)
					t.rows = append(t.rows, row)
					continue
				}
				nodeText := c.Node.Name
				if c.Target != nil {
					nodeText = fmt.Sprintf("%s -> %s %s %s", c.Node.Name, c.Target.IP(), c.Target.ID, c.Target.Name)
				}
				st := copyStats(c, lag)
				row = append(row,
					cell(strconv.FormatInt(whole(c.Docs), 10)), cell(f.size(float64(ix.ShardBytes))), cell(c.Node.IP()), cell(c.Node.ID[:4]),
					cell(nodeText), nil, nil,
					cell(strconv.FormatInt(whole(st.indexTotal), 10)), cell(formatMillis(st.indexTime)),
					cell(strconv.FormatInt(int64(math.Round(c.IndexCurrent)), 10)),
					cell(strconv.FormatInt(whole(st.queryTotal), 10)), cell(formatMillis(st.queryTime)),
					cell(strconv.FormatInt(whole(st.fetchTotal), 10)), cell(formatMillis(st.ft)),
					cell(strconv.FormatInt(whole(sh.SeqNo)-1, 10)),
				)
				t.rows = append(t.rows, row)
			}
		}
	}
	return t.render(rq)
}

func (s *Server) handleCatNodes(rq *wire.Request) (wire.Reply, *wire.APIError) {
	f := catFormat{bytes: rq.Param("bytes")}
	t := &catTable{cols: []catColumn{
		{name: "id", aliases: []string{"nodeId"}},
		{name: "ip", aliases: []string{"i"}, def: true},
		{name: "port", aliases: []string{"po"}},
		{name: "http_address", aliases: []string{"http"}},
		{name: "version", aliases: []string{"v"}},
		{name: "heap.current", aliases: []string{"hc", "heapCurrent"}, right: true},
		{name: "heap.percent", aliases: []string{"hp", "heapPercent"}, def: true, right: true},
		{name: "heap.max", aliases: []string{"hm", "heapMax"}, right: true},
		{name: "ram.percent", aliases: []string{"rp", "ramPercent"}, def: true, right: true},
		{name: "cpu", def: true, right: true},
		{name: "load_1m", aliases: []string{"l"}, def: true, right: true},
		{name: "load_5m", aliases: []string{"l"}, def: true, right: true},
		{name: "load_15m", aliases: []string{"l"}, def: true, right: true},
		{name: "disk.total", aliases: []string{"dt", "diskTotal"}, right: true},
		{name: "disk.used", aliases: []string{"du", "diskUsed"}, right: true},
		{name: "disk.avail", aliases: []string{"d", "disk", "diskAvail"}, right: true},
		{name: "disk.used_percent", aliases: []string{"dup", "diskUsedPercent"}, right: true},
		{name: "node.role", aliases: []string{"r", "role", "nodeRole"}, def: true},
		{name: "node.roles", aliases: []string{"rs", "roles"}, def: true},
		{name: "cluster_manager", aliases: []string{"cm", "m"}, def: true},
		{name: "master"},
		{name: "name", aliases: []string{"n"}, def: true},
		{name: "indexing.index_total", aliases: []string{"iito", "indexingIndexTotal"}, right: true},
		{name: "search.query_total", aliases: []string{"sqto", "searchQueryTotal"}, right: true},
	}}
	m := s.ClusterManager()
	lag := s.Lag()
	indexed, queried := make([]float64, len(s.Nodes)), make([]float64, len(s.Nodes))
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.Node != nil {
					indexed[c.Node.Ord] += model.Shown(c.IndexTotal, c.Tick.IndexTotal, lag)
					queried[c.Node.Ord] += model.Shown(c.QueryTotal, c.Tick.QueryTotal, lag)
				}
			}
		}
	}
	for _, n := range s.PresentNodes() {
		id := n.ID
		if !rq.Flag("full_id") {
			id = id[:4]
		}
		heap := n.HeapUsed()
		busy := n.Write.LastActive + n.Search.LastActive
		cpu := int(math.Min(100, math.Round(100*busy/float64(n.Write.Threads))))
		load := strconv.FormatFloat(busy, 'f', 2, 64)
		star := "-"
		if n == m {
			star = "*"
		}
		idx, qry := indexed[n.Ord], queried[n.Ord]
		free := n.DiskBytes - n.DiskUsed
		t.rows = append(t.rows, []*string{
			cell(id), cell(n.IP()), cell(strconv.Itoa(n.Port)), cell(fmt.Sprintf("127.0.0.1:%d", 9200+n.Ord)), cell(s.OsVersion()),
			cell(f.size(float64(heap))), cell(strconv.FormatInt(100*heap/n.HeapBytes, 10)), cell(f.size(float64(n.HeapBytes))),
			cell(strconv.FormatInt(50+50*heap/n.HeapBytes, 10)), cell(strconv.Itoa(cpu)), cell(load), cell(load), cell(load),
			cell(f.size(float64(n.DiskBytes))), cell(f.size(float64(n.DiskUsed))), cell(f.size(float64(free))),
			cell(strconv.FormatFloat(100*float64(n.DiskUsed)/float64(n.DiskBytes), 'f', 2, 64)),
			cell("di"), cell("data,ingest"), cell(star), cell(star), cell(n.Name),
			cell(strconv.FormatInt(whole(idx), 10)), cell(strconv.FormatInt(whole(qry), 10)),
		})
	}
	return t.render(rq)
}

func (s *Server) handleCatIndices(rq *wire.Request) (wire.Reply, *wire.APIError) {
	indices, f, err := s.catIndices(rq)
	if err != nil {
		return wire.Reply{}, err
	}
	lag := s.Lag()
	t := &catTable{cols: []catColumn{
		{name: "health", aliases: []string{"h"}, def: true},
		{name: "status", aliases: []string{"s"}, def: true},
		{name: "index", aliases: []string{"i", "idx"}, def: true},
		{name: "uuid", aliases: []string{"id"}, def: true},
		{name: "pri", aliases: []string{"p", "shards.primary", "shardsPrimary"}, def: true, right: true},
		{name: "rep", aliases: []string{"r", "shards.replica", "shardsReplica"}, def: true, right: true},
		{name: "docs.count", aliases: []string{"dc", "docsCount"}, def: true, right: true},
		{name: "docs.deleted", aliases: []string{"dd", "docsDeleted"}, def: true, right: true},
		{name: "creation.date", aliases: []string{"cd"}, right: true},
		{name: "creation.date.string", aliases: []string{"cds"}, right: true},
		{name: "store.size", aliases: []string{"ss", "storeSize"}, def: true, right: true},
		{name: "pri.store.size", def: true, right: true},
		{name: "indexing.index_total", aliases: []string{"iito", "indexingIndexTotal"}, right: true},
		{name: "search.query_total", aliases: []string{"sqto", "searchQueryTotal"}, right: true},
	}}
	wantHealth := rq.Param("health")
	for _, ix := range indices {
		h, _, _, _ := model.IndexHealth(ix)
		if wantHealth != "" && h != wantHealth {
			continue
		}
		var p, all statsAgg
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.Node == nil {
					continue
				}
				all.add(c, lag)
				if c.Primary {
					p.add(c, lag)
				}
			}
		}
		t.rows = append(t.rows, []*string{
			cell(h), cell("open"), cell(ix.Name), cell(ix.UUID), cell(strconv.Itoa(len(ix.Shards))), cell(strconv.Itoa(ix.Replicas)),
			cell(strconv.FormatInt(whole(p.docs), 10)), cell("0"),
			cell(strconv.FormatInt(ix.Created.UnixMilli(), 10)), cell(ix.Created.UTC().Format("2006-01-02T15:04:05.000Z")),
			cell(f.size(all.store)), cell(f.size(p.store)),
			cell(strconv.FormatInt(whole(all.indexTotal), 10)), cell(strconv.FormatInt(whole(all.queryTotal), 10)),
		})
	}
	return t.render(rq)
}
