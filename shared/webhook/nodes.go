package webhook

import (
	"fmt"

	"github.com/shardwise/shardwise/shared/opensearch"
)

// parseNodesStats decodes a _nodes/stats document a collector pushed, as the client decodes the
// one it reads itself, and refuses one that describes no node: it would replace the sample's
// node stats with nothing.
func parseNodesStats(body []byte) (opensearch.NodesStats, error) {
	ns, err := opensearch.DecodeNodesStats(body)
	if err != nil {
		return opensearch.NodesStats{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if len(ns.Nodes) == 0 {
		return opensearch.NodesStats{}, fmt.Errorf("%w: _nodes/stats document lists no nodes", errMalformed)
	}
	for _, n := range ns.Nodes {
		if n.ID == "" {
			return opensearch.NodesStats{}, fmt.Errorf("%w: a node has an empty id", errMalformed)
		}
	}
	return ns, nil
}
