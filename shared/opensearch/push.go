package opensearch

import "fmt"

// DecodeNodesStats decodes a _nodes/stats document that did not come through this client — one a
// collector pushed to shardwise's metrics webhook — exactly as NodesStats decodes the answer it
// reads itself: the same fields, the same sorting, failed nodes in Failed and Failures.
func DecodeNodesStats(body []byte) (NodesStats, error) {
	s, err := decodeNodesStats(body)
	if err != nil {
		return NodesStats{}, fmt.Errorf("nodes stats: %w", err)
	}
	return s, nil
}
