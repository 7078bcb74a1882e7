package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// faultSeeds is how many random scenarios TestFaults runs: SHARDWISE_FAULT_SEEDS, default 25, or
// 5 under the race detector. The gate's `make faults` runs 200 seeds without it; under it each
// seed costs about 18 s on 2 cores, and what the detector looks for (goroutines sharing state in
// the functions and the simulator) is reached by every seed's cycles alike.
func faultSeeds(t *testing.T) int {
	if v := os.Getenv("SHARDWISE_FAULT_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SHARDWISE_FAULT_SEEDS=%q: want a positive number", v)
		}
		return n
	}
	if raceDetector {
		return 5
	}
	return 25
}

// faultScenario builds a random cluster with a write hotspot and a mix of faults: API errors, API
// latency, reroute refusals, and a node leaving, often while a relocation is in flight.
func faultScenario(seed uint64) (*sim.Scenario, []string, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	nodes := 4 + r.IntN(3)
	var ns []map[string]any
	for i := range nodes {
		ns = append(ns, map[string]any{"name": fmt.Sprintf("node-%d", i)})
	}
	primaries := 4 + r.IntN(3)
	weights := make([]float64, primaries)
	placement := make([][]string, primaries)
	for i := range primaries {
		weights[i] = float64(1 + r.IntN(4))
		a := (2 * i) % nodes
		b := (2*i + 1) % nodes
		placement[i] = []string{fmt.Sprintf("node-%d", a), fmt.Sprintf("node-%d", b)}
	}
	duration := 1200.0
	var events []map[string]any
	var faults []string
	add := func(e map[string]any) {
		events = append(events, e)
		faults = append(faults, e["kind"].(string))
	}
	left := false
	for range 1 + r.IntN(3) {
		at := float64(30 * r.IntN(36))
		kind := r.IntN(4)
		if kind == 3 && left {
			kind = r.IntN(3)
		}
		switch kind {
		case 0:
			add(map[string]any{"at_seconds": at, "kind": "api_errors", "rate": 0.1 + 0.5*r.Float64(), "until_seconds": at + float64(30*(1+r.IntN(6)))})
		case 1:
			add(map[string]any{"at_seconds": at, "kind": "api_latency", "ms": float64(2 + r.IntN(20)), "until_seconds": at + 60})
		case 2:
			add(map[string]any{"at_seconds": at, "kind": "reroute_rejects", "until_seconds": at + float64(30*(1+r.IntN(10)))})
		case 3:
			left = true
			// Right after the spike, when the first relocations are likely in flight.
			leave := 330 + float64(30*r.IntN(8))
			add(map[string]any{"at_seconds": leave, "kind": "node_leave", "node": fmt.Sprintf("node-%d", r.IntN(nodes))})
			if r.IntN(2) == 0 {
				add(map[string]any{"at_seconds": leave + 300, "kind": "node_join", "node": map[string]any{"name": "node-new"}})
			}
		}
	}
	sc := map[string]any{
		"name": fmt.Sprintf("faults-%d", seed), "seed": seed, "tick_seconds": 30, "duration_seconds": duration,
		"cluster":       map[string]any{"builtin_balancer": r.IntN(4) != 0, "recovery_bytes_per_second": 41943040, "node_concurrent_recoveries": 2, "disk_high_watermark": 0.9},
		"node_defaults": map[string]any{"write_threads": 8, "search_threads": 13, "heap_bytes": 8 << 30, "disk_bytes": 1 << 40},
		"nodes":         ns,
		"indices": []map[string]any{{
			"name": "hot", "primaries": primaries, "replicas": 1, "shard_bytes": (1 + r.IntN(4)) << 30,
			"write_load":    map[string]any{"kind": "step", "before": 2, "after": 8 + 8*r.Float64(), "at_seconds": 300},
			"search_load":   map[string]any{"kind": "constant", "value": 0.5},
			"shard_weights": weights, "placement": placement,
		}},
		"index_groups": []map[string]any{{
			"name_prefix": "cold-", "count": 3 + r.IntN(4), "primaries": 1, "replicas": 1, "shard_bytes": 1 << 28,
			"write_load": map[string]any{"kind": "constant", "value": 0.3}, "search_load": map[string]any{"kind": "constant", "value": 0.3},
			"skew": map[string]any{"kind": "even"},
		}},
		"events": events,
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, nil, err
	}
	s, err := sim.ParseScenario(b)
	return s, faults, err
}

// TestFaults runs random clusters with injected faults and checks the simulator's safety invariants
// (two copies of a shard on one node, a shard left without an active copy by a move, a move issued
// while a breaker check failed, the same move issued twice) on every tick: zero violations, no panic.
// faultKinds are the faults the test injects, as its summary counts them.
var faultKinds = []string{"api_errors", "api_latency", "reroute_rejects", "node_leave", "node_join", "concurrent_invocations"}

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs many scenarios")
	}
	seeds := faultSeeds(t)
	var injected, moves, violations atomic.Int64
	counts := map[string]*atomic.Int64{}
	for _, k := range faultKinds {
		counts[k] = &atomic.Int64{}
	}
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				sc, faults, err := faultScenario(seed)
				if err != nil {
					t.Fatalf("scenario: %v", err)
				}
				for _, f := range faults {
					counts[f].Add(1)
				}
				injected.Add(int64(len(faults)))
				cfg := config.Default()
				cfg.Safety.DryRun = false
				if seed%2 == 0 {
					cfg.MoveStrategy = "auto"
				}
				// A third of the seeds race duplicate and overlapping invocations of every function.
				copies := 1
				if seed%3 == 0 {
					copies = 2 + int(seed/3)%2
					faults = append(faults, "concurrent_invocations")
					counts["concurrent_invocations"].Add(1)
					injected.Add(1)
				}
				res, err := Run(context.Background(), sc, Options{Balancer: BalancerShardwise, Config: cfg, Concurrency: copies})
				if err != nil {
					t.Fatalf("seed %d (faults %v): run: %v", seed, faults, err)
				}
				moves.Add(int64(res.Moves))
				violations.Add(int64(res.SafetyViolations))
				if res.SafetyViolations != 0 {
					t.Errorf("seed %d (faults %v): %d safety violations: %+v", seed, faults, res.SafetyViolations, res.Violations)
				}
			})
		}
	})
	summary := fmt.Sprintf("fault test: %d seeds, %d faults injected (", seeds, injected.Load())
	for _, k := range faultKinds {
		summary += fmt.Sprintf("%s %d ", k, counts[k].Load())
	}
	summary += fmt.Sprintf("), %d moves, %d safety violations", moves.Load(), violations.Load())
	t.Log(summary)
	fmt.Println(summary)
}
