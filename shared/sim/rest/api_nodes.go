package rest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/settings"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// nodeInfoMetrics and nodeStatsMetrics are the metric names OpenSearch 2.19 accepts on _nodes and
// _nodes/stats. Those the model has data for are rendered; the rest are accepted and left out.
var nodeInfoMetrics = []string{"settings", "os", "process", "jvm", "thread_pool", "transport", "http", "plugins",
	"ingest", "aggregations", "indices", "search_pipelines"}

var nodeStatsMetrics = []string{"indices", "os", "process", "jvm", "thread_pool", "fs", "transport", "http", "breaker",
	"script", "discovery", "ingest", "adaptive_selection", "script_cache", "indexing_pressure", "shard_indexing_pressure",
	"search_backpressure", "cluster_manager_throttling", "weighted_routing", "task_cancellation", "search_pipeline",
	"resource_usage_stats", "segment_replication_backpressure", "repositories", "admission_control", "caches",
	"file_cache", "remote_store"}

func allKnown(list string, known []string) bool {
	for m := range strings.SplitSeq(list, ",") {
		if m != "_all" && !slices.Contains(known, m) {
			return false
		}
	}
	return true
}

// parseMetrics reads a metric list; nil means all.
func parseMetrics(rq *wire.Request, list string, known []string) (map[string]bool, *wire.APIError) {
	if list == "" || list == "_all" {
		return nil, nil
	}
	out := map[string]bool{}
	for m := range strings.SplitSeq(list, ",") {
		if m == "_all" {
			return nil, nil
		}
		if !slices.Contains(known, m) {
			return nil, wire.IllegalArgument(fmt.Sprintf("request [%s] contains unrecognized metric: [%s]", rq.R.URL.Path, m))
		}
		out[m] = true
	}
	return out, nil
}

// handleNodes serves _nodes (info) and _nodes/stats in all their path forms.
func (s *Server) handleNodes(rq *wire.Request) (wire.Reply, *wire.APIError) {
	rest := rq.Segs[1:]
	statsAt := slices.Index(rest, "stats")
	if statsAt == 0 || statsAt == 1 {
		var ids []string
		if statsAt == 1 {
			ids = strings.Split(rest[0], ",")
		}
		var metricList, indexMetricList string
		if len(rest) > statsAt+1 {
			metricList = rest[statsAt+1]
		}
		if len(rest) > statsAt+2 {
			indexMetricList = rest[statsAt+2]
		}
		if len(rest) > statsAt+3 {
			return wire.Reply{}, wire.NoHandler(rq.R)
		}
		metrics, err := parseMetrics(rq, metricList, nodeStatsMetrics)
		if err != nil {
			return wire.Reply{}, err
		}
		indexMetrics, err := parseStatMetrics(rq, indexMetricList)
		if err != nil {
			return wire.Reply{}, err
		}
		return wire.JSONReply(s.nodesStats(s.MatchNodes(ids), metrics, indexMetrics, rq.Param("level"))), nil
	}
	var ids []string
	metricList := ""
	switch len(rest) {
	case 0:
	case 1:
		if allKnown(rest[0], nodeInfoMetrics) {
			metricList = rest[0]
		} else {
			ids = strings.Split(rest[0], ",")
		}
	case 2:
		ids, metricList = strings.Split(rest[0], ","), rest[1]
	default:
		return wire.Reply{}, wire.NoHandler(rq.R)
	}
	metrics, err := parseMetrics(rq, metricList, nodeInfoMetrics)
	if err != nil {
		return wire.Reply{}, err
	}
	return wire.JSONReply(s.nodesInfo(s.MatchNodes(ids), metrics)), nil
}

func nodesHeader(n int) wire.Object {
	return wire.Object{{"total", n}, {"successful", n}, {"failed", 0}}
}

// nodeBase are the fields every _nodes and _nodes/stats entry starts with.
func nodeBase(n *model.Node) wire.Object {
	return wire.Object{
		{"name", n.Name}, {"transport_address", n.Address()}, {"host", n.Host()}, {"ip", n.IP()},
	}
}

