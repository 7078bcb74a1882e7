package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
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
func copyStats(c *shardCopy, lag float64) statsAgg {
	t := &c.tick
	return statsAgg{
		docs: c.docs, store: float64(c.sh.idx.shardBytes),
		indexTotal: shown(c.indexTotal, t.indexTotal, lag), indexTime: shown(c.indexTimeMS, t.indexTimeMS, lag), indexCur: c.indexCurrent,
		queryTotal: shown(c.queryTotal, t.queryTotal, lag), queryTime: shown(c.queryTimeMS, t.queryTimeMS, lag), queryCur: c.queryCurrent,
		fetchTotal: shown(c.fetchTotal, t.fetchTotal, lag), ft: shown(c.fetchTimeMS, t.fetchTimeMS, lag),
	}
}

// add sums copy c's counters in.
func (a *statsAgg) add(c *shardCopy, lag float64) {
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
func (a *statsAgg) render(metrics map[string]bool) object {
	o := make(object, 0, 4)
	want := func(m string) bool { return metrics == nil || metrics[m] }
	if want("docs") {
		o = append(o, field{"docs", object{{"count", whole(a.docs)}, {"deleted", 0}}})
	}
	if want("store") {
		o = append(o, field{"store", object{{"size_in_bytes", whole(a.store)}, {"reserved_in_bytes", 0}}})
	}
	if want("indexing") {
		o = append(o, field{"indexing", indexingStats(a.indexTotal, a.indexTime, a.indexCur)})
	}
	if want("search") {
		o = append(o, field{"search", searchStats(a.queryTotal, a.queryTime, a.queryCur, a.fetchTotal, a.ft)})
	}
	return o
}

func indexingStats(total, timeMS, current float64) object {
	return object{
		{"index_total", whole(total)}, {"index_time_in_millis", whole(timeMS)}, {"index_current", int64(math.Round(current))},
		{"index_failed", 0}, {"delete_total", 0}, {"delete_time_in_millis", 0}, {"delete_current", 0},
		{"noop_update_total", 0}, {"is_throttled", false}, {"throttle_time_in_millis", 0},
	}
}

func searchStats(queryTotal, queryMS, queryCur, fetchTotal, fetchMS float64) object {
	return object{
		{"open_contexts", 0}, {"query_total", whole(queryTotal)}, {"query_time_in_millis", whole(queryMS)},
		{"query_current", int64(math.Round(queryCur))}, {"fetch_total", whole(fetchTotal)}, {"fetch_time_in_millis", whole(fetchMS)},
		{"fetch_current", 0}, {"scroll_total", 0}, {"scroll_time_in_millis", 0}, {"scroll_current", 0},
		{"suggest_total", 0}, {"suggest_time_in_millis", 0}, {"suggest_current", 0},
	}
}

// parseStatMetrics reads a comma list of index stats metrics; nil means all.
func parseStatMetrics(rq *request, list string) (map[string]bool, *apiError) {
	return parseMetrics(rq, list, indexStatMetrics)
}

// handleStats is GET _stats[/{metric}] and GET {index}/_stats[/{metric}], level cluster|indices|shards.
func (s *Sim) handleStats(rq *request) (reply, *apiError) {
	lag := s.lag()
	expr, metricSeg := "", ""
	if rq.segs[0] == "_stats" {
		if len(rq.segs) == 2 {
			metricSeg = rq.segs[1]
		}
	} else {
		expr = rq.segs[0]
		if len(rq.segs) == 3 {
			metricSeg = rq.segs[2]
		}
	}
	metrics, err := parseStatMetrics(rq, metricSeg)
	if err != nil {
		return reply{}, err
	}
	level := rq.param("level")
	switch level {
	case "", "indices", "cluster", "shards":
	default:
		return reply{}, illegalArgument(fmt.Sprintf("level parameter must be one of [cluster] or [indices] or [shards] but was [%s]", level))
	}
	indices, err := s.resolveIndices(expr, rq.flag("ignore_unavailable"))
	if err != nil {
		return reply{}, err
	}
	var allP, allT statsAgg
	total, ok := 0, 0
	perIndex := make(object, 0, len(indices))
	for _, ix := range indices {
		var p, t statsAgg
		var shards object
		if level == "shards" {
			shards = make(object, 0, len(ix.shards))
		}
		for _, sh := range ix.shards {
			var entries []any
			for _, c := range sh.copies {
				total++
				if c.node == nil {
					continue
				}
				ok++
				t.add(c, lag)
				if c.primary {
					p.add(c, lag)
				}
				if level == "shards" {
					entries = append(entries, shardStatsEntry(c, metrics, lag))
				}
			}
			if level == "shards" {
				shards = append(shards, field{strconv.Itoa(sh.num), append([]any{}, entries...)})
			}
		}
		allP.merge(&p)
		allT.merge(&t)
		if level == "cluster" {
			continue
		}
		io := object{{"uuid", ix.uuid}, {"primaries", p.render(metrics)}, {"total", t.render(metrics)}}
		if level == "shards" {
			io = append(io, field{"shards", shards})
		}
		perIndex = append(perIndex, field{ix.name, io})
	}
	o := object{
		{"_shards", object{{"total", total}, {"successful", ok}, {"failed", 0}}},
		{"_all", object{{"primaries", allP.render(metrics)}, {"total", allT.render(metrics)}}},
	}
	if level != "cluster" {
		o = append(o, field{"indices", perIndex})
	}
	return jsonReply(o), nil
}

// shardStatsEntry is one copy in _stats?level=shards, built when written. It reads the copy when the
// answer is written, which happens under the same read lock as the handler.
func shardStatsEntry(c *shardCopy, metrics map[string]bool, lag float64) lazyObject {
	return func() object {
		one := copyStats(c, lag)
		var relocating any
		if c.target != nil {
			relocating = c.target.id
		}
		e := object{{"routing", object{
			{"state", c.state.String()}, {"primary", c.primary}, {"node", c.node.id}, {"relocating_node", relocating},
		}}}
		e = append(e, one.render(metrics)...)
		seq := whole(c.sh.seqNo) - 1
		return append(e, field{"seq_no", object{{"max_seq_no", seq}, {"local_checkpoint", seq}, {"global_checkpoint", seq}}})
	}
}

// indexSettings are an index's settings as flat keys, fixed ones first.
func (s *Sim) indexSettings(ix *index) map[string]string {
	m := map[string]string{
		"index.creation_date":      strconv.FormatInt(ix.created.UnixMilli(), 10),
		"index.number_of_shards":   strconv.Itoa(len(ix.shards)),
		"index.number_of_replicas": strconv.Itoa(ix.replicas),
		"index.uuid":               ix.uuid,
		"index.version.created":    versionIDCreated,
		"index.provided_name":      ix.name,
	}
	maps.Copy(m, ix.settings)
	return m
}

// handleGetIndexSettings is GET _settings, {index}/_settings and {index}/_settings/{name}.
func (s *Sim) handleGetIndexSettings(rq *request) (reply, *apiError) {
	expr, names := "", ""
	if rq.segs[0] != "_settings" {
		expr = rq.segs[0]
		if len(rq.segs) == 3 {
			names = rq.segs[2]
		}
	}
	indices, err := s.resolveIndices(expr, rq.flag("ignore_unavailable"))
	if err != nil {
		return reply{}, err
	}
	o := make(object, 0, len(indices))
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
		o = append(o, field{ix.name, object{{"settings", renderSettings(set, rq.flag("flat_settings"))}}})
	}
	return jsonReply(o), nil
}

