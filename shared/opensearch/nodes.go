package opensearch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// Failure is one node's or task's failure listed inside an otherwise successful response.
type Failure struct {
	NodeID string
	Type   string
	// Reason includes the chain of causes.
	Reason string
}

func failuresFrom(causes []errorCause) []Failure {
	if len(causes) == 0 {
		return nil
	}
	out := make([]Failure, len(causes))
	for i, c := range causes {
		out[i] = Failure{NodeID: c.NodeID, Type: c.Type, Reason: c.describe()}
	}
	return out
}

// nodesHeader is the "_nodes" summary of the nodes APIs: a node that failed is missing from
// "nodes", so its absence must not read as "the node left".
type nodesHeader struct {
	Total      int          `json:"total"`
	Successful int          `json:"successful"`
	Failed     int          `json:"failed"`
	Failures   []errorCause `json:"failures"`
}

// ThreadPoolStats are one thread pool's figures from _nodes/stats.
type ThreadPoolStats struct {
	Threads   int   `json:"threads"`
	Queue     int   `json:"queue"`
	Active    int   `json:"active"`
	Largest   int   `json:"largest"`
	Rejected  int64 `json:"rejected"`
	Completed int64 `json:"completed"`
	// TotalWaitTimeNanos is the time tasks waited in the queue. OpenSearch reports it for search
	// pools only; for WRITE it is 0 and the wait must be estimated (see shared/cluster).
	TotalWaitTimeNanos int64 `json:"total_wait_time_in_nanos"`
}

// NodeStats is one node's resources, WRITE and SEARCH pools and time counters.
type NodeStats struct {
	ID         string
	Name       string
	Host       string
	IP         string
	Roles      []string
	Attributes map[string]string
	// Timestamp is when the node took these stats; rates should divide by its differences.
	Timestamp          time.Time
	HeapUsedBytes      int64
	HeapMaxBytes       int64
	DiskTotalBytes     int64
	DiskAvailableBytes int64
	DiskFreeBytes      int64
	Write              ThreadPoolStats
	Search             ThreadPoolStats
	// IndexTimeMillis is indices.indexing.index_time_in_millis, a counter.
	IndexTimeMillis int64
	// QueryTimeMillis and FetchTimeMillis are indices.search.*_time_in_millis, counters.
	QueryTimeMillis int64
	FetchTimeMillis int64
}

// NodesStats is GET _nodes/stats: every node that answered, sorted by name, and the ones that did not.
type NodesStats struct {
	ClusterName string
	Nodes       []NodeStats
	// Failed counts nodes that did not answer; Failures says why.
	Failed   int
	Failures []Failure
}

var nodesStatsFilter = joinFilters(
	[]string{"_nodes", "cluster_name"},
	prefixed("nodes.*.", "name", "host", "ip", "roles", "attributes", "timestamp",
		"jvm.mem.heap_used_in_bytes", "jvm.mem.heap_max_in_bytes",
		"fs.total.total_in_bytes", "fs.total.available_in_bytes", "fs.total.free_in_bytes",
		"indices.indexing.index_time_in_millis",
		"indices.search.query_time_in_millis", "indices.search.fetch_time_in_millis"),
	prefixed("nodes.*.thread_pool.write.", "threads", "queue", "active", "rejected", "completed", "largest"),
	prefixed("nodes.*.thread_pool.search.", "threads", "queue", "active", "rejected", "completed", "largest",
		"total_wait_time_in_nanos"),
)

// NodesStats reads GET _nodes/stats/jvm,fs,thread_pool,indices.
func (c *Client) NodesStats(ctx context.Context) (NodesStats, error) {
	req := opensearchapi.NodesStatsReq{
		Metric: []string{"jvm", "fs", "thread_pool", "indices"},
		Params: opensearchapi.NodesStatsParams{FilterPath: nodesStatsFilter},
	}
	return get(ctx, c, "nodes stats", req, decodeNodesStats)
}

// nodesWire is the frame of every answer of the nodes APIs: who answered, the cluster's name and
// each node's section N by node id.
type nodesWire[N any] struct {
	Nodes       nodesHeader  `json:"_nodes"`
	ClusterName string       `json:"cluster_name"`
	NodeMap     map[string]N `json:"nodes"`
}

// nodeIdentityWire is what _nodes/stats and _nodes say of every node besides its figures.
type nodeIdentityWire struct {
	Name       string            `json:"name"`
	Host       string            `json:"host"`
	IP         string            `json:"ip"`
	Roles      []string          `json:"roles"`
	Attributes map[string]string `json:"attributes"`
}

// jvmMemWire is a node's jvm.mem section: _nodes/stats reports the heap used and its maximum, _nodes
// the maximum only.
type jvmMemWire struct {
	Mem struct {
		HeapUsedInBytes int64 `json:"heap_used_in_bytes"`
		HeapMaxInBytes  int64 `json:"heap_max_in_bytes"`
	} `json:"mem"`
}

