package rest

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/settings"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// indexStatMetrics are the metrics of _stats/{metric}. The model produces docs, store, indexing and
// search; the others are accepted and left out, as if the cluster had none of that activity to report.
var indexStatMetrics = []string{"docs", "store", "indexing", "get", "search", "merge", "refresh", "flush", "warmer",
	"query_cache", "fielddata", "completion", "segments", "translog", "request_cache", "recovery", "suggest"}

// statsAgg sums copy counters for one stats object.
type statsAgg struct {
	docs, store                                     float64
	indexTotal, indexTime, indexCur                 float64
	queryTotal, queryTime, queryCur, fetchTotal, ft float64
}

// copyStats is copy c's counters as a stats object of their own, lag of the last tick's work not
// yet shown (live.go).
func copyStats(c *model.ShardCopy, lag float64) statsAgg {
	t := &c.Tick
	return statsAgg{
		docs: c.Docs, store: float64(c.Sh.Idx.ShardBytes),
		indexTotal: model.Shown(c.IndexTotal, t.IndexTotal, lag), indexTime: model.Shown(c.IndexTimeMS, t.IndexTimeMS, lag), indexCur: c.IndexCurrent,
		queryTotal: model.Shown(c.QueryTotal, t.QueryTotal, lag), queryTime: model.Shown(c.QueryTimeMS, t.QueryTimeMS, lag), queryCur: c.QueryCurrent,
		fetchTotal: model.Shown(c.FetchTotal, t.FetchTotal, lag), ft: model.Shown(c.FetchTimeMS, t.FetchTimeMS, lag),
	}
}

// add sums copy c's counters in.
func (a *statsAgg) add(c *model.ShardCopy, lag float64) {
	one := copyStats(c, lag)
	a.merge(&one)
}

func (a *statsAgg) merge(b *statsAgg) {
	a.docs += b.docs
	a.store += b.store
	a.indexTotal += b.indexTotal
	a.indexTime += b.indexTime
	a.indexCur += b.indexCur
	a.queryTotal += b.queryTotal
	a.queryTime += b.queryTime
	a.queryCur += b.queryCur
	a.fetchTotal += b.fetchTotal
	a.ft += b.ft
}

// whole truncates a counter to the integer OpenSearch would report.
func whole(f float64) int64 { return int64(math.Floor(f)) }

// render writes the stats sections that metrics selects (nil: all modelled ones).
func (a *statsAgg) render(metrics map[string]bool) wire.Object {
	return renderStats(metrics, statsVals{
		docs: whole(a.docs), store: whole(a.store),
		indexTotal: whole(a.indexTotal), indexTime: whole(a.indexTime), indexCur: int64(math.Round(a.indexCur)),
		queryTotal: whole(a.queryTotal), queryTime: whole(a.queryTime), queryCur: int64(math.Round(a.queryCur)),
		fetchTotal: whole(a.fetchTotal), fetchTime: whole(a.ft),
	})
}

// indexSums sums the counters of index ix's assigned copies: the primaries' and all copies'.
func indexSums(ix *model.Index, lag float64) (p, t statsAgg) {
	for _, sh := range ix.Shards {
		for _, c := range sh.Copies {
			if c.Node == nil {
				continue
			}
			t.add(c, lag)
			if c.Primary {
				p.add(c, lag)
			}
		}
	}
	return p, t
}

// lazySums renders the primaries' (primaries) or all copies' sums that sums returns, summing them
// only if the answer's filter_path reaches them: a client reading the shards of 4,000 indices
// leaves their sums out (summing them was 0.4 s of the production benchmark's 16.4 s of REST
// answers; _nodes/stats' per-node sums, which the client reads, were another 0.9 s).
func lazySums(sums func() (statsAgg, statsAgg), metrics map[string]bool, primaries bool) wire.LazyObject {
	return func() wire.Object {
		p, t := sums()
		if primaries {
			return p.render(metrics)
		}
		return t.render(metrics)
	}
}

