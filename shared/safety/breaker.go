// Package safety holds what stands between a decision and a cluster: the circuit breaker checked
// before every cycle, the move budgets, and the dry-run guard. A failing check aborts the whole cycle.
package safety

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/size"
)

// Config is the breaker's limits and the budgets.
type Config struct {
	// DryRun plans and logs without touching the cluster. On unless explicitly turned off.
	DryRun bool `json:"dry_run"`
	// RequiredHealth is the worst cluster health acting is allowed at: green (default) or yellow.
	RequiredHealth string `json:"required_health"`
	// MaxRelocating and MaxInitializing are optional fixed caps on the copies relocating and
	// initializing anywhere in the cluster; -1 (the default) means no fixed cap, and 0 acts only on a
	// settled cluster. What is in flight is otherwise limited by what it protects against: shardwise's
	// own moves (MaxOwnMovesInFlight) and the cluster's own recovery limits, read from its settings.
	MaxRelocating   int `json:"max_relocating"`
	MaxInitializing int `json:"max_initializing"`
	// MaxOwnMovesInFlight: shardwise's moves issued and still relocating, from its ledger. Whatever
	// the limit, a node with one of them in flight takes no other move until it lands, so its effect
	// is measured first; 0 waits for every move to land before the next anywhere. A swap's staged
	// return, issued once its hot copy's files are copied, completes that move's own swap: it goes
	// through that hold, and past this limit.
	MaxOwnMovesInFlight int `json:"max_own_moves_in_flight"`
	// MaxSearchLatency is the mean query time across data nodes above which nothing is moved.
	MaxSearchLatency duration.Duration `json:"max_search_latency"`
	// MaxStatsAge: stats older than this (2 refresh periods) are too stale to act on.
	MaxStatsAge duration.Duration `json:"max_stats_age"`
	// MaxMovesPerNode: moves from or to one node in a cycle (a swap counts once); a budget, like
	// the two below.
	MaxMovesPerNode int `json:"max_moves_per_node"`
	// MaxMovesPerCycle: moves issued in one cycle, across the cluster.
	MaxMovesPerCycle int `json:"max_moves_per_cycle"`
	// MaxBytesPerCycle: the bytes the moves of one cycle may copy ("100GiB", or a number of bytes).
	MaxBytesPerCycle size.Bytes `json:"max_bytes_per_cycle"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		DryRun:         true,
		RequiredHealth: "green",
		// A growing cluster rebalances for hours; a fixed cap on any relocation would stop shardwise
		// for all of that time. The cluster's own limits apply instead (Inputs.Recoveries).
		MaxRelocating:   Unlimited,
		MaxInitializing: Unlimited,
		// As many as one cycle may issue: a relocation outlasts the 30 s cycle (5 GiB at 40 MiB/s
		// takes two minutes), and one per node is held back by Throttle.
		MaxOwnMovesInFlight: 4,
		// 200 ms: Sway's default max_avg_latency_ms.
		MaxSearchLatency: duration.Duration(200 * time.Millisecond),
		// Two 30 s stats refresh periods.
		MaxStatsAge: duration.Duration(60 * time.Second),
		// One move per hot node per refresh period (Elasticsearch Serverless); a swap counts once per node.
		MaxMovesPerNode:  1,
		MaxMovesPerCycle: 4,
		// 100 GiB: at OpenSearch's default 40 MiB/s recovery rate about 42 minutes of copying.
		MaxBytesPerCycle: 100 << 30,
	}
}

// Upper bounds of the breaker's settings: past them a value parses but cannot be meant.
const (
	// maxCount bounds every count of moves or recoveries: no cluster relocates more shards at
	// once (OpenSearch's own cluster_concurrent_rebalance default is 2).
	maxCount = 10_000
	// maxWait bounds the latency and staleness limits: older stats describe another cluster.
	maxWait = duration.Duration(time.Hour)
	// maxBytesPerCycle: 1 PiB, past any cluster's total data.
	maxBytesPerCycle = 1 << 50
)

// Validate names every bad field.
func (c Config) Validate() error {
	var errs []error
	if healthRank(c.RequiredHealth) < 0 || c.RequiredHealth == "red" {
		errs = append(errs, fmt.Errorf("safety.required_health: %q must be green or yellow", c.RequiredHealth))
	}
	if c.MaxRelocating < Unlimited {
		errs = append(errs, fmt.Errorf("safety.max_relocating: %d must be ≥ 0, or -1 for no fixed cap", c.MaxRelocating))
	}
	if c.MaxInitializing < Unlimited {
		errs = append(errs, fmt.Errorf("safety.max_initializing: %d must be ≥ 0, or -1 for no fixed cap", c.MaxInitializing))
	}
	if c.MaxRelocating > maxCount || c.MaxInitializing > maxCount {
		errs = append(errs, fmt.Errorf("safety.max_relocating/max_initializing: %d/%d must be at most %d", c.MaxRelocating, c.MaxInitializing, maxCount))
	}
	if c.MaxOwnMovesInFlight < 0 || c.MaxOwnMovesInFlight > maxCount {
		errs = append(errs, fmt.Errorf("safety.max_own_moves_in_flight: %d must be between 0 and %d", c.MaxOwnMovesInFlight, maxCount))
	}
	if err := duration.InRange(c.MaxSearchLatency, 1, maxWait); err != nil {
		errs = append(errs, fmt.Errorf("safety.max_search_latency: %w", err))
	}
	if err := duration.InRange(c.MaxStatsAge, 1, maxWait); err != nil {
		errs = append(errs, fmt.Errorf("safety.max_stats_age: %w", err))
	}
	if c.MaxMovesPerNode < 1 || c.MaxMovesPerNode > maxCount {
		errs = append(errs, fmt.Errorf("safety.max_moves_per_node: %d must be between 1 and %d", c.MaxMovesPerNode, maxCount))
	}
	if c.MaxMovesPerCycle < 1 || c.MaxMovesPerCycle > maxCount {
		errs = append(errs, fmt.Errorf("safety.max_moves_per_cycle: %d must be between 1 and %d", c.MaxMovesPerCycle, maxCount))
	}
	if c.MaxBytesPerCycle <= 0 || c.MaxBytesPerCycle > maxBytesPerCycle {
		errs = append(errs, fmt.Errorf("safety.max_bytes_per_cycle: %d must be > 0 and at most %d (1 PiB)", c.MaxBytesPerCycle, int64(maxBytesPerCycle)))
	}
	return errors.Join(errs...)
}

// Unlimited turns a fixed cap off, as -1 does for OpenSearch's cluster_concurrent_rebalance.
const Unlimited = -1

// Inputs are the measured values the breaker checks, read fresh just before acting.
type Inputs struct {
	// Reachable is the error of the fresh health call, nil when OpenSearch answered.
	Reachable error
	Health    string
	// Relocating and Initializing are the cluster's counts from its health.
	Relocating   int
	Initializing int
	// OwnInFlight is shardwise's moves still relocating, from its ledger checked against the fresh
	// routing table; OwnKnown is false where the caller does not move shards (replica changes).
	OwnInFlight int
	OwnKnown    bool
	// Recoveries are the cluster's recoveries in flight and its limits on them.
	Recoveries      Recoveries
	SearchLatencyMs float64
	LatencyKnown    bool
	// LatencyExempt skips the latency check for an action that cures slow searches rather than
	// adding to them: a replica change.
	LatencyExempt bool
	StatsAge      time.Duration
	// PrimariesLost are the shards with no active copy left (LostPrimaries): a red cluster no
	// move or replica can repair.
	PrimariesLost []string
}

// CheckPrimaryLost names the check that fails when a shard has no copy left.
const CheckPrimaryLost = "primary_lost"

// CheckOwnInFlight names the check on shardwise's own moves still relocating.
const CheckOwnInFlight = "own_moves_in_flight"

// LostPrimaries lists, as index[shard], the shards of snap of which no copy is active (STARTED or
// RELOCATING): their data is on no node in the cluster.
func LostPrimaries(snap *cluster.Snapshot) []string {
	active := map[cluster.ShardID]bool{}
	for i := range snap.Copies {
		if snap.Copies[i].Active() {
			active[snap.Copies[i].ID()] = true
		}
	}
	var lost []string
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.Primary && !active[c.ID()] && c.State == cluster.StateUnassigned {
			lost = append(lost, fmt.Sprintf("%s[%d]", c.Index, c.Shard))
		}
	}
	return lost
}

// Check is one breaker check with its measured value and its limit.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Value  string `json:"value"`
	Limit  string `json:"limit"`
	Reason string `json:"reason"`
}

// Verdict is the breaker's answer: Closed lets the cycle act; any failing check opens it.
type Verdict struct {
	Closed bool    `json:"closed"`
	Checks []Check `json:"checks"`
}

// Failed returns the failing checks.
func (v Verdict) Failed() []Check {
	var out []Check
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Reason is one sentence naming every failing check, or saying the breaker is closed.
func (v Verdict) Reason() string {
	f := v.Failed()
	if len(f) == 0 {
		return "circuit breaker closed: every check passed"
	}
	s := "circuit breaker open:"
	for i, c := range f {
		if i > 0 {
			s += ";"
		}
		s += " " + c.Reason
	}
	return s
}

// CompletionsOnly reports whether the breaker is open only because shardwise's own moves in
// flight are at their limit (CheckOwnInFlight). Moves that complete a swap already under way (a
// staged return, allocation.PhaseStagedReturn) may still go then: the swap's hot move counted
// against the limit when it was issued, and leaving its return unissued leaves the shard counts
// uneven for OpenSearch's balancer, which would even them by moving a copy of its choosing.
func (v Verdict) CompletionsOnly() bool {
	f := v.Failed()
	return len(f) == 1 && f[0].Name == CheckOwnInFlight && f[0].Value != "not read"
}

// OperatorActionNeeded reports whether the breaker is open because a shard has no copy left.
func (v Verdict) OperatorActionNeeded() bool {
	for _, c := range v.Failed() {
		if c.Name == CheckPrimaryLost {
			return true
		}
	}
	return false
}

// Evaluate runs every check. It never short-circuits, so the log shows every value and limit.
func Evaluate(in Inputs, cfg Config) Verdict {
	var checks []Check
	add := func(name string, ok bool, value, limit, reason string) {
		checks = append(checks, Check{Name: name, OK: ok, Value: value, Limit: limit, Reason: reason})
	}
	if in.Reachable != nil {
		add("reachable", false, "unreachable", "reachable", fmt.Sprintf("OpenSearch unreachable: %v", in.Reachable))
	} else {
		add("reachable", true, "reachable", "reachable", "OpenSearch answered")
	}
	if n := len(in.PrimariesLost); n > 0 {
		// First, so that the breaker's reason leads with it: waiting does not cure this.
		shown := in.PrimariesLost[:min(n, 5)]
		add(CheckPrimaryLost, false, fmt.Sprint(n), "0", fmt.Sprintf(
			"operator action needed: %d shards have no copy left (%s): no move or replica restores them; bring their node back, restore them from a snapshot, or allocate a stale or empty primary",
			n, strings.Join(shown, ", ")))
	}
	hr, lr := healthRank(in.Health), healthRank(cfg.RequiredHealth)
	add("health", in.Reachable == nil && hr >= 0 && hr <= lr, in.Health, cfg.RequiredHealth,
		fmt.Sprintf("cluster health %q, required %q or better", in.Health, cfg.RequiredHealth))
	fixedCap := func(name, what string, n, limit int) {
		if limit == Unlimited {
			add(name, in.Reachable == nil, fmt.Sprint(n), "none",
				fmt.Sprintf("%d shards %s, no fixed cap (safety.max_%s -1)", n, what, name))
			return
		}
		add(name, in.Reachable == nil && n <= limit, fmt.Sprint(n), fmt.Sprint(limit),
			fmt.Sprintf("%d shards %s, limit %d", n, what, limit))
	}
	fixedCap("relocating", "relocating", in.Relocating, cfg.MaxRelocating)
	fixedCap("initializing", "initializing", in.Initializing, cfg.MaxInitializing)
	if in.OwnKnown {
		add(CheckOwnInFlight, in.Reachable == nil && in.OwnInFlight <= cfg.MaxOwnMovesInFlight, fmt.Sprint(in.OwnInFlight), fmt.Sprint(cfg.MaxOwnMovesInFlight),
			fmt.Sprintf("%d of shardwise's moves still relocating, limit %d", in.OwnInFlight, cfg.MaxOwnMovesInFlight))
	} else {
		add(CheckOwnInFlight, in.Reachable == nil, "not read", fmt.Sprint(cfg.MaxOwnMovesInFlight),
			"shardwise's own moves not read: this action moves no shard")
	}
	checks = append(checks, in.Recoveries.checks(in.Reachable == nil)...)
	limitMs := float64(cfg.MaxSearchLatency.Std()) / float64(time.Millisecond)
	switch {
	case in.LatencyExempt:
		add("search_latency", true, "exempt", fmt.Sprintf("%.0fms", limitMs), "not checked: this action cures slow searches")
	case in.LatencyKnown:
		add("search_latency", in.SearchLatencyMs < limitMs, fmt.Sprintf("%.1fms", in.SearchLatencyMs), fmt.Sprintf("%.0fms", limitMs),
			fmt.Sprintf("mean search latency %.1f ms, limit %.0f ms", in.SearchLatencyMs, limitMs))
	default:
		// Fail closed: a cluster whose search latency cannot be read (no node has two samples) is
		// not known to be safe to load with relocations.
		add("search_latency", false, "unknown", fmt.Sprintf("%.0fms", limitMs), "mean search latency unknown (no data node has two samples yet): not acting blind")
	}
	add("stats_fresh", in.StatsAge >= 0 && in.StatsAge <= cfg.MaxStatsAge.Std(), in.StatsAge.Round(time.Second).String(), cfg.MaxStatsAge.String(),
		fmt.Sprintf("stats are %s old, limit %s", in.StatsAge.Round(time.Second), cfg.MaxStatsAge))
	v := Verdict{Closed: true, Checks: checks}
	for _, c := range checks {
		if !c.OK {
			v.Closed = false
		}
	}
	return v
}

func healthRank(h string) int {
	switch h {
	case "green":
		return 0
	case "yellow":
		return 1
	case "red":
		return 2
	}
	return -1
}