func (s *Server) nodesInfo(nodes []*model.Node, metrics map[string]bool) wire.Object {
	want := func(m string) bool { return metrics == nil || metrics[m] }
	out := make(wire.Object, 0, len(nodes))
	for _, n := range nodes {
		o := nodeBase(n)
		o = append(o,
			wire.Field{"version", s.OsVersion()}, wire.Field{"distribution", "opensearch"}, wire.Field{"build_type", "tar"},
			wire.Field{"build_hash", model.VersionBuildHash}, wire.Field{"total_indexing_buffer", int64(float64(n.HeapBytes) * model.HeapIndexingBufferFraction)},
			wire.Field{"roles", []string{"data", "ingest"}}, wire.Field{"attributes", stringMap(n.Attrs())},
		)
		if want("os") {
			o = append(o, wire.Field{"os", wire.Object{
				{"refresh_interval_in_millis", 1000}, {"name", "Linux"}, {"pretty_name", "Linux"}, {"arch", "amd64"},
				{"version", "6.1.0"}, {"available_processors", n.Write.Threads}, {"allocated_processors", n.Write.Threads},
			}})
		}
		if want("process") {
			o = append(o, wire.Field{"process", wire.Object{{"refresh_interval_in_millis", 1000}, {"id", 1000 + n.Ord}, {"mlockall", false}}})
		}
		if want("jvm") {
			o = append(o, wire.Field{"jvm", wire.Object{
				{"pid", 1000 + n.Ord}, {"version", "21.0.7"}, {"vm_name", "OpenJDK 64-Bit Server VM"}, {"vm_version", "21.0.7+6-LTS"},
				{"vm_vendor", "Eclipse Adoptium"}, {"bundled_jdk", true}, {"using_bundled_jdk", true},
				{"start_time_in_millis", n.Joined.UnixMilli()},
				{"mem", wire.Object{
					{"heap_init_in_bytes", n.HeapBytes}, {"heap_max_in_bytes", n.HeapBytes}, {"non_heap_init_in_bytes", 7667712},
					{"non_heap_max_in_bytes", 0}, {"direct_max_in_bytes", 0},
				}},
				{"gc_collectors", []string{"G1 Young Generation", "G1 Concurrent GC", "G1 Old Generation"}},
				{"memory_pools", []string{"CodeHeap 'non-nmethods'", "Metaspace", "CodeHeap 'profiled nmethods'", "Compressed Class Space", "G1 Eden Space", "G1 Old Gen", "G1 Survivor Space", "CodeHeap 'non-profiled nmethods'"}},
				{"using_compressed_ordinary_object_pointers", "true"}, {"input_arguments", []string{}},
			}})
		}
		if want("thread_pool") {
			o = append(o, wire.Field{"thread_pool", wire.Object{
				{"search", wire.Object{{"type", "resizable"}, {"size", n.Search.Threads}, {"queue_size", model.SearchQueueSize}}},
				{"write", wire.Object{{"type", "fixed"}, {"size", n.Write.Threads}, {"queue_size", model.QueueCapacity}}},
			}})
		}
		if want("transport") {
			o = append(o, wire.Field{"transport", wire.Object{
				{"bound_address", []string{n.Address()}}, {"publish_address", n.Address()}, {"profiles", wire.Object{}},
			}})
		}
		if want("http") {
			addr := fmt.Sprintf("127.0.0.1:%d", 9200+n.Ord)
			o = append(o, wire.Field{"http", wire.Object{
				{"bound_address", []string{addr}}, {"publish_address", addr}, {"max_content_length_in_bytes", wire.MaxBodyBytes},
			}})
		}
		if want("plugins") {
			o = append(o, wire.Field{"plugins", []any{}}, wire.Field{"modules", []any{}})
		}
		out = append(out, wire.Field{n.ID, o})
	}
	return wire.Object{{"_nodes", nodesHeader(len(nodes))}, {"cluster_name", model.ClusterName}, {"nodes", out}}
}

