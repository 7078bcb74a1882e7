package allocation

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shardwise/shardwise/shared/duration"
)

// Config holds every threshold the balancer uses. Zero values are not defaults: start from
// DefaultConfig and override.
type Config struct {
	// QueueLatencyThreshold: a node's estimated WRITE queue latency at or above this is queueing.
	QueueLatencyThreshold duration.Duration `json:"queue_latency_threshold"`
	// HotUtilization: WRITE pool utilization at or above this, together with queueing, is a hotspot.
	HotUtilization float64 `json:"hot_utilization"`
	// SustainedSamples: consecutive samples a node must meet both criteria before it is hot.
	SustainedSamples int `json:"sustained_samples"`
	// SaturatedWithHot: a node whose every WRITE thread is busy and whose queue latency is at or
	// over QueueLatencyThreshold, in a sample in which another node is hot, is hot with it without
	// waiting for the rest of its SustainedSamples: one step in the write load saturates several
	// nodes at once, and relieved in the same cycle their moves fill cluster_concurrent_rebalance,
	// so OpenSearch's balancer starts no return beside the first node's hot copy while its files
	// copy. false: every node waits its SustainedSamples.
	SaturatedWithHot bool `json:"saturated_with_hot"`
	// sampleInterval is the sampling cadence (the configuration's refresh_period), set by the
	// caller with WithSampleInterval: a hot verdict needs its SustainedSamples samples to span the
	// sustain window, (SustainedSamples−1) × sampleInterval less a fifth of an interval, in the
	// cluster's time, however often pushes and alerts ask for a sample. 0 leaves only
	// streakMinStep between samples.
	sampleInterval time.Duration
	// movesPerCycle is the move function's budget of moves per cycle (safety.max_moves_per_cycle),
	// set by the caller with WithMoveBudget: a relief group that would pass it, with the moves
	// planned before it, is not planned, as the move function would refuse it whole. 0: no budget.
	movesPerCycle int
	// movesPerNode is the move function's budget of groups per node and cycle
	// (safety.max_moves_per_node, a swap counting once), set with WithMoveBudget: a relief group
	// through a node the groups planned before it have used up is not planned. 0: no budget.
	movesPerNode int
	// ownInFlight are shardwise's own moves still in flight by its ledger, of every phase, set by
	// the caller with WithOwnInFlight: the move function holds each node one of them relocates
	// from or to (safety.Throttle), so the planner plans no group there (planner.holdOwnInFlight).
	ownInFlight []Moved
	// movesByExclusion: the move function issues moves as index-level allocation exclusions (the
	// allocation-filter strategy, or auto on a cluster that refused _cluster/reroute), set by the
	// caller with WithMovesByExclusion. Excluding a node from an index moves every copy of the
	// index there, so the planner moves no copy whose exclusion would put a second copy of any
	// shard in flight (Exclusions).
	movesByExclusion bool
	// AllocationUtilization: a target whose utilization plus the shard's load would pass this is
	// NOT_PREFERRED by the write-load decider; it is also the level a hot node must get under.
	AllocationUtilization float64 `json:"allocation_utilization"`
	// MinShardWriteLoad: copies busier than this many threads are worth moving; lighter ones relieve
	// nothing and cost a relocation.
	MinShardWriteLoad float64 `json:"min_shard_write_load"`
	// HeapLimit: estimated heap use after a move over this ratio is NO (an OOM is worse than a slow node).
	HeapLimit float64 `json:"heap_limit"`
	// IndexBalanceFactor: a target holding ≥ ceil(ceil(copies/eligible nodes) × factor) copies of the
	// index is NOT_PREFERRED.
	IndexBalanceFactor float64 `json:"index_balance_factor"`
	// DrainWithin: a node whose WRITE queue holds a backlog is relieved until the spare capacity left
	// drains that backlog within this long, not only to AllocationUtilization: at 99 % utilization a
	// full queue takes hours to drain.
	DrainWithin duration.Duration `json:"drain_within"`
	// ColocationEvery: when nothing is hot, at most one index-colocation fix per this period.
	ColocationEvery duration.Duration `json:"colocation_every"`
	// TranslogReplaySpeed: how fast a relocation's target replays, from the source's translog, the
	// operations indexed while the copy's files were copied, in WRITE thread-seconds of indexing
	// replayed a second. A relocation of a copy written at w threads is estimated at bytes/rate for
	// the files, then w × (bytes/rate) / TranslogReplaySpeed for the replay, and relief options are
	// weighed by when their relocations end. 0 leaves the replay out of the estimate. It is the
	// starting figure: once the planner has timed two of its own relocations of copies being
	// written, the speed fitted to them replaces it.
	TranslogReplaySpeed float64 `json:"translog_replay_speed"`
	// ReliefCoolingOff: a kind of relief plan (move, count-swap, swap, chain, bundle) whose moves
	// completed without the hot node's WRITE load falling as projected is not planned on that node
	// again for this long, unless the node's load changed by a fifth of its threads since; 0 tries it
	// again at once.
	ReliefCoolingOff duration.Duration `json:"relief_cooling_off"`
	// TrendWindow: a node at or over HotUtilization keeps its WRITE utilization samples of this
	// long. When they climb steadily (a least-squares line over at least 6 samples spanning half the
	// window, at least 0.5 % a minute, fitting them with R² ≥ 0.8, its later half still climbing, no
	// one step carrying half the rise) and the line reaches saturation within the time relieving the
	// node takes (its first candidate copy's relocation estimate, plus SustainedSamples sampling
	// intervals), the node is relieved before its queue forms. 0 turns this off: nodes are relieved
	// only once hot. Between 1 minute and 1 hour otherwise.
	TrendWindow duration.Duration `json:"trend_window"`
	// SpreadAheadMean: when no node is hot, building a streak or rising, OpenSearch's balancer has
	// no move of its own left to make and nothing else moves, the node with the highest WRITE use
	// (no recovery leaving or entering it), if at 30 % or over and saturated were the cluster's
	// WRITE load to grow evenly until its mean use reached this, is spread ahead of the peak:
	// relieved as a hot node is, judged at the loads of that growth, one node a cycle. A hot copy
	// relocated before the peak replays a fraction of what it replays at it. 0 turns this off;
	// under 1 otherwise.
	SpreadAheadMean float64 `json:"spread_ahead_mean"`
	// BuiltinBalancer models OpenSearch's own count balancer so moves do not invite it to undo them.
	BuiltinBalancer BuiltinBalancer `json:"builtin_balancer"`
	// ExcludedNodes are node names or ids being drained or shut down: nothing is moved onto them.
	ExcludedNodes []string `json:"excluded_nodes,omitempty"`
	// replayLearnedFrom is how many of the planner's own timed relocations TranslogReplaySpeed was
	// fitted to this cycle (withLearnedReplay); 0 when it is the configured figure.
	replayLearnedFrom int
}

