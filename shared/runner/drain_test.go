package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
)

// TestExcludedNodeDrainsOnSteady: with a node in allocation.excluded_nodes on a steady cluster,
// the node is drained by OpenSearch itself (the cluster-level exclusion shardwise sets), so
// OpenSearch's balancer agrees with it: nothing is undone, shardwise issues no move of its own,
// and the node ends empty.
func TestExcludedNodeDrainsOnSteady(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole scenario")
	}
	cfg := config.Default()
	cfg.Safety.DryRun = false
	cfg.Allocation.ExcludedNodes = []string{"node-3"}
	var own []string
	var last Tick
	// Two hours: every copy on node-3 is written, so each relocation off it replays the
	// operations indexed while its files copied (the translog replay, on by default since
	// 8d29dea), and the last of them lands after the scenario's hour.
	sc := scenario(t, "steady")
	sc.DurationSeconds = 2 * 3600
	res, err := Run(context.Background(), sc, Options{Balancer: BalancerShardwise, Config: cfg, OnTick: func(tk Tick) {
		own = append(own, tk.Moves...)
		last = tk
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.MovesUndoneByBuiltin != 0 || res.SafetyViolations != 0 {
		t.Errorf("undone %d, safety violations %d: want 0 and 0", res.MovesUndoneByBuiltin, res.SafetyViolations)
	}
	if len(own) != 0 {
		t.Errorf("shardwise's own moves on a steady cluster: %s; want none besides the drain", strings.Join(own, "; "))
	}
	for _, n := range last.Report.Nodes {
		if n.Name == "node-3" && n.WriteUtil > 0 {
			t.Errorf("node-3 still carries WRITE load %.2f at the end: not drained", n.WriteUtil)
		}
	}
}