func (s *Server) nodesStats(nodes []*model.Node, metrics, indexMetrics map[string]bool, level string) wire.Object {
	want := func(m string) bool { return metrics == nil || metrics[m] }
	ts := s.NowLocked().UnixMilli()
	lag := s.Lag()
	var perNode map[*model.Node][]*model.ShardCopy
	if want("indices") {
		perNode = map[*model.Node][]*model.ShardCopy{}
		for _, ix := range s.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					if c.Node != nil {
						perNode[c.Node] = append(perNode[c.Node], c)
					}
				}
			}
		}
	}
	out := make(wire.Object, 0, len(nodes))
	for _, n := range nodes {
		o := append(nodeBase(n), wire.Field{"timestamp", ts}, wire.Field{"roles", []string{"data", "ingest"}}, wire.Field{"attributes", stringMap(n.Attrs())})
		if want("indices") {
			o = append(o, wire.Field{"indices", nodeIndicesStats(perNode[n], indexMetrics, level, lag)})
		}
		busy := n.Write.LastActive + n.Search.LastActive
		cpu := int(math.Min(100, math.Round(100*busy/float64(n.Write.Threads))))
		if want("os") {
			total := 2 * n.HeapBytes
			used := total/2 + n.HeapUsed()/2
			o = append(o, wire.Field{"os", wire.Object{
				{"timestamp", ts},
				{"cpu", wire.Object{{"percent", cpu}, {"load_average", wire.Object{{"1m", busy}, {"5m", busy}, {"15m", busy}}}}},
				{"mem", wire.Object{
					{"total_in_bytes", total}, {"free_in_bytes", total - used}, {"used_in_bytes", used},
					{"free_percent", int(100 * (total - used) / total)}, {"used_percent", int(100 * used / total)},
				}},
				{"swap", wire.Object{{"total_in_bytes", 0}, {"free_in_bytes", 0}, {"used_in_bytes", 0}}},
			}})
		}
		if want("process") {
			o = append(o, wire.Field{"process", wire.Object{
				{"timestamp", ts}, {"open_file_descriptors", 1000 + 10*n.ShardCount}, {"max_file_descriptors", 65535},
				{"cpu", wire.Object{{"percent", cpu}, {"total_in_millis", int64(s.ElapsedSeconds() * 1000 * busy)}}},
				{"mem", wire.Object{{"total_virtual_in_bytes", 2 * n.HeapBytes}}},
			}})
		}
		if want("jvm") {
			heap := n.HeapUsed()
			o = append(o, wire.Field{"jvm", wire.Object{
				{"timestamp", ts}, {"uptime_in_millis", s.NowLocked().Sub(n.Joined).Milliseconds()},
				{"mem", wire.Object{
					{"heap_used_in_bytes", heap}, {"heap_used_percent", int(100 * heap / n.HeapBytes)},
					{"heap_committed_in_bytes", n.HeapBytes}, {"heap_max_in_bytes", n.HeapBytes},
					{"non_heap_used_in_bytes", 200 << 20}, {"non_heap_committed_in_bytes", 210 << 20},
					{"pools", wire.Object{
						{"young", wire.Object{{"used_in_bytes", heap / 4}, {"max_in_bytes", 0}, {"peak_used_in_bytes", heap / 4}, {"peak_max_in_bytes", 0}}},
						{"old", wire.Object{{"used_in_bytes", heap - heap/4}, {"max_in_bytes", n.HeapBytes}, {"peak_used_in_bytes", heap}, {"peak_max_in_bytes", n.HeapBytes}}},
						{"survivor", wire.Object{{"used_in_bytes", 0}, {"max_in_bytes", 0}, {"peak_used_in_bytes", 0}, {"peak_max_in_bytes", 0}}},
					}},
				}},
				{"threads", wire.Object{{"count", 100 + n.Write.Threads + n.Search.Threads}, {"peak_count", 100 + n.Write.Threads + n.Search.Threads}}},
				{"gc", wire.Object{{"collectors", wire.Object{
					{"young", wire.Object{{"collection_count", s.Ticks}, {"collection_time_in_millis", 5 * s.Ticks}}},
					{"old", wire.Object{{"collection_count", 0}, {"collection_time_in_millis", 0}}},
				}}}},
			}})
		}
		if want("thread_pool") {
			o = append(o, wire.Field{"thread_pool", wire.Object{
				{"search", threadPoolStats(&n.Search, true, lag)},
				{"write", threadPoolStats(&n.Write, false, lag)},
			}})
		}
		if want("fs") {
			free := n.DiskBytes - n.DiskUsed
			o = append(o, wire.Field{"fs", wire.Object{
				{"timestamp", ts},
				{"total", wire.Object{{"total_in_bytes", n.DiskBytes}, {"free_in_bytes", free}, {"available_in_bytes", free}}},
				{"data", []any{wire.Object{
					{"path", "/usr/share/opensearch/data/nodes/0"}, {"mount", "/ (/dev/nvme1n1)"}, {"type", "ext4"},
					{"total_in_bytes", n.DiskBytes}, {"free_in_bytes", free}, {"available_in_bytes", free},
				}}},
			}})
		}
		if want("transport") {
			o = append(o, wire.Field{"transport", wire.Object{
				{"server_open", 13 * (len(s.PresentNodes()) - 1)}, {"total_outbound_connections", len(s.PresentNodes()) - 1},
				{"rx_count", 0}, {"rx_size_in_bytes", 0}, {"tx_count", 0}, {"tx_size_in_bytes", 0},
			}})
		}
		if want("http") {
			o = append(o, wire.Field{"http", wire.Object{{"current_open", 1}, {"total_opened", 1}}})
		}
		if want("breaker") {
			heap := n.HeapUsed()
			o = append(o, wire.Field{"breakers", wire.Object{
				{"request", breaker(int64(0.6*float64(n.HeapBytes)), 0, 1)},
				{"fielddata", breaker(int64(0.4*float64(n.HeapBytes)), 0, 1.03)},
				{"in_flight_requests", breaker(n.HeapBytes, 0, 2)},
				{"accounting", breaker(n.HeapBytes, int64(float64(n.DiskUsed)*model.HeapPerStoreByte), 1)},
				{"parent", breaker(int64(0.95*float64(n.HeapBytes)), heap, 1)},
			}})
		}
		out = append(out, wire.Field{n.ID, o})
	}
	return wire.Object{{"_nodes", nodesHeader(len(nodes))}, {"cluster_name", model.ClusterName}, {"nodes", out}}
}