// BuiltinBalancer is OpenSearch's BalancedShardsAllocator weight function.
type BuiltinBalancer struct {
	Enabled bool `json:"enabled"`
	// Shard and Index are cluster.routing.allocation.balance.shard / .index, Threshold is
	// cluster.routing.allocation.balance.threshold.
	Shard     float64 `json:"shard"`
	Index     float64 `json:"index"`
	Threshold float64 `json:"threshold"`
}

// WithSampleInterval returns c with the sampling cadence the sustain window is counted in: the
// configuration's refresh_period, or the interval of a run that samples at its own pace.
func (c Config) WithSampleInterval(d time.Duration) Config {
	c.sampleInterval = d
	return c
}

// WithMoveBudget returns c with the move function's budgets of moves per cycle
// (safety.max_moves_per_cycle) and per node (safety.max_moves_per_node), so the planner plans no
// relief group the budgets would refuse.
func (c Config) WithMoveBudget(perCycle, perNode int) Config {
	c.movesPerCycle, c.movesPerNode = perCycle, perNode
	return c
}

// WithOwnInFlight returns c with shardwise's own moves still in flight by its ledger.
func (c Config) WithOwnInFlight(moves []Move) Config {
	c.ownInFlight = nil
	for _, m := range moves {
		c.ownInFlight = append(c.ownInFlight, Moved{Index: m.Index, Shard: m.Shard, From: m.From, To: m.To})
	}
	return c
}

// WithMovesByExclusion returns c planning for moves issued as index-level allocation exclusions
// (on) or as _cluster/reroute commands (off).
func (c Config) WithMovesByExclusion(on bool) Config {
	c.movesByExclusion = on
	return c
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		// 3 s queue latency and 50 % utilization, sustained over 2 samples: after the
		// Elasticsearch Serverless WriteLoadDecider's hotspot criteria.
		QueueLatencyThreshold: duration.Duration(3 * time.Second),
		HotUtilization:        0.5,
		SustainedSamples:      2,
		SaturatedWithHot:      true,
		// 90 %: Elasticsearch's write-load decider high-utilization threshold.
		AllocationUtilization: 0.9,
		// A twentieth of a thread: below that a relocation costs more than it relieves.
		MinShardWriteLoad: 0.05,
		// 85 %: the heap level at which OpenSearch operators conventionally alarm (JVMMemoryPressure).
		HeapLimit: 0.85,
		// 1.5: Elasticsearch Serverless IndexBalanceDecider's allowance over the even spread.
		IndexBalanceFactor: 1.5,
		// 5 minutes: ten 30-second stats periods; queued bulk requests are served well within common
		// client timeouts, and the relief asked of the cluster stays a few moves.
		DrainWithin:     duration.Duration(5 * time.Minute),
		ColocationEvery: duration.Duration(10 * time.Minute),
		// 0.4: the speed make it measured (it/calibration_test.go: 0.407 in its latest run, 0.05 to
		// 0.48 over runs), the simulator's default too: a copy written at 4 threads takes 11 times
		// its file copy to relocate.
		TranslogReplaySpeed: DefaultTranslogReplaySpeed,
		// An hour: as long as a copy is kept off a node it left.
		ReliefCoolingOff: duration.Duration(time.Hour),
		// 5 minutes: ten samples at the 30 s cadence, enough for a line to tell a climb from
		// jitter, and short enough that the climb it sees is the one under way.
		TrendWindow: duration.Duration(5 * time.Minute),
		// 50 %: a node that would saturate while half the cluster's WRITE threads are idle carries
		// twice its share.
		SpreadAheadMean: 0.5,
		// OpenSearch defaults: balance.shard 0.45, balance.index 0.55, balance.threshold 1.0.
		BuiltinBalancer: BuiltinBalancer{Enabled: true, Shard: 0.45, Index: 0.55, Threshold: 1},
	}
}

