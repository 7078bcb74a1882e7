package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
func parseMetrics(rq *request, list string, known []string) (map[string]bool, *apiError) {
	if list == "" || list == "_all" {
		return nil, nil
	}
	out := map[string]bool{}
	for m := range strings.SplitSeq(list, ",") {
		if m == "_all" {
			return nil, nil
		}
		if !slices.Contains(known, m) {
			return nil, illegalArgument(fmt.Sprintf("request [%s] contains unrecognized metric: [%s]", rq.r.URL.Path, m))
		}
		out[m] = true
	}
	return out, nil
}

// handleNodes serves _nodes (info) and _nodes/stats in all their path forms.
func (s *Sim) handleNodes(rq *request) (reply, *apiError) {
	rest := rq.segs[1:]
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
			return reply{}, noHandler(rq.r)
		}
		metrics, err := parseMetrics(rq, metricList, nodeStatsMetrics)
		if err != nil {
			return reply{}, err
		}
		indexMetrics, err := parseStatMetrics(rq, indexMetricList)
		if err != nil {
			return reply{}, err
		}
		return jsonReply(s.nodesStats(s.matchNodes(ids), metrics, indexMetrics, rq.param("level"))), nil
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
		return reply{}, noHandler(rq.r)
	}
	metrics, err := parseMetrics(rq, metricList, nodeInfoMetrics)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(s.nodesInfo(s.matchNodes(ids), metrics)), nil
}

func nodesHeader(n int) object {
	return object{{"total", n}, {"successful", n}, {"failed", 0}}
}

// nodeBase are the fields every _nodes and _nodes/stats entry starts with.
func nodeBase(n *node) object {
	return object{
		{"name", n.name}, {"transport_address", n.address()}, {"host", n.host()}, {"ip", n.ip()},
	}
}

func (s *Sim) nodesInfo(nodes []*node, metrics map[string]bool) object {
	want := func(m string) bool { return metrics == nil || metrics[m] }
	out := make(object, 0, len(nodes))
	for _, n := range nodes {
		o := nodeBase(n)
		o = append(o,
			field{"version", s.osVersion()}, field{"distribution", "opensearch"}, field{"build_type", "tar"},
			field{"build_hash", versionBuildHash}, field{"total_indexing_buffer", int64(float64(n.heapBytes) * heapIndexingBufferFraction)},
			field{"roles", []string{"data", "ingest"}}, field{"attributes", stringMap(n.attrs())},
		)
		if want("os") {
			o = append(o, field{"os", object{
				{"refresh_interval_in_millis", 1000}, {"name", "Linux"}, {"pretty_name", "Linux"}, {"arch", "amd64"},
				{"version", "6.1.0"}, {"available_processors", n.write.threads}, {"allocated_processors", n.write.threads},
			}})
		}
		if want("process") {
			o = append(o, field{"process", object{{"refresh_interval_in_millis", 1000}, {"id", 1000 + n.ord}, {"mlockall", false}}})
		}
		if want("jvm") {
			o = append(o, field{"jvm", object{
				{"pid", 1000 + n.ord}, {"version", "21.0.7"}, {"vm_name", "OpenJDK 64-Bit Server VM"}, {"vm_version", "21.0.7+6-LTS"},
				{"vm_vendor", "Eclipse Adoptium"}, {"bundled_jdk", true}, {"using_bundled_jdk", true},
				{"start_time_in_millis", n.joined.UnixMilli()},
				{"mem", object{
					{"heap_init_in_bytes", n.heapBytes}, {"heap_max_in_bytes", n.heapBytes}, {"non_heap_init_in_bytes", 7667712},
					{"non_heap_max_in_bytes", 0}, {"direct_max_in_bytes", 0},
				}},
				{"gc_collectors", []string{"G1 Young Generation", "G1 Concurrent GC", "G1 Old Generation"}},
				{"memory_pools", []string{"CodeHeap 'non-nmethods'", "Metaspace", "CodeHeap 'profiled nmethods'", "Compressed Class Space", "G1 Eden Space", "G1 Old Gen", "G1 Survivor Space", "CodeHeap 'non-profiled nmethods'"}},
				{"using_compressed_ordinary_object_pointers", "true"}, {"input_arguments", []string{}},
			}})
		}
		if want("thread_pool") {
			o = append(o, field{"thread_pool", object{
				{"search", object{{"type", "resizable"}, {"size", n.search.threads}, {"queue_size", searchQueueSize}}},
				{"write", object{{"type", "fixed"}, {"size", n.write.threads}, {"queue_size", queueCapacity}}},
			}})
		}
		if want("transport") {
			o = append(o, field{"transport", object{
				{"bound_address", []string{n.address()}}, {"publish_address", n.address()}, {"profiles", object{}},
			}})
		}
		if want("http") {
			addr := fmt.Sprintf("127.0.0.1:%d", 9200+n.ord)
			o = append(o, field{"http", object{
				{"bound_address", []string{addr}}, {"publish_address", addr}, {"max_content_length_in_bytes", maxBodyBytes},
			}})
		}
		if want("plugins") {
			o = append(o, field{"plugins", []any{}}, field{"modules", []any{}})
		}
		out = append(out, field{n.id, o})
	}
	return object{{"_nodes", nodesHeader(len(nodes))}, {"cluster_name", clusterName}, {"nodes", out}}
}