func breaker(limit, estimated int64, overhead float64) wire.Object {
	return wire.Object{
		{"limit_size_in_bytes", limit}, {"limit_size", settings.FormatBytes(float64(limit))},
		{"estimated_size_in_bytes", estimated}, {"estimated_size", settings.FormatBytes(float64(estimated))},
		{"overhead", overhead}, {"tripped", 0},
	}
}

// threadPoolStats is one pool as _nodes/stats/thread_pool reports it. Only search pools have
// total_wait_time in OpenSearch, which is why shardwise estimates WRITE queue wait by Little's law.
// lag is the part of the last tick's work not yet shown (live.go).
func threadPoolStats(p *model.Pool, withWait bool, lag float64) wire.Object {
	o := wire.Object{
		{"threads", p.Threads}, {"queue", int64(math.Round(model.ShownQueue(p, lag)))}, {"active", int64(math.Round(math.Min(p.LastActive, float64(p.Threads))))},
		{"rejected", whole(model.Shown(p.Rejected, p.LastRejected, lag))}, {"largest", p.Largest}, {"completed", whole(model.Shown(p.Completed, p.LastServed, lag))},
	}
	if withWait {
		o = append(o, wire.Field{"total_wait_time_in_nanos", int64(model.Shown(p.WaitSeconds, p.LastWaitSum, lag) * 1e9)})
	}
	return o
}

// nodeIndicesStats sums a node's copies; level=indices adds per-index and level=shards per-shard stats.
func nodeIndicesStats(copies []*model.ShardCopy, metrics map[string]bool, level string, lag float64) wire.Object {
	var all statsAgg
	for _, c := range copies {
		all.add(c, lag)
	}
	o := all.render(metrics)
	switch level {
	case "indices":
		var order []*model.Index
		per := map[*model.Index]*statsAgg{}
		for _, c := range copies {
			a, ok := per[c.Sh.Idx]
			if !ok {
				a = &statsAgg{}
				per[c.Sh.Idx] = a
				order = append(order, c.Sh.Idx)
			}
			a.add(c, lag)
		}
		io := make(wire.Object, 0, len(order))
		for _, ix := range order {
			io = append(io, wire.Field{ix.Name, per[ix].render(metrics)})
		}
		o = append(o, wire.Field{"indices", io})
	case "shards":
		var order []*model.Index
		per := map[*model.Index][]any{}
		for _, c := range copies {
			if _, ok := per[c.Sh.Idx]; !ok {
				order = append(order, c.Sh.Idx)
			}
			one := copyStats(c, lag)
			per[c.Sh.Idx] = append(per[c.Sh.Idx], wire.Object{{strconv.Itoa(c.Sh.Num), one.render(metrics)}})
		}
		so := make(wire.Object, 0, len(order))
		for _, ix := range order {
			so = append(so, wire.Field{ix.Name, per[ix]})
		}
		o = append(o, wire.Field{"shards", so})
	}
	return o
}
