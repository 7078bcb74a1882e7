package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sim"
)

// diskHot is a cluster Sway's score sees as hot: node-0 holds forty 2 GiB archive shards, 80 % of
// its 100 GiB disk, with a small heap that the on-heap part of its data fills past half (score about
// 0.4·0.57 + 0.4·0.80 + 0.2 = 0.75); four other nodes hold a little each. Each move takes little
// off node-0's score, so the cycle ends at Sway's 5 moves before its skew target.
const diskHot = `{
  "name": "sway-disk-hot", "seed": 3, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": true, "recovery_bytes_per_second": 41943040, "node_concurrent_recoveries": 2, "disk_high_watermark": 0.9},
  "node_defaults": {"write_threads": 4, "search_threads": 7, "heap_bytes": 268435456, "disk_bytes": 107374182400},
  "nodes": [{"name": "node-0"}, {"name": "node-1"}, {"name": "node-2"}, {"name": "node-3"}, {"name": "node-4"}],
  "indices": [
    {"name": "archive", "primaries": 40, "replicas": 0, "shard_bytes": 2147483648,
     "write_load": {"kind": "constant", "value": 0.2}, "search_load": {"kind": "constant", "value": 0.1},
     "placement": [["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"], ["node-0"]]},
    {"name": "logs", "primaries": 4, "replicas": 1, "shard_bytes": 1073741824,
     "write_load": {"kind": "constant", "value": 1}, "search_load": {"kind": "constant", "value": 0.5},
     "placement": [["node-1", "node-2"], ["node-2", "node-3"], ["node-3", "node-4"], ["node-4", "node-1"]]}
  ]
}`

// Sway acting in the simulator through the production client: its moves are the simulator's
// external moves, at most Sway's 5 per cycle, each with its reason.
func TestSwayRuns(t *testing.T) {
	cases := []struct {
		name   string
		sc     func(t *testing.T) *sim.Scenario
		dryRun bool
		// wantMost is the most moves (or, dry, planned moves) of any tick.
		wantMost int
	}{
		{name: "disk-hot node: moves, counted by the simulator", sc: parsed(diskHot), wantMost: 5},
		{name: "disk-hot node, dry run: planned, nothing moved", sc: parsed(diskHot), dryRun: true, wantMost: 5},
		// Sway scores heap, disk and shard count, not write load: the WRITE hotspot of two nodes
		// with even counts and near-empty disks scores about 0.36, under its 0.70 threshold.
		{name: "write-hotspot: nothing hot by Sway's score", sc: func(t *testing.T) *sim.Scenario { return scenario(t, "write-hotspot") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Safety.DryRun = tc.dryRun
			var ticks []Tick
			res, err := Run(context.Background(), tc.sc(t), Options{Balancer: BalancerSway, Config: cfg, OnTick: func(tk Tick) { ticks = append(ticks, tk) }})
			if err != nil {
				t.Fatal(err)
			}
			listed, most := 0, 0
			for _, tk := range ticks {
				if len(tk.Moves) > 5 {
					t.Errorf("tick %d: %d moves, want at most Sway's 5: %v", tk.N, len(tk.Moves), tk.Moves)
				}
				most = max(most, len(tk.Moves))
				for _, m := range tk.Moves {
					want := engine.OutcomeExecuted
					if tc.dryRun {
						want = engine.OutcomeDryRun
					}
					if !strings.HasPrefix(m, want+" ") || !strings.Contains(m, "sway: source hot-score") {
						t.Errorf("tick %d: move %q, want %q with Sway's reason", tk.N, m, want)
					}
				}
				listed += len(tk.Moves)
			}
			t.Logf("%s: %d moves listed, result moves %d (%d bytes), hot node-seconds %v, violations %d: %v",
				tc.name, listed, res.Moves, res.BytesMoved, res.HotNodeSeconds, res.SafetyViolations, res.Violations)
			if res.Balancer != BalancerSway {
				t.Errorf("balancer: got %q want %q", res.Balancer, BalancerSway)
			}
			if most != tc.wantMost {
				t.Errorf("most moves in a tick: got %d want %d", most, tc.wantMost)
			}
			wantCounted := listed
			if tc.dryRun {
				wantCounted = 0
			}
			if res.Moves != wantCounted {
				t.Errorf("result moves: got %d want %d (the moves listed, none when dry)", res.Moves, wantCounted)
			}
			if (res.BytesMoved > 0) != (wantCounted > 0) {
				t.Errorf("bytes moved: got %d for %d moves", res.BytesMoved, wantCounted)
			}
		})
	}
}

func parsed(js string) func(t *testing.T) *sim.Scenario {
	return func(t *testing.T) *sim.Scenario {
		t.Helper()
		sc, err := sim.ParseScenario([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
}