// handleGetIndex is GET {index}: aliases, mappings and settings.
func (s *Sim) handleGetIndex(rq *request) (reply, *apiError) {
	indices, err := s.resolveIndices(rq.segs[0], rq.flag("ignore_unavailable"))
	if err != nil {
		return reply{}, err
	}
	o := make(object, 0, len(indices))
	for _, ix := range indices {
		o = append(o, field{ix.name, object{
			{"aliases", object{}}, {"mappings", object{}}, {"settings", renderSettings(s.indexSettings(ix), rq.flag("flat_settings"))},
		}})
	}
	return jsonReply(o), nil
}

// indexSettingChecks are the dynamic index settings PUT {index}/_settings accepts.
var indexSettingChecks = map[string]settingCheck{
	"index.number_of_replicas":                       intAtLeast(0),
	"index.routing.allocation.total_shards_per_node": intAtLeast(-1),
	"index.routing.allocation.enable":                oneOf("all", "primaries", "new_primaries", "none"),
	"index.routing.rebalance.enable":                 oneOf("all", "primaries", "replicas", "none"),
	"index.unassigned.node_left.delayed_timeout":     timeValueCheck,
	"index.refresh_interval":                         nil,
	"index.auto_expand_replicas":                     nil,
	"index.blocks.read_only":                         boolCheck,
	"index.blocks.read_only_allow_delete":            boolCheck,
	"index.blocks.write":                             boolCheck,
	"index.blocks.read":                              boolCheck,
	"index.blocks.metadata":                          boolCheck,
	"index.max_result_window":                        intAtLeast(1),
	"index.priority":                                 intAtLeast(0),
}

