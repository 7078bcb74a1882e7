package sway

import (
	"fmt"
	"strings"
)

// Check is one circuit-breaker check with its measured value and its limit, as Sway logs them.
type Check struct {
	Name     string `json:"name"`
	Passed   bool   `json:"passed"`
	Measured string `json:"measured"`
	Limit    string `json:"limit"`
}

// BreakerResult is one evaluation: the circuit is open, and the cycle aborted, when any check failed.
type BreakerResult struct {
	Open   bool    `json:"open"`
	Checks []Check `json:"checks"`
}

// Reason names the failed checks, as Sway's Result.Reason does; empty when the circuit is closed.
func (b BreakerResult) Reason() string {
	var failed []string
	for _, c := range b.Checks {
		if !c.Passed {
			failed = append(failed, fmt.Sprintf("%s %s (limit %s)", c.Name, c.Measured, c.Limit))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return "failed checks: " + strings.Join(failed, ", ")
}

// healthRank orders health from worst to best (circuitbreaker.healthSatisfies).
var healthRank = map[string]int{"red": 0, "yellow": 1, "green": 2}

// evaluate is Sway's CircuitBreaker.Evaluate: health, latency and relocations, each checked every
// cycle afresh, with no half-open state.
func (c Config) evaluate(health string, latencyMs float64, relocating int) BreakerResult {
	actual := strings.ToLower(health)
	required := strings.ToLower(c.RequiredHealth)
	a, aok := healthRank[actual]
	r, rok := healthRank[required]
	checks := []Check{
		{Name: "cluster health", Passed: aok && rok && a >= r, Measured: actual, Limit: ">= " + required},
		// Sway's README says the latency must be below 200 ms; its checkLatency passes at the limit
		// too (lat <= MaxAvgLatencyMs), and the code is what is ported.
		{Name: "avg search latency", Passed: latencyMs <= c.MaxAvgSearchLatencyMs,
			Measured: fmt.Sprintf("%.1fms", latencyMs), Limit: fmt.Sprintf("<= %.0fms", c.MaxAvgSearchLatencyMs)},
		{Name: "relocating shards", Passed: relocating <= c.MaxRelocatingShards,
			Measured: fmt.Sprint(relocating), Limit: fmt.Sprintf("<= %d", c.MaxRelocatingShards)},
	}
	res := BreakerResult{Checks: checks}
	for _, ch := range checks {
		if !ch.Passed {
			res.Open = true
		}
	}
	return res
}
