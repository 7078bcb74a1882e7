// Package sway is the Sway rebalancer (github.com/joshuabvarghese/Sway), a baseline shardwise is
// measured against: each cycle a circuit breaker on health, mean search latency and relocations in
// flight, then at most a few moves of the largest shards off the nodes whose weighted score of heap,
// disk and shard count is hot, to the coolest node, until the spread of scores falls by a target
// fraction. It is the decision only, ported from Sway's internal/circuitbreaker/breaker.go
// (CircuitBreaker.Evaluate) and internal/rebalancer/target.go (TargetStateGenerator.Generate); the
// runner reads the cluster and issues the moves.
package sway

import (
	"errors"
	"fmt"
)

// Config is Sway's configuration: the agent's score weights and hot threshold, the rebalancer's cycle
// limits and the circuit breaker's thresholds.
type Config struct {
	// HotNodeThreshold: a node whose hot score is at or over it is hot, and its shards are candidates.
	HotNodeThreshold float64
	// HeapWeight, DiskWeight and ShardWeight weigh heap used, disk used (fractions) and shard count
	// over the largest shard count of any data node in the hot score.
	HeapWeight  float64
	DiskWeight  float64
	ShardWeight float64
	// MaxMovesPerCycle caps the moves one cycle plans.
	MaxMovesPerCycle int
	// SkewReductionTarget: planning stops once the projected spread of hot scores is this fraction
	// below the cycle's starting spread.
	SkewReductionTarget float64
	// TargetDiskLimit: a destination whose shard bytes with the moved shard would reach this fraction
	// of its disk is skipped.
	TargetDiskLimit float64
	// RequiredHealth is the worst health a cycle may act at: green, yellow or red.
	RequiredHealth string
	// MaxAvgSearchLatencyMs is the mean search latency over data nodes above which a cycle aborts.
	MaxAvgSearchLatencyMs float64
	// MaxRelocatingShards is the number of relocating copies above which a cycle aborts.
	MaxRelocatingShards int
}

// Default returns Sway's factory defaults, from internal/config/config.go (Default). Sway's own
// config.json in the repository root overrides hot_node_threshold to 0.30; its README and Default
// give 0.70, which is what runs when no file is given. LargeShardThresholdBytes (2 GiB) is left out:
// Sway declares it but TargetStateGenerator never reads it, every shard on a hot node is a candidate.
func Default() Config {
	return Config{
		HotNodeThreshold: 0.70,
		HeapWeight:       0.40,
		DiskWeight:       0.40,
		ShardWeight:      0.20,
		MaxMovesPerCycle: 5,
		// 25 % of the cycle's starting skew.
		SkewReductionTarget: 0.25,
		// findTarget's hard-coded 90 %.
		TargetDiskLimit:       0.90,
		RequiredHealth:        "green",
		MaxAvgSearchLatencyMs: 200,
		MaxRelocatingShards:   0,
	}
}

// ErrInvalidConfig is what Validate's errors match.
var ErrInvalidConfig = errors.New("invalid sway config")

// Validate names every bad field.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.HeapWeight < 0 || c.DiskWeight < 0 || c.ShardWeight < 0 || c.HeapWeight+c.DiskWeight+c.ShardWeight <= 0 {
		bad("weights heap %v, disk %v, shards %v: must be ≥ 0 and not all 0", c.HeapWeight, c.DiskWeight, c.ShardWeight)
	}
	if c.HotNodeThreshold <= 0 {
		bad("hot_node_threshold %v: must be > 0", c.HotNodeThreshold)
	}
	if c.MaxMovesPerCycle < 1 {
		bad("max_moves_per_cycle %d: must be ≥ 1", c.MaxMovesPerCycle)
	}
	if c.SkewReductionTarget <= 0 || c.SkewReductionTarget > 1 {
		bad("skew_reduction_target %v: must be in (0, 1]", c.SkewReductionTarget)
	}
	if c.TargetDiskLimit <= 0 || c.TargetDiskLimit > 1 {
		bad("target disk limit %v: must be in (0, 1]", c.TargetDiskLimit)
	}
	if _, ok := healthRank[c.RequiredHealth]; !ok {
		bad("required_health %q: must be green, yellow or red", c.RequiredHealth)
	}
	if c.MaxAvgSearchLatencyMs <= 0 {
		bad("max_avg_latency_ms %v: must be > 0", c.MaxAvgSearchLatencyMs)
	}
	if c.MaxRelocatingShards < 0 {
		bad("max_relocating_shards %d: must be ≥ 0", c.MaxRelocatingShards)
	}
	return errors.Join(errs...)
}
