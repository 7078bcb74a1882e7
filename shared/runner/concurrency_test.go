package runner

import (
	"context"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
)

// TestConcurrentInvocations races three copies of every function per trigger, as duplicate
// EventBridge deliveries and overlapping schedules would, and compares with one copy: no safety
// violation, and no more moves.
func TestConcurrentInvocations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole scenarios")
	}
	for _, tc := range []struct{ scenario, strategy string }{
		{"write-hotspot", "reroute"},
		{"write-hotspot-managed", "auto"},
		{"search-spike", "reroute"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Safety.DryRun = false
			cfg.MoveStrategy = config.MoveStrategy(tc.strategy)
			var results [2]Result
			for i, copies := range []int{1, 3} {
				res, err := Run(context.Background(), scenario(t, tc.scenario), Options{Balancer: BalancerShardwise, Config: cfg, Concurrency: copies})
				if err != nil {
					t.Fatalf("concurrency %d: %v", copies, err)
				}
				if res.SafetyViolations != 0 {
					t.Fatalf("concurrency %d: %d safety violations: %+v", copies, res.SafetyViolations, res.Violations)
				}
				results[i] = res
			}
			if results[1].Moves > results[0].Moves {
				t.Fatalf("moves: %d with 3 racing copies, %d with one: racing invocations acted more", results[1].Moves, results[0].Moves)
			}
			t.Logf("moves %d/%d, hot node-seconds %v/%v, replica changes %d/%d (one copy/three)", results[0].Moves, results[1].Moves,
				results[0].HotNodeSeconds, results[1].HotNodeSeconds, results[0].ReplicaChanges, results[1].ReplicaChanges)
		})
	}
}