func decodeNodesStats(body []byte) (NodesStats, error) {
	var wire nodesWire[struct {
		nodeIdentityWire
		Timestamp int64      `json:"timestamp"`
		JVM       jvmMemWire `json:"jvm"`
		FS        struct {
			Total struct {
				TotalInBytes     int64 `json:"total_in_bytes"`
				AvailableInBytes int64 `json:"available_in_bytes"`
				FreeInBytes      int64 `json:"free_in_bytes"`
			} `json:"total"`
		} `json:"fs"`
		ThreadPool struct {
			Write  ThreadPoolStats `json:"write"`
			Search ThreadPoolStats `json:"search"`
		} `json:"thread_pool"`
		Indices struct {
			Indexing struct {
				IndexTimeInMillis int64 `json:"index_time_in_millis"`
			} `json:"indexing"`
			Search struct {
				QueryTimeInMillis int64 `json:"query_time_in_millis"`
				FetchTimeInMillis int64 `json:"fetch_time_in_millis"`
			} `json:"search"`
		} `json:"indices"`
	}]
	if err := json.Unmarshal(body, &wire); err != nil {
		return NodesStats{}, fmt.Errorf("decode: %w", err)
	}
	out := NodesStats{
		ClusterName: wire.ClusterName,
		Nodes:       make([]NodeStats, 0, len(wire.NodeMap)),
		Failed:      wire.Nodes.Failed,
		Failures:    failuresFrom(wire.Nodes.Failures),
	}
	for id, n := range wire.NodeMap {
		out.Nodes = append(out.Nodes, NodeStats{
			ID:                 id,
			Name:               n.Name,
			Host:               n.Host,
			IP:                 n.IP,
			Roles:              n.Roles,
			Attributes:         n.Attributes,
			Timestamp:          millisToTime(n.Timestamp),
			HeapUsedBytes:      n.JVM.Mem.HeapUsedInBytes,
			HeapMaxBytes:       n.JVM.Mem.HeapMaxInBytes,
			DiskTotalBytes:     n.FS.Total.TotalInBytes,
			DiskAvailableBytes: n.FS.Total.AvailableInBytes,
			DiskFreeBytes:      n.FS.Total.FreeInBytes,
			Write:              n.ThreadPool.Write,
			Search:             n.ThreadPool.Search,
			IndexTimeMillis:    n.Indices.Indexing.IndexTimeInMillis,
			QueryTimeMillis:    n.Indices.Search.QueryTimeInMillis,
			FetchTimeMillis:    n.Indices.Search.FetchTimeInMillis,
		})
	}
	slices.SortFunc(out.Nodes, func(a, b NodeStats) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// ThreadPoolInfo is one thread pool's configuration from _nodes.
type ThreadPoolInfo struct {
	Size int `json:"size"`
	// QueueSize is -1 for an unbounded queue.
	QueueSize int `json:"queue_size"`
}

// NodeInfo is one node's static description from GET _nodes.
type NodeInfo struct {
	ID           string
	Name         string
	Host         string
	IP           string
	Version      string
	Roles        []string
	Attributes   map[string]string
	HeapMaxBytes int64
	Write        ThreadPoolInfo
	Search       ThreadPoolInfo
}

// NodesInfo is GET _nodes: every node that answered, sorted by name, and the ones that did not.
type NodesInfo struct {
	ClusterName string
	Nodes       []NodeInfo
	Failed      int
	Failures    []Failure
}

var nodesInfoFilter = joinFilters(
	[]string{"_nodes", "cluster_name"},
	prefixed("nodes.*.", "name", "host", "ip", "version", "roles", "attributes", "jvm.mem.heap_max_in_bytes",
		"thread_pool.write.size", "thread_pool.write.queue_size",
		"thread_pool.search.size", "thread_pool.search.queue_size"),
)

// NodesInfo reads GET _nodes.
func (c *Client) NodesInfo(ctx context.Context) (NodesInfo, error) {
	req := opensearchapi.NodesInfoReq{Params: opensearchapi.NodesInfoParams{FilterPath: nodesInfoFilter}}
	return get(ctx, c, "nodes info", req, decodeNodesInfo)
}

func decodeNodesInfo(body []byte) (NodesInfo, error) {
	var wire nodesWire[struct {
		nodeIdentityWire
		Version    string     `json:"version"`
		JVM        jvmMemWire `json:"jvm"`
		ThreadPool struct {
			Write  ThreadPoolInfo `json:"write"`
			Search ThreadPoolInfo `json:"search"`
		} `json:"thread_pool"`
	}]
	if err := json.Unmarshal(body, &wire); err != nil {
		return NodesInfo{}, fmt.Errorf("decode: %w", err)
	}
	out := NodesInfo{
		ClusterName: wire.ClusterName,
		Nodes:       make([]NodeInfo, 0, len(wire.NodeMap)),
		Failed:      wire.Nodes.Failed,
		Failures:    failuresFrom(wire.Nodes.Failures),
	}
	for id, n := range wire.NodeMap {
		out.Nodes = append(out.Nodes, NodeInfo{
			ID:           id,
			Name:         n.Name,
			Host:         n.Host,
			IP:           n.IP,
			Version:      n.Version,
			Roles:        n.Roles,
			Attributes:   n.Attributes,
			HeapMaxBytes: n.JVM.Mem.HeapMaxInBytes,
			Write:        n.ThreadPool.Write,
			Search:       n.ThreadPool.Search,
		})
	}
	slices.SortFunc(out.Nodes, func(a, b NodeInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// millisToTime converts epoch milliseconds; 0 (absent) stays the zero time rather than 1970.
func millisToTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