// heapUsed is the model's heap use: a base share, the on-heap part of the node's shard data, and the
// indexing buffer filling with WRITE utilisation (constants in defaults.go).
func (n *node) heapUsed() int64 {
	util := math.Min(1, n.write.lastActive/float64(n.write.threads))
	used := float64(n.heapBytes)*(heapBaseFraction+heapIndexingBufferFraction*util) + float64(n.diskUsed)*heapPerStoreByte
	return int64(math.Min(used, 0.99*float64(n.heapBytes)))
}

func (s *Sim) nodesStats(nodes []*node, metrics, indexMetrics map[string]bool, level string) object {
	want := func(m string) bool { return metrics == nil || metrics[m] }
	ts := s.now().UnixMilli()
	lag := s.lag()
	var perNode map[*node][]*shardCopy
	if want("indices") {
		perNode = map[*node][]*shardCopy{}
		for _, ix := range s.indices {
			for _, sh := range ix.shards {
				for _, c := range sh.copies {
					if c.node != nil {
						perNode[c.node] = append(perNode[c.node], c)
					}
				}
			}
		}
	}
	out := make(object, 0, len(nodes))
	for _, n := range nodes {
		o := append(nodeBase(n), field{"timestamp", ts}, field{"roles", []string{"data", "ingest"}}, field{"attributes", stringMap(n.attrs())})
		if want("indices") {
			o = append(o, field{"indices", nodeIndicesStats(perNode[n], indexMetrics, level, lag)})
		}
		busy := n.write.lastActive + n.search.lastActive
		cpu := int(math.Min(100, math.Round(100*busy/float64(n.write.threads))))
		if want("os") {
			total := 2 * n.heapBytes
			used := total/2 + n.heapUsed()/2
			o = append(o, field{"os", object{
				{"timestamp", ts},
				{"cpu", object{{"percent", cpu}, {"load_average", object{{"1m", busy}, {"5m", busy}, {"15m", busy}}}}},
				{"mem", object{
					{"total_in_bytes", total}, {"free_in_bytes", total - used}, {"used_in_bytes", used},
					{"free_percent", int(100 * (total - used) / total)}, {"used_percent", int(100 * used / total)},
				}},
				{"swap", object{{"total_in_bytes", 0}, {"free_in_bytes", 0}, {"used_in_bytes", 0}}},
			}})
		}
		if want("process") {
			o = append(o, field{"process", object{
				{"timestamp", ts}, {"open_file_descriptors", 1000 + 10*n.shardCount}, {"max_file_descriptors", 65535},
				{"cpu", object{{"percent", cpu}, {"total_in_millis", int64(s.elapsedSeconds() * 1000 * busy)}}},
				{"mem", object{{"total_virtual_in_bytes", 2 * n.heapBytes}}},
			}})
		}
		if want("jvm") {
			heap := n.heapUsed()
			o = append(o, field{"jvm", object{
				{"timestamp", ts}, {"uptime_in_millis", s.now().Sub(n.joined).Milliseconds()},
				{"mem", object{
					{"heap_used_in_bytes", heap}, {"heap_used_percent", int(100 * heap / n.heapBytes)},
					{"heap_committed_in_bytes", n.heapBytes}, {"heap_max_in_bytes", n.heapBytes},
					{"non_heap_used_in_bytes", 200 << 20}, {"non_heap_committed_in_bytes", 210 << 20},
					{"pools", object{
						{"young", object{{"used_in_bytes", heap / 4}, {"max_in_bytes", 0}, {"peak_used_in_bytes", heap / 4}, {"peak_max_in_bytes", 0}}},
						{"old", object{{"used_in_bytes", heap - heap/4}, {"max_in_bytes", n.heapBytes}, {"peak_used_in_bytes", heap}, {"peak_max_in_bytes", n.heapBytes}}},
						{"survivor", object{{"used_in_bytes", 0}, {"max_in_bytes", 0}, {"peak_used_in_bytes", 0}, {"peak_max_in_bytes", 0}}},
					}},
				}},
				{"threads", object{{"count", 100 + n.write.threads + n.search.threads}, {"peak_count", 100 + n.write.threads + n.search.threads}}},
				{"gc", object{{"collectors", object{
					{"young", object{{"collection_count", s.ticks}, {"collection_time_in_millis", 5 * s.ticks}}},
					{"old", object{{"collection_count", 0}, {"collection_time_in_millis", 0}}},
				}}}},
			}})
		}
		if want("thread_pool") {
			o = append(o, field{"thread_pool", object{
				{"search", threadPoolStats(&n.search, true, lag)},
				{"write", threadPoolStats(&n.write, false, lag)},
			}})
		}
		if want("fs") {
			free := n.diskBytes - n.diskUsed
			o = append(o, field{"fs", object{
				{"timestamp", ts},
				{"total", object{{"total_in_bytes", n.diskBytes}, {"free_in_bytes", free}, {"available_in_bytes", free}}},
				{"data", []any{object{
					{"path", "/usr/share/opensearch/data/nodes/0"}, {"mount", "/ (/dev/nvme1n1)"}, {"type", "ext4"},
					{"total_in_bytes", n.diskBytes}, {"free_in_bytes", free}, {"available_in_bytes", free},
				}}},
			}})
		}
		if want("transport") {
			o = append(o, field{"transport", object{
				{"server_open", 13 * (len(s.presentNodes()) - 1)}, {"total_outbound_connections", len(s.presentNodes()) - 1},
				{"rx_count", 0}, {"rx_size_in_bytes", 0}, {"tx_count", 0}, {"tx_size_in_bytes", 0},
			}})
		}
		if want("http") {
			o = append(o, field{"http", object{{"current_open", 1}, {"total_opened", 1}}})
		}
		if want("breaker") {
			heap := n.heapUsed()
			o = append(o, field{"breakers", object{
				{"request", breaker(int64(0.6*float64(n.heapBytes)), 0, 1)},
				{"fielddata", breaker(int64(0.4*float64(n.heapBytes)), 0, 1.03)},
				{"in_flight_requests", breaker(n.heapBytes, 0, 2)},
				{"accounting", breaker(n.heapBytes, int64(float64(n.diskUsed)*heapPerStoreByte), 1)},
				{"parent", breaker(int64(0.95*float64(n.heapBytes)), heap, 1)},
			}})
		}
		out = append(out, field{n.id, o})
	}
	return object{{"_nodes", nodesHeader(len(nodes))}, {"cluster_name", clusterName}, {"nodes", out}}
}