// statsVals are the figures of a stats object as written: int64s, or the Slots of a Shape.
type statsVals struct {
	docs, store, indexTotal, indexTime, indexCur, queryTotal, queryTime, queryCur, fetchTotal, fetchTime any
}

// renderStats writes the stats sections that metrics selects (nil: all modelled ones).
func renderStats(metrics map[string]bool, v statsVals) wire.Object {
	o := make(wire.Object, 0, 4)
	want := func(m string) bool { return metrics == nil || metrics[m] }
	if want("docs") {
		o = append(o, wire.Field{"docs", wire.Object{{"count", v.docs}, {"deleted", 0}}})
	}
	if want("store") {
		o = append(o, wire.Field{"store", wire.Object{{"size_in_bytes", v.store}, {"reserved_in_bytes", 0}}})
	}
	if want("indexing") {
		o = append(o, wire.Field{"indexing", wire.Object{
			{"index_total", v.indexTotal}, {"index_time_in_millis", v.indexTime}, {"index_current", v.indexCur},
			{"index_failed", 0}, {"delete_total", 0}, {"delete_time_in_millis", 0}, {"delete_current", 0},
			{"noop_update_total", 0}, {"is_throttled", false}, {"throttle_time_in_millis", 0},
		}})
	}
	if want("search") {
		o = append(o, wire.Field{"search", wire.Object{
			{"open_contexts", 0}, {"query_total", v.queryTotal}, {"query_time_in_millis", v.queryTime},
			{"query_current", v.queryCur}, {"fetch_total", v.fetchTotal}, {"fetch_time_in_millis", v.fetchTime},
			{"fetch_current", 0}, {"scroll_total", 0}, {"scroll_time_in_millis", 0}, {"scroll_current", 0},
			{"suggest_total", 0}, {"suggest_time_in_millis", 0}, {"suggest_current", 0},
		}})
	}
	return o
}

// parseStatMetrics reads a comma list of index stats metrics; nil means all.
func parseStatMetrics(rq *wire.Request, list string) (map[string]bool, *wire.APIError) {
	return parseMetrics(rq, list, indexStatMetrics)
}

// handleStats is GET _stats[/{metric}] and GET {index}/_stats[/{metric}], level cluster|indices|shards.
func (s *Server) handleStats(rq *wire.Request) (wire.Reply, *wire.APIError) {
	lag := s.Lag()
	expr, metricSeg := "", ""
	if rq.Segs[0] == "_stats" {
		if len(rq.Segs) == 2 {
			metricSeg = rq.Segs[1]
		}
	} else {
		expr = rq.Segs[0]
		if len(rq.Segs) == 3 {
			metricSeg = rq.Segs[2]
		}
	}
	metrics, err := parseStatMetrics(rq, metricSeg)
	if err != nil {
		return wire.Reply{}, err
	}
	level := rq.Param("level")
	switch level {
	case "", "indices", "cluster", "shards":
	default:
		return wire.Reply{}, wire.IllegalArgument(fmt.Sprintf("level parameter must be one of [cluster] or [indices] or [shards] but was [%s]", level))
	}
	indices, err := s.ResolveIndices(expr, rq.Flag("ignore_unavailable"))
	if err != nil {
		return wire.Reply{}, err
	}
	var shape *wire.Shape
	if level == "shards" {
		shape = shardStatsShape(metrics)
	}
	total, ok := 0, 0
	perIndex := make(wire.Object, 0, len(indices))
	for _, ix := range indices {
		var shards wire.Object
		if level == "shards" {
			shards = make(wire.Object, 0, len(ix.Shards))
		}
		for _, sh := range ix.Shards {
			var entries []any
			if level == "shards" {
				entries = make([]any, 0, len(sh.Copies))
			}
			for _, c := range sh.Copies {
				total++
				if c.Node == nil {
					continue
				}
				ok++
				if level == "shards" {
					entries = append(entries, shardStatsEntry(shape, c, lag))
				}
			}
			if level == "shards" {
				shards = append(shards, wire.Field{strconv.Itoa(sh.Num), entries})
			}
		}
		if level == "cluster" {
			continue
		}
		sums := sync.OnceValues(func() (statsAgg, statsAgg) { return indexSums(ix, lag) })
		io := wire.Object{{"uuid", ix.UUID}, {"primaries", lazySums(sums, metrics, true)}, {"total", lazySums(sums, metrics, false)}}
		if level == "shards" {
			io = append(io, wire.Field{"shards", shards})
		}
		perIndex = append(perIndex, wire.Field{ix.Name, io})
	}
	all := sync.OnceValues(func() (allP, allT statsAgg) {
		for _, ix := range indices {
			p, t := indexSums(ix, lag)
			allP.merge(&p)
			allT.merge(&t)
		}
		return allP, allT
	})
	o := wire.Object{
		{"_shards", wire.Object{{"total", total}, {"successful", ok}, {"failed", 0}}},
		{"_all", wire.Object{{"primaries", lazySums(all, metrics, true)}, {"total", lazySums(all, metrics, false)}}},
	}
	if level != "cluster" {
		o = append(o, wire.Field{"indices", perIndex})
	}
	return wire.JSONReply(o), nil
}

