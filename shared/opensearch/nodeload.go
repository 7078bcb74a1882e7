package opensearch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// NodeLoad is one node's own CPU and heap, what sandboxes measure a node's duress by.
type NodeLoad struct {
	ID   string
	Name string
	// ProcessCPUPercent is process.cpu.percent (the OpenSearch process), OSCPUPercent os.cpu.percent
	// (the whole host); -1 when the node did not report it.
	ProcessCPUPercent int
	OSCPUPercent      int
	HeapUsedBytes     int64
	HeapMaxBytes      int64
	// Processors is os.allocated_processors from GET _nodes (what OpenSearch sizes its pools by),
	// 0 when unknown.
	Processors int
}

// NodeLoads is every node's load, sorted by name, and the nodes that failed to answer.
type NodeLoads struct {
	Nodes    []NodeLoad
	Failures []Failure
}

var (
	nodeLoadStatsFilter = joinFilters([]string{"_nodes"},
		prefixed("nodes.*.", "name", "os.cpu.percent", "process.cpu.percent", "jvm.mem.heap_used_in_bytes", "jvm.mem.heap_max_in_bytes"))
	nodeLoadInfoFilter = joinFilters([]string{"_nodes"}, prefixed("nodes.*.", "os.allocated_processors", "os.available_processors"))
)

// NodeLoads reads GET _nodes/stats/os,process,jvm and GET _nodes/os.
func (c *Client) NodeLoads(ctx context.Context) (NodeLoads, error) {
	stats, err := c.call(ctx, "node loads", http.MethodGet, opensearchapi.NodesStatsReq{
		Metric: []string{"os", "process", "jvm"},
		Params: opensearchapi.NodesStatsParams{FilterPath: nodeLoadStatsFilter},
	})
	if err != nil {
		return NodeLoads{}, err
	}
	info, err := c.call(ctx, "node processors", http.MethodGet, opensearchapi.NodesInfoReq{
		Metrics: []string{"os"},
		Params:  opensearchapi.NodesInfoParams{FilterPath: nodeLoadInfoFilter},
	})
	if err != nil {
		return NodeLoads{}, err
	}
	out, err := decodeNodeLoads(stats, info)
	if err != nil {
		return NodeLoads{}, fmt.Errorf("node loads: %w", err)
	}
	return out, nil
}

func decodeNodeLoads(stats, info []byte) (NodeLoads, error) {
	type percent struct {
		Percent *int `json:"percent"`
	}
	var sw nodesWire[struct {
		Name string `json:"name"`
		OS   struct {
			CPU percent `json:"cpu"`
		} `json:"os"`
		Process struct {
			CPU percent `json:"cpu"`
		} `json:"process"`
		JVM jvmMemWire `json:"jvm"`
	}]
	if err := json.Unmarshal(stats, &sw); err != nil {
		return NodeLoads{}, fmt.Errorf("decode stats: %w", err)
	}
	var iw nodesWire[struct {
		OS struct {
			Allocated int `json:"allocated_processors"`
			Available int `json:"available_processors"`
		} `json:"os"`
	}]
	if err := json.Unmarshal(info, &iw); err != nil {
		return NodeLoads{}, fmt.Errorf("decode info: %w", err)
	}
	out := NodeLoads{Failures: append(failuresFrom(sw.Nodes.Failures), failuresFrom(iw.Nodes.Failures)...)}
	pct := func(p percent) int {
		if p.Percent == nil {
			return -1
		}
		return *p.Percent
	}
	for id, n := range sw.NodeMap {
		osInfo := iw.NodeMap[id].OS
		out.Nodes = append(out.Nodes, NodeLoad{
			ID: id, Name: n.Name, ProcessCPUPercent: pct(n.Process.CPU), OSCPUPercent: pct(n.OS.CPU),
			HeapUsedBytes: n.JVM.Mem.HeapUsedInBytes, HeapMaxBytes: n.JVM.Mem.HeapMaxInBytes,
			Processors: cmp.Or(osInfo.Allocated, osInfo.Available),
		})
	}
	slices.SortFunc(out.Nodes, func(a, b NodeLoad) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}