func breaker(limit, estimated int64, overhead float64) object {
	return object{
		{"limit_size_in_bytes", limit}, {"limit_size", formatBytes(float64(limit))},
		{"estimated_size_in_bytes", estimated}, {"estimated_size", formatBytes(float64(estimated))},
		{"overhead", overhead}, {"tripped", 0},
	}
}

// threadPoolStats is one pool as _nodes/stats/thread_pool reports it. Only search pools have
// total_wait_time in OpenSearch, which is why shardwise estimates WRITE queue wait by Little's law.
// lag is the part of the last tick's work not yet shown (live.go).
func threadPoolStats(p *pool, withWait bool, lag float64) object {
	o := object{
		{"threads", p.threads}, {"queue", int64(math.Round(shownQueue(p, lag)))}, {"active", int64(math.Round(math.Min(p.lastActive, float64(p.threads))))},
		{"rejected", whole(shown(p.rejected, p.lastRejected, lag))}, {"largest", p.largest}, {"completed", whole(shown(p.completed, p.lastServed, lag))},
	}
	if withWait {
		o = append(o, field{"total_wait_time_in_nanos", int64(shown(p.waitSeconds, p.lastWaitSum, lag) * 1e9)})
	}
	return o
}

// nodeIndicesStats sums a node's copies; level=indices adds per-index and level=shards per-shard stats.
func nodeIndicesStats(copies []*shardCopy, metrics map[string]bool, level string, lag float64) object {
	var all statsAgg
	for _, c := range copies {
		all.add(c, lag)
	}
	o := all.render(metrics)
	switch level {
	case "indices":
		var order []*index
		per := map[*index]*statsAgg{}
		for _, c := range copies {
			a, ok := per[c.sh.idx]
			if !ok {
				a = &statsAgg{}
				per[c.sh.idx] = a
				order = append(order, c.sh.idx)
			}
			a.add(c, lag)
		}
		io := make(object, 0, len(order))
		for _, ix := range order {
			io = append(io, field{ix.name, per[ix].render(metrics)})
		}
		o = append(o, field{"indices", io})
	case "shards":
		var order []*index
		per := map[*index][]any{}
		for _, c := range copies {
			if _, ok := per[c.sh.idx]; !ok {
				order = append(order, c.sh.idx)
			}
			one := copyStats(c, lag)
			per[c.sh.idx] = append(per[c.sh.idx], object{{strconv.Itoa(c.sh.num), one.render(metrics)}})
		}
		so := make(object, 0, len(order))
		for _, ix := range order {
			so = append(so, field{ix.name, per[ix]})
		}
		o = append(o, field{"shards", so})
	}
	return o
}