// shardStatsShape is a copy's entry in _stats?level=shards with the sections metrics selects.
func shardStatsShape(metrics map[string]bool) *wire.Shape {
	e := wire.Object{{"routing", wire.Object{
		{"state", wire.Slot(0)}, {"primary", wire.Slot(1)}, {"node", wire.Slot(2)}, {"relocating_node", wire.Slot(3)},
	}}}
	e = append(e, renderStats(metrics, statsVals{
		docs: wire.Slot(4), store: wire.Slot(5),
		indexTotal: wire.Slot(6), indexTime: wire.Slot(7), indexCur: wire.Slot(8),
		queryTotal: wire.Slot(9), queryTime: wire.Slot(10), queryCur: wire.Slot(11),
		fetchTotal: wire.Slot(12), fetchTime: wire.Slot(13),
	})...)
	return wire.NewShape(15, append(e, wire.Field{"seq_no", wire.Object{
		{"max_seq_no", wire.Slot(14)}, {"local_checkpoint", wire.Slot(14)}, {"global_checkpoint", wire.Slot(14)},
	}}))
}

// shardStatsEntry is one copy in _stats?level=shards, of shape (shardStatsShape), filled when
// written. It reads the copy when the answer is written, which happens under the same read lock
// as the handler.
func shardStatsEntry(shape *wire.Shape, c *model.ShardCopy, lag float64) wire.Shaped {
	return wire.Shaped{Shape: shape, Fill: func(v []wire.Scalar) {
		a := copyStats(c, lag)
		v[0], v[1], v[2] = wire.Str(c.State.String()), wire.Bool(c.Primary), wire.Str(c.Node.ID)
		if c.Target != nil {
			v[3] = wire.Str(c.Target.ID)
		}
		v[4], v[5] = wire.Int(whole(a.docs)), wire.Int(whole(a.store))
		v[6], v[7], v[8] = wire.Int(whole(a.indexTotal)), wire.Int(whole(a.indexTime)), wire.Int(int64(math.Round(a.indexCur)))
		v[9], v[10], v[11] = wire.Int(whole(a.queryTotal)), wire.Int(whole(a.queryTime)), wire.Int(int64(math.Round(a.queryCur)))
		v[12], v[13] = wire.Int(whole(a.fetchTotal)), wire.Int(whole(a.ft))
		v[14] = wire.Int(whole(c.Sh.SeqNo) - 1)
	}}
}