// finalIndexSettings may not change after creation.
var finalIndexSettings = []string{"index.number_of_shards", "index.uuid", "index.creation_date", "index.version.created", "index.provided_name"}

func isIndexFilterKey(k string) bool {
	for _, kind := range []string{"require.", "include.", "exclude."} {
		if rest, ok := strings.CutPrefix(k, "index.routing.allocation."+kind); ok && rest != "" {
			return true
		}
	}
	return false
}

// handlePutIndexSettings is PUT {index}/_settings: replicas and allocation filters take effect at once,
// as OpenSearch's reroute after a settings change does (new replicas start initializing, copies on
// newly excluded nodes start relocating).
func (s *Sim) handlePutIndexSettings(rq *request) (reply, *apiError) {
	expr := ""
	if rq.segs[0] != "_settings" {
		expr = rq.segs[0]
	}
	indices, err := s.resolveIndices(expr, rq.flag("ignore_unavailable"))
	if err != nil {
		return reply{}, err
	}
	body, err := decodeBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	updates, e := indexSettingUpdates(body)
	if e != nil {
		return reply{}, illegalArgument(e.Error())
	}
	if len(updates) == 0 {
		return reply{}, newError(400, "action_request_validation_exception", "Validation Failed: 1: no settings to update;", nil)
	}
	if e := checkIndexSettingUpdates(updates); e != nil {
		return reply{}, illegalArgument(e.msg)
	}
	s.applyIndexSettings(indices, updates)
	return jsonReply(object{{"acknowledged", true}}), nil
}

// setReplicas changes number_of_replicas: new copies wait unassigned for the allocator; removed ones go
// at once, unassigned first, then initializing, then started, never the primary.
func (s *Sim) setReplicas(ix *index, want int) {
	if want == ix.replicas {
		return
	}
	s.res.ReplicaChanges++
	for _, sh := range ix.shards {
		for len(sh.copies) < want+1 {
			sh.copies = append(sh.copies, &shardCopy{sh: sh, unassignedReason: "REPLICA_ADDED", unassignedAt: s.now()})
		}
		for len(sh.copies) > want+1 {
			victim := -1
			for _, st := range []shardState{stateUnassigned, stateInitializing, stateStarted, stateRelocating} {
				for i := len(sh.copies) - 1; i >= 0 && victim < 0; i-- {
					if c := sh.copies[i]; !c.primary && c.state == st {
						victim = i
					}
				}
			}
			if c := sh.copies[victim]; c.rec != nil {
				s.recoveries = slices.DeleteFunc(s.recoveries, func(x *recovery) bool { return x == c.rec })
			}
			sh.copies = slices.Delete(sh.copies, victim, victim+1)
		}
	}
	ix.replicas = want
	s.changed()
}
