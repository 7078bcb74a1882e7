package collect

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
)

var _ engine.PushReader = (*API)(nil)

// ReadPushed builds a sample as Read does, with node stats a collector pushed to the metrics
// webhook in place of GET _nodes/stats; shard stats, cluster state, health and settings are read
// as usual. The push must be this cluster's, whole: every node it lists must be in the cluster
// state, and every node of the cluster state must be in it unless the push counts it as failed
// (as OpenSearch's own answer does). Otherwise it fails wrapping engine.ErrPushRejected, before
// anything is stored.
func (a *API) ReadPushed(ctx context.Context, ns opensearch.NodesStats) (cluster.Sample, error) {
	var (
		ss  opensearch.ShardStats
		cs  opensearch.ClusterState
		h   opensearch.Health
		set opensearch.ClusterSettings
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { ss, err = a.Client.ShardStats(gctx); return })
	g.Go(func() (err error) { cs, err = a.Client.ClusterState(gctx); return })
	g.Go(func() (err error) { h, err = a.Client.Health(gctx); return })
	g.Go(func() (err error) { set, err = a.Client.ClusterSettings(gctx); return })
	if err := g.Wait(); err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	if err := CheckPushed(ns, cs); err != nil {
		return cluster.Sample{}, err
	}
	if err := a.refreshPools(ctx, ns); err != nil {
		return cluster.Sample{}, err
	}
	a.mu.Lock()
	pools := make(map[string]opensearch.NodeInfo, len(a.pools))
	for k, v := range a.pools {
		pools[k] = v
	}
	a.mu.Unlock()
	return Build(a.Clock(), ns, ss, cs, h, set, pools)
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