// indexSettings are an index's settings as flat keys, fixed ones first.
func (s *Server) indexSettings(ix *model.Index) map[string]string {
	m := map[string]string{
		"index.creation_date":      strconv.FormatInt(ix.Created.UnixMilli(), 10),
		"index.number_of_shards":   strconv.Itoa(len(ix.Shards)),
		"index.number_of_replicas": strconv.Itoa(ix.Replicas),
		"index.uuid":               ix.UUID,
		"index.version.created":    model.VersionIDCreated,
		"index.provided_name":      ix.Name,
		// OpenSearch 2.x writes the replication type into every index's settings at creation.
		"index.replication.type": cluster.ReplicationDocument,
	}
	if ix.Segment() {
		m["index.replication.type"] = cluster.ReplicationSegment
	}
	maps.Copy(m, ix.Settings)
	return m
}

// handleGetIndexSettings is GET _settings, {index}/_settings and {index}/_settings/{name}.
func (s *Server) handleGetIndexSettings(rq *wire.Request) (wire.Reply, *wire.APIError) {
	expr, names := "", ""
	if rq.Segs[0] != "_settings" {
		expr = rq.Segs[0]
		if len(rq.Segs) == 3 {
			names = rq.Segs[2]
		}
	}
	indices, err := s.ResolveIndices(expr, rq.Flag("ignore_unavailable"))
	if err != nil {
		return wire.Reply{}, err
	}
	o := make(wire.Object, 0, len(indices))
	for _, ix := range indices {
		set := s.indexSettings(ix)
		if names != "" {
			for k := range set {
				keep := false
				for p := range strings.SplitSeq(names, ",") {
					if cluster.SimpleMatch(p, k) {
						keep = true
					}
				}
				if !keep {
					delete(set, k)
				}
			}
			if len(set) == 0 {
				continue
			}
		}
		o = append(o, wire.Field{ix.Name, wire.Object{{"settings", settings.RenderSettings(set, rq.Flag("flat_settings"))}}})
	}
	return wire.JSONReply(o), nil
}

// handleGetIndex is GET {index}: aliases, mappings and settings.
func (s *Server) handleGetIndex(rq *wire.Request) (wire.Reply, *wire.APIError) {
	indices, err := s.ResolveIndices(rq.Segs[0], rq.Flag("ignore_unavailable"))
	if err != nil {
		return wire.Reply{}, err
	}
	o := make(wire.Object, 0, len(indices))
	for _, ix := range indices {
		o = append(o, wire.Field{ix.Name, wire.Object{
			{"aliases", wire.Object{}}, {"mappings", wire.Object{}}, {"settings", settings.RenderSettings(s.indexSettings(ix), rq.Flag("flat_settings"))},
		}})
	}
	return wire.JSONReply(o), nil
}

// handlePutIndexSettings is PUT {index}/_settings: replicas and allocation filters take effect at once,
// as OpenSearch's reroute after a settings change does (new replicas start initializing, copies on
// newly excluded nodes start relocating).
func (s *Server) handlePutIndexSettings(rq *wire.Request) (wire.Reply, *wire.APIError) {
	expr := ""
	if rq.Segs[0] != "_settings" {
		expr = rq.Segs[0]
	}
	indices, err := s.ResolveIndices(expr, rq.Flag("ignore_unavailable"))
	if err != nil {
		return wire.Reply{}, err
	}
	body, err := wire.DecodeBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	updates, e := settings.IndexSettingUpdates(body)
	if e != nil {
		return wire.Reply{}, wire.IllegalArgument(e.Error())
	}
	if len(updates) == 0 {
		return wire.Reply{}, wire.NewError(400, "action_request_validation_exception", "Validation Failed: 1: no settings to update;", nil)
	}
	if e := settings.CheckIndexSettingUpdates(updates); e != nil {
		return wire.Reply{}, wire.IllegalArgument(e.Msg)
	}
	s.ApplyIndexSettings(indices, updates, false)
	return wire.JSONReply(wire.Object{{"acknowledged", true}}), nil
}
