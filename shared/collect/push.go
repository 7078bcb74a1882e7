package collect

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
)

var _ engine.PushReader[opensearch.NodesStats] = (*API)(nil)

// ReadPushed builds a sample as Read does, with node stats a collector pushed to the metrics
// webhook in place of GET _nodes/stats; shard stats, cluster state, health and settings are read
// as usual. The push must be this cluster's, whole: every node it lists must be in the cluster
// state, and every node of the cluster state must be in it unless the push counts it as failed
// (as OpenSearch's own answer does). Otherwise it fails wrapping engine.ErrPushRejected, before
// anything is stored.
func (a *API) ReadPushed(ctx context.Context, ns opensearch.NodesStats) (cluster.Sample, error) {
	s, err := a.read(ctx, &ns, true)
	return s, clusterErr(err)
}

// CheckPushed reports, wrapping engine.ErrPushRejected, whether pushed node stats cannot stand in
// for this cluster's: a node the cluster state does not have (stats of another cluster, or sent
// under the wrong cluster name), or nodes of the cluster state missing beyond those the push
// counts as failed.
func CheckPushed(ns opensearch.NodesStats, cs opensearch.ClusterState) error {
	known := make(map[string]bool, len(cs.Nodes))
	for _, n := range cs.Nodes {
		known[n.ID] = true
	}
	pushed := make(map[string]bool, len(ns.Nodes))
	for _, n := range ns.Nodes {
		if !known[n.ID] {
			return fmt.Errorf("%w: node %s (%s) is not in the cluster state: stats of another cluster?", engine.ErrPushRejected, n.ID, n.Name)
		}
		pushed[n.ID] = true
	}
	var missing []string
	for _, n := range cs.Nodes {
		if !pushed[n.ID] {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.ID, n.Name))
		}
	}
	if len(missing) > ns.Failed {
		slices.Sort(missing)
		return fmt.Errorf("%w: %d of the cluster's nodes are missing (%v) and the push counts %d failed",
			engine.ErrPushRejected, len(missing), missing, ns.Failed)
	}
	return nil
}