// DefaultTranslogReplaySpeed is Config.TranslogReplaySpeed's default, in WRITE thread-seconds of
// indexing replayed a second: the planner's prior until it has timed relocations of its own
// (recovery_learn.go). It is the figure `make it` measures on real OpenSearch, the simulator's
// sim.DefaultTranslogReplaySpeed (docs/calibration.md: about 0.23 in four of the last five runs).
const DefaultTranslogReplaySpeed = 0.23

// Upper bounds: past them a value parses but cannot mean what was intended, and the arithmetic on
// it (samples × period, backlog ÷ drain time) stops being meaningful.
const (
	// A queue that waits ten minutes has long since timed out its bulk requests.
	maxQueueLatencyThreshold = duration.Duration(10 * time.Minute)
	// 120 samples at the 30 s cadence is an hour of hotspot before acting.
	maxSustainedSamples = 120
	// An hour: a line over a longer history extrapolates a climb that is long over; the history
	// also holds at most trendMaxSamples samples.
	maxTrendWindow = duration.Duration(time.Hour)
	// A line needs trendMinSamples samples over half the window: at the 30 s cadence, a window
	// under a minute never gets one.
	minTrendWindow = duration.Duration(time.Minute)
	// A day: drain and colocation periods longer than that never act within a working day.
	maxPeriod = duration.Duration(24 * time.Hour)
)

// Validate names every bad field.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("allocation.%s: "+format, append([]any{field}, args...)...))
		}
	}
	check(c.QueueLatencyThreshold > 0 && c.QueueLatencyThreshold <= maxQueueLatencyThreshold,
		"queue_latency_threshold", "%v must be > 0 and at most %v", c.QueueLatencyThreshold, maxQueueLatencyThreshold)
	check(c.HotUtilization > 0 && c.HotUtilization <= 1, "hot_utilization", "%v must be in (0, 1]", c.HotUtilization)
	check(c.SustainedSamples >= 1 && c.SustainedSamples <= maxSustainedSamples,
		"sustained_samples", "%d must be between 1 and %d", c.SustainedSamples, maxSustainedSamples)
	check(c.AllocationUtilization > 0 && c.AllocationUtilization <= 1, "allocation_utilization", "%v must be in (0, 1]", c.AllocationUtilization)
	check(c.MinShardWriteLoad >= 0, "min_shard_write_load", "%v must be ≥ 0", c.MinShardWriteLoad)
	check(c.HeapLimit > 0 && c.HeapLimit <= 1, "heap_limit", "%v must be in (0, 1]", c.HeapLimit)
	check(c.IndexBalanceFactor >= 1, "index_balance_factor", "%v must be ≥ 1", c.IndexBalanceFactor)
	check(c.DrainWithin > 0 && c.DrainWithin <= maxPeriod, "drain_within", "%v must be > 0 and at most %v", c.DrainWithin, maxPeriod)
	check(c.TranslogReplaySpeed >= 0 && !math.IsInf(c.TranslogReplaySpeed, 0), "translog_replay_speed",
		"%v must be ≥ 0 (0: the replay is not estimated)", c.TranslogReplaySpeed)
	check(c.ColocationEvery >= 0 && c.ColocationEvery <= maxPeriod, "colocation_every", "%v must be between 0 and %v", c.ColocationEvery, maxPeriod)
	check(c.ReliefCoolingOff >= 0 && c.ReliefCoolingOff <= maxPeriod, "relief_cooling_off", "%v must be between 0 and %v", c.ReliefCoolingOff, maxPeriod)
	check(c.TrendWindow == 0 || c.TrendWindow >= minTrendWindow && c.TrendWindow <= maxTrendWindow, "trend_window",
		"%v must be 0 (off) or between %v and %v", c.TrendWindow, minTrendWindow, maxTrendWindow)
	check(c.SpreadAheadMean >= 0 && c.SpreadAheadMean < 1, "spread_ahead_mean", "%v must be 0 (off) or in (0, 1)", c.SpreadAheadMean)
	if c.BuiltinBalancer.Enabled {
		check(c.BuiltinBalancer.Shard >= 0 && c.BuiltinBalancer.Index >= 0 && c.BuiltinBalancer.Shard+c.BuiltinBalancer.Index > 0,
			"builtin_balancer", "weights shard=%v index=%v must be ≥ 0 and not both 0", c.BuiltinBalancer.Shard, c.BuiltinBalancer.Index)
		check(c.BuiltinBalancer.Threshold > 0, "builtin_balancer.threshold", "%v must be > 0", c.BuiltinBalancer.Threshold)
	}
	return errors.Join(errs...)
}
