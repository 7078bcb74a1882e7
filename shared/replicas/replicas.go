// Package replicas decides how many copies of each index should serve searches, from the index's
// share of the cluster's search load. It is pure: inputs and stored memory in, decisions with
// their reasons and the memory to store out; no I/O and no clock reads.
//
// The formula comes from Elastic's "replicas for search load balancing" (Serverless):
//
//	desired copies = min(ceil(L × N / (S × X)), N)
//
// with L the index's share of search load (0..1), N the nodes that may hold its copies, S its
// primaries and X the planned use of each copy (0.5). Serverless applies it to a search tier whose
// nodes hold nothing but searchable copies. Stateful OpenSearch has no such tier by default, so
// shardwise maps it as follows:
//
//   - Default mode (index.number_of_replicas): every copy, primary included, serves searches, so
//     copies = 1 + number_of_replicas and N is the count of data nodes the index may be allocated
//     to. number_of_replicas = copies − 1, never above N − 1 (a replica with no node of its own
//     stays unassigned) and never below the index's minimum: its replicas when first seen, at
//     least Config.DefaultMin, unless an override sets it.
//   - Search-replica mode (Config.UseSearchReplicas, OpenSearch 3.x index.number_of_search_replicas):
//     with reader/writer separation, searches go to search replicas only, which live on dedicated
//     search nodes; that is the search tier of Elastic's "Elasticsearch replicas for load balancing in Serverless" blog. Copies are then search replicas alone, so
//     number_of_search_replicas = copies, N is the count of search nodes, the maximum is N and the
//     minimum is 0 (with no search replica OpenSearch routes searches to the primary and its
//     replicas again), unless an override sets it.
//
// Timing follows that blog: scale up at once; scale down only after a lower target has been seen
// on every cycle for Config.ScaleDownAfter, and then to the highest target seen in that window.
//
// Stateful OpenSearch adds three rules the blog's autoscaled search tier does not need:
//
//   - Need. The formula only gives a ceiling; copies are added only while the search pools of the
//     nodes holding the index's copies are at least Config.NeedUtilization busy, so more copies
//     lower latency. An index whose own load would keep the pools of its floor under that
//     threshold (or any index of an idle cluster) wants its floor: its scale-down window advances
//     on quiet cycles too, instead of restarting.
//   - Placement. The maximum is what OpenSearch can assign (IndexInput.MaxCopies), not only N.
//   - Departures. When the count exceeds the maximum because nodes left, the cap waits for
//     index.unassigned.node_left.delayed_timeout: OpenSearch keeps the departed node's copies for
//     it that long, and a rolling restart must not cost a full copy per node.
package replicas

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Decision kinds.
const (
	KindScaleUp          = "scale-up"
	KindScaleDown        = "scale-down"
	KindCap              = "cap"
	KindPendingCap       = "pending-cap"
	KindHold             = "hold"
	KindPendingScaleDown = "pending-scale-down"
	KindSkip             = "skip"
)

// Index settings a decision changes.
const (
	SettingReplicas       = "index.number_of_replicas"
	SettingSearchReplicas = "index.number_of_search_replicas"
)

// IndexInput is what Decide needs to know about one index this cycle.
type IndexInput struct {
	Name           string
	Primaries      int
	Replicas       int
	SearchReplicas int
	// SearchLoad is the search threads the index keeps busy (query + fetch time per second,
	// summed over its shard copies).
	SearchLoad float64
	// EligibleNodes is N: the nodes that may hold the index's copies (data nodes after allocation
	// filters, or search nodes in search-replica mode).
	EligibleNodes int
	Hidden        bool
	// LoadKnown is false when the load could not be measured this cycle (first sample, counter
	// reset); the index then holds, except for caps and minimums.
	LoadKnown bool
	// ExtraCopiesAllowed is how many more shard copies the nodes can take; -1 means unlimited.
	// In stateful OpenSearch every replica indexes every document, so besides disk under the
	// high watermark the caller counts WRITE pool room: Limiter names what limits it.
	ExtraCopiesAllowed int
	Limiter            string

	// PoolThreads and PoolLoad are the search threads, and those busy (all indices), of the
	// distinct nodes holding the index's active copies; CopyNodes counts those nodes. PoolThreads 0
	// means unknown: the need check is then skipped and the formula alone decides.
	PoolThreads int
	PoolLoad    float64
	CopyNodes   int
	// NodeSearchThreads is the mean search pool size of the eligible nodes, for projections; 0
	// when unknown.
	NodeSearchThreads float64
	// MaxCopies is how many copies of each shard OpenSearch can assign on the eligible nodes after
	// total_shards_per_node, awareness and same_shard.host (see MaxCopies); 0 means N. MaxWhy
	// names the rule that set it.
	MaxCopies int
	MaxWhy    string
	// DelayedTimeout is the index's index.unassigned.node_left.delayed_timeout; DelayedTimeoutSet
	// false means it was not read and Config.NodeLeftDelay applies.
	DelayedTimeout    time.Duration
	DelayedTimeoutSet bool
	// WriteLoadPerCopy (busy WRITE threads a new copy adds) and CopyBytes (bytes a new copy
	// recovers) price a change in its reason.
	WriteLoadPerCopy float64
	CopyBytes        int64
}

// Memory is what Decide remembers about an index between cycles. The caller stores it as is.
type Memory struct {
	Index             string `json:"index"`
	FirstSeenReplicas int    `json:"first_seen_replicas"`
	// LowerSince is when the target first fell below the current count (on every cycle since);
	// zero when no scale-down
	// is pending.
	LowerSince time.Time `json:"lower_since,omitzero"`
	// WindowMax is the highest target seen in the last ScaleDownAfter, what a scale-down lowers to.
	WindowMax int `json:"window_max,omitempty"`
	// Recent holds the targets of the last ScaleDownAfter as a sliding maximum: times rising,
	// targets falling, each the last time a target at least that high was seen.
	Recent []Seen `json:"recent,omitempty"`
	// OverSince is when the count was first seen above the topology maximum (nodes gone); zero
	// while it is not.
	OverSince  time.Time `json:"over_since,omitzero"`
	LastChange time.Time `json:"last_change,omitzero"`
	LastReason string    `json:"last_reason,omitempty"`
}

// Seen is a target in the sliding window of recent targets. The last entry of the window is the
// current target, and At is when it became current; every earlier entry was current until At, the
// last cycle it (or a higher one) was seen. A cycle that sees the current target again changes
// nothing, so a steady index's memory is not rewritten every cycle.
type Seen struct {
	At     time.Time `json:"at"`
	Target int       `json:"target"`
}

// see records this cycle's target and forgets what fell out of the window [now-window, now]. It
// returns a new slice: recent is the memory the caller read, which the caller compares with the
// result and may restore, so it must stay as it was.
func see(recent []Seen, now time.Time, target int, window time.Duration) []Seen {
	n := len(recent)
	keep := n
	for keep > 0 && recent[keep-1].Target < target {
		keep--
	}
	same := keep > 0 && recent[keep-1].Target == target
	out := make([]Seen, 0, keep+1)
	out = append(out, recent[:keep]...)
	if !same {
		if keep == n && n > 0 {
			// The current target is superseded by a lower one: it was current until just before
			// this cycle. (The memory does not keep the cycle before, which is the same at a
			// steady cadence; after cycles without a measurement the window holds the higher
			// target longer, on the side of keeping copies.)
			out[n-1].At = now.Add(-time.Nanosecond)
		}
		out = append(out, Seen{At: now, Target: target})
	}
	from := 0
	for from < len(out)-1 && out[from].At.Before(now.Add(-window)) {
		from++
	}
	return out[from:]
}

// lastAtLeast is the last time a target of at least n was seen in recent (now for the current
// target); zero if none was.
func lastAtLeast(recent []Seen, n int, now time.Time) time.Time {
	var at time.Time
	for i, r := range recent {
		if r.Target < n {
			continue
		}
		at = r.At
		if i == len(recent)-1 {
			at = now
		}
	}
	return at
}

// Decision is the verdict for one index, with every number behind it.
type Decision struct {
	Index   string `json:"index"`
	Setting string `json:"setting"`
	From    int    `json:"from"`
	To      int    `json:"to"`
	// Desired is this cycle's target for the setting, after the min and max clamps.
	Desired int     `json:"desired"`
	L       float64 `json:"l"`
	N       int     `json:"n"`
	S       int     `json:"s"`
	X       float64 `json:"x"`
	Min     int     `json:"min"`
	Max     int     `json:"max"`
	Kind    string  `json:"kind"`
	// Reason is one sentence with the numbers; the CLI, the events and the logs all print it.
	Reason       string    `json:"reason"`
	PendingSince time.Time `json:"pending_since,omitzero"`
	ScaleDownAt  time.Time `json:"scale_down_at,omitzero"`
	// Deferred marks a change left for a later cycle by Config.MaxIndicesPerCycle.
	Deferred bool `json:"deferred,omitempty"`
	// Ceiling is the formula's target (clamped) before the need check; Utilization is the
	// measured search utilization of the pools holding the index's copies (-1: unknown).
	Ceiling     int     `json:"ceiling"`
	Utilization float64 `json:"utilization"`
	Cost        Cost    `json:"cost"`
}

// Cost is what a change costs and buys, for its reason and for whoever reads the decision.
type Cost struct {
	// Copies is the shard copies added (positive) or removed (negative).
	Copies int `json:"copies"`
	// WriteThreads is the WRITE pool threads those copies keep busy indexing (added or freed).
	WriteThreads float64 `json:"write_threads"`
	// Bytes is what the new copies recover over the network (0 on a scale-down).
	Bytes int64 `json:"bytes"`
	// UtilizationBefore and UtilizationAfter project the index's own search load over the search
	// threads of the nodes its copies would occupy; -1 when node pool sizes are unknown.
	UtilizationBefore float64 `json:"utilization_before"`
	UtilizationAfter  float64 `json:"utilization_after"`
	// PerCopyBefore and PerCopyAfter are the search threads each copy keeps busy, the load spread
	// evenly over the copies.
	PerCopyBefore float64 `json:"per_copy_before"`
	PerCopyAfter  float64 `json:"per_copy_after"`
}

// IsChange reports whether the decision changes the index's setting.
func (d Decision) IsChange() bool {
	return d.Kind == KindScaleUp || d.Kind == KindScaleDown || d.Kind == KindCap
}

// roundingSlack absorbs float error in L × N / (S × X): shares are ratios of measured rates, and
// an exact multiple such as 2.0000000000000004 must not round up to a copy nobody asked for.
const roundingSlack = 1e-9

// Copies is the blog's formula alone: min(ceil(L × N / (S × X)), N) with L = share,
// N = nodes, S = primaries and X = x. The share is clamped to 0..1; a non-positive nodes,
// primaries or x yields 0.
func Copies(share float64, nodes, primaries int, x float64) int {
	if nodes <= 0 || primaries <= 0 || !(x > 0) || math.IsNaN(share) {
		return 0
	}
	share = min(max(share, 0), 1)
	c := math.Ceil(share*float64(nodes)/(float64(primaries)*x) - roundingSlack)
	return int(min(max(c, 0), float64(nodes)))
}

// Decide makes one decision per index in `in` (returned in input order in all), picks the changes
// to apply this cycle (at most cfg.MaxIndicesPerCycle, most urgent first: caps, then the largest
// scale-ups, then scale-downs), and returns the memory to store assuming those changes are applied.
// next holds entries only for indices in `in`, so deleted indices are forgotten. cfg must have
// passed Validate.
func Decide(now time.Time, in []IndexInput, mem map[string]Memory, cfg Config) (changes []Decision, all []Decision, next map[string]Memory) {
	total := totalSearchLoad(in)
	// Idle needs a measurement: a cycle where no index's load is known says nothing.
	idle := total < cfg.MinTotalSearchLoad && slices.ContainsFunc(in, func(ix IndexInput) bool { return ix.LoadKnown })
	all = make([]Decision, 0, len(in))
	held := make([]Memory, 0, len(in)) // memory when the index's change is not applied
	next = make(map[string]Memory, len(in))
	for _, ix := range in {
		m, seen := mem[ix.Name]
		d, m, keep := decideIndex(now, ix, m, seen, total, idle, cfg)
		all = append(all, d)
		held = append(held, m)
		if keep {
			next[ix.Name] = m
		}
	}

	var picks []int
	for i, d := range all {
		if d.IsChange() {
			picks = append(picks, i)
		}
	}
	slices.SortStableFunc(picks, func(a, b int) int { return urgency(all[a], all[b]) })
	for rank, i := range picks {
		if rank >= cfg.MaxIndicesPerCycle {
			all[i].Deferred = true
			all[i].Reason = strings.TrimSuffix(all[i].Reason, ".") +
				fmt.Sprintf("; deferred: this cycle's %d changes went to more urgent indices.", cfg.MaxIndicesPerCycle)
			continue
		}
		changes = append(changes, all[i])
		next[all[i].Index] = applied(held[i], all[i], now)
	}
	return changes, all, next
}

// urgency orders changes: caps first (unassignable copies), then scale-ups by copies added
// (searches are queueing now), then scale-downs by copies removed (only saves money); names break
// ties so the order is deterministic.
func urgency(a, b Decision) int {
	rank := func(d Decision) int {
		switch d.Kind {
		case KindCap:
			return 0
		case KindScaleUp:
			return 1
		default:
			return 2
		}
	}
	size := func(d Decision) int {
		if d.To > d.From {
			return d.To - d.From
		}
		return d.From - d.To
	}
	return cmp.Or(
		cmp.Compare(rank(a), rank(b)),
		cmp.Compare(size(b), size(a)),
		strings.Compare(a.Index, b.Index),
	)
}

// applied is the memory after a change is made: a pending window for the new count starts after
// the last cycle whose target was at least that count.
func applied(m Memory, d Decision, now time.Time) Memory {
	m.LastChange = now
	m.LastReason = d.Reason
	m.OverSince = time.Time{}
	if d.Desired >= d.To {
		m.LowerSince, m.WindowMax = time.Time{}, 0
		return m
	}
	// The target is below the new count (a cap, or a scale-down to the window's highest target):
	// a further scale-down needs every cycle of a whole ScaleDownAfter below the new count.
	switch last := lastAtLeast(m.Recent, d.To, now); {
	case !last.IsZero():
		m.LowerSince = last.Add(time.Nanosecond)
	case m.LowerSince.IsZero():
		m.LowerSince = now
	}
	return m
}

// totalSearchLoad sums the measured search load of every index, system and excluded ones included:
// they occupy the same search threads, so they count in the denominator of each share.
func totalSearchLoad(in []IndexInput) float64 {
	var total float64
	for _, ix := range in {
		if ix.LoadKnown && ix.SearchLoad > 0 && !math.IsInf(ix.SearchLoad, 0) {
			total += ix.SearchLoad
		}
	}
	return total
}

// decideIndex returns the decision for one index, the memory to keep when no change is applied,
// and whether to keep memory at all.
func decideIndex(now time.Time, ix IndexInput, m Memory, seen bool, total float64, idle bool, cfg Config) (Decision, Memory, bool) {
	d := Decision{Index: ix.Name, Setting: SettingReplicas, From: ix.Replicas, N: ix.EligibleNodes, S: ix.Primaries, X: cfg.X}
	if cfg.UseSearchReplicas {
		d.Setting, d.From = SettingSearchReplicas, ix.SearchReplicas
	}
	d.To, d.Desired = d.From, d.From
	o, hasOverride := cfg.override(ix.Name)
	skip := func(reason string) (Decision, Memory, bool) {
		d.Kind, d.Reason = KindSkip, reason
		// Keep the first-seen count for when the index is managed again, but not a pending
		// scale-down: nothing watched its load meanwhile.
		m.LowerSince, m.WindowMax, m.Recent = time.Time{}, 0, nil
		return d, m, seen
	}
	switch {
	case strings.HasPrefix(ix.Name, ".") || ix.Hidden:
		return skip(fmt.Sprintf("%s is a system or hidden index; shardwise leaves its replicas alone.", ix.Name))
	case hasOverride && o.Exclude:
		return skip(fmt.Sprintf("%s matches the excluded pattern %q; shardwise leaves its replicas alone.", ix.Name, o.Pattern))
	case ix.Primaries < 1 || ix.EligibleNodes < 1 || ix.Replicas < 0 || ix.SearchReplicas < 0:
		return skip(fmt.Sprintf("%s has S=%d primaries, N=%d eligible nodes, %d replicas and %d search replicas; nothing sensible to decide.",
			ix.Name, ix.Primaries, ix.EligibleNodes, ix.Replicas, ix.SearchReplicas))
	}
	if !seen {
		m = Memory{Index: ix.Name, FirstSeenReplicas: ix.Replicas}
	}

	var minWhy, maxWhy string
	// topMax is the most the nodes can hold; an override may lower it further.
	var topMax int
	if cfg.UseSearchReplicas {
		d.Min, minWhy = 0, "search replicas may go to 0"
		topMax, maxWhy = ix.EligibleNodes, fmt.Sprintf("one per search node, N=%d", ix.EligibleNodes)
		if ix.MaxCopies > 0 && ix.MaxCopies < ix.EligibleNodes {
			topMax, maxWhy = ix.MaxCopies, fmt.Sprintf("%d assignable per shard: %s", ix.MaxCopies, ix.MaxWhy)
		}
	} else {
		d.Min = max(m.FirstSeenReplicas, cfg.DefaultMin)
		minWhy = fmt.Sprintf("first seen with %d, at least %d", m.FirstSeenReplicas, cfg.DefaultMin)
		topMax, maxWhy = ix.EligibleNodes-1, fmt.Sprintf("N-1 with N=%d", ix.EligibleNodes)
		if ix.MaxCopies > 0 && ix.MaxCopies < ix.EligibleNodes {
			topMax, maxWhy = ix.MaxCopies-1, fmt.Sprintf("%d copies assignable per shard: %s", ix.MaxCopies, ix.MaxWhy)
		}
	}
	d.Max = topMax
	if hasOverride && o.Min != nil {
		d.Min, minWhy = *o.Min, fmt.Sprintf("override %q", o.Pattern)
	}
	if hasOverride && o.Max != nil && *o.Max < d.Max {
		d.Max, maxWhy = *o.Max, fmt.Sprintf("override %q", o.Pattern)
	}
	if d.Min > d.Max {
		// Topology wins: a replica with no node to live on would only sit unassigned.
		d.Min, minWhy = d.Max, fmt.Sprintf("lowered to the maximum, %s", maxWhy)
	}
	bounds := fmt.Sprintf("min %d (%s), max %d (%s)", d.Min, minWhy, d.Max, maxWhy)

	d.Utilization = -1
	if ix.PoolThreads > 0 {
		d.Utilization = max(ix.PoolLoad, 0) / float64(ix.PoolThreads)
	}
	// perCopies turns a count of the setting into copies of each shard.
	perCopies := func(v int) int {
		if cfg.UseSearchReplicas {
			return max(v, 1) // with no search replica, searches go to the primary and its replicas
		}
		return v + 1
	}
	floorUtil := projected(ix, perCopies(d.Min))

	var basis string
	target := d.From
	// evidence: this cycle's load says something about the target (the window may advance).
	evidence := true
	switch {
	case !ix.LoadKnown && !idle:
		evidence = false
		basis = "its search load is not known this cycle, so load says nothing"
	case idle:
		target = d.Min
		basis = fmt.Sprintf("the cluster is idle (%.3f busy search threads, under %.3f), so the index wants its floor", total, cfg.MinTotalSearchLoad)
	case floorUtil >= 0 && floorUtil < cfg.NeedUtilization:
		target = d.Min
		basis = fmt.Sprintf("little absolute load: its %.3f busy search threads would keep the search pools of its floor (%d copies per shard) %.0f%% busy, under the %.0f%% at which more copies lower latency",
			max(ix.SearchLoad, 0), perCopies(d.Min), 100*floorUtil, 100*cfg.NeedUtilization)
	default:
		d.L = max(ix.SearchLoad, 0) / total
		copies := Copies(d.L, ix.EligibleNodes, ix.Primaries, cfg.X)
		target = copies
		if !cfg.UseSearchReplicas {
			target = copies - 1
		}
		basis = fmt.Sprintf("desired copies = min(ceil(L×N/(S×X)), N) = %d with L=%.3f (%.3f of %.3f busy search threads), N=%d, S=%d, X=%g",
			copies, d.L, max(ix.SearchLoad, 0), total, ix.EligibleNodes, ix.Primaries, cfg.X)
		if d.Utilization >= 0 {
			basis += fmt.Sprintf("; the search pools holding its copies are %.0f%% busy", 100*d.Utilization)
		}
	}
	d.Desired = min(max(target, d.Min), d.Max)
	d.Ceiling = d.Desired
	// Need gives the go-ahead: the formula's ceiling is reached only while the pools holding the
	// index's copies are busy enough that more copies lower latency.
	var needWhy string
	if d.Desired > d.From && evidence && !idle && d.From >= d.Min && d.Utilization >= 0 && d.Utilization < cfg.NeedUtilization {
		needWhy = fmt.Sprintf("; the formula allows %d but the search pools holding its copies are only %.0f%% busy, under %.0f%%, so more copies would not lower latency",
			d.Ceiling, 100*d.Utilization, 100*cfg.NeedUtilization)
		d.Desired = d.From
	}

	// The pending scale-down window advances only on cycles whose load says the target is lower
	// (quiet and idle cycles included); a cycle wanting as many copies or more restarts it, and a
	// cycle without a measurement leaves it as it is.
	// A scale-down goes to the highest target of the last ScaleDownAfter (a sliding window), so a
	// cycle of the load's way down does not hold the count up for a second window.
	if evidence {
		m.Recent = see(m.Recent, now, d.Desired, cfg.ScaleDownAfter)
		m.WindowMax = m.Recent[0].Target
	}
	switch {
	case !evidence:
	case d.Desired < d.From:
		if m.LowerSince.IsZero() {
			m.LowerSince = now
		}
		// A target at or above the current count after LowerSince dates from before someone
		// lowered the setting by hand: the window for this count starts after it.
		if last := lastAtLeast(m.Recent, d.From, now); !last.Before(m.LowerSince) {
			m.LowerSince = last.Add(time.Nanosecond)
		}
	default:
		m.LowerSince, m.WindowMax = time.Time{}, 0
	}

	// Departures: the count is above what the nodes can hold. OpenSearch waits delayed_timeout
	// before recovering a departed node's copies elsewhere; so does the cap.
	over := d.From > topMax
	if !over {
		m.OverSince = time.Time{}
	} else if m.OverSince.IsZero() {
		m.OverSince = now
	}
	delay, delayWhy := cfg.NodeLeftDelay, "Config.NodeLeftDelay, OpenSearch's default"
	if ix.DelayedTimeoutSet {
		delay, delayWhy = ix.DelayedTimeout, "the index's setting"
	}

	name := strings.TrimPrefix(d.Setting, "index.")
	switch {
	case over && now.Sub(m.OverSince) < delay:
		d.Kind = KindPendingCap
		d.PendingSince = m.OverSince
		d.Reason = fmt.Sprintf("%s: keep %s at %d for now: above the maximum since %s, but index.unassigned.node_left.delayed_timeout is %s (%s) and OpenSearch keeps a departed node's copies for its return that long; caps to %d at %s if still short; %s; %s.",
			ix.Name, name, d.From, stamp(m.OverSince), delay, delayWhy, d.Max, stamp(m.OverSince.Add(delay)), bounds, basis)
	case d.From > d.Max:
		d.Kind, d.To = KindCap, d.Max
		why := "without waiting"
		if over {
			why = fmt.Sprintf("the nodes have been short since %s, longer than index.unassigned.node_left.delayed_timeout (%s, %s)", stamp(m.OverSince), delay, delayWhy)
		}
		d.Cost = cost(ix, perCopies(d.From), perCopies(d.To))
		d.Reason = fmt.Sprintf("%s: cap %s %d→%d now, %s: %s; %s; %s.", ix.Name, name, d.From, d.To, why, bounds, basis, d.Cost)
	case d.Desired > d.From:
		d.Cost = cost(ix, perCopies(d.From), perCopies(d.Desired))
		added := d.Cost.Copies
		if ix.ExtraCopiesAllowed >= 0 && added > ix.ExtraCopiesAllowed {
			limiter := ix.Limiter
			if limiter == "" {
				limiter = "the disk"
			}
			d.Kind = KindHold
			d.Reason = fmt.Sprintf("%s: keep %s at %d: raising it to %d would add %d shard copies but %s takes only %d more; %s; %s.",
				ix.Name, name, d.From, d.Desired, added, limiter, ix.ExtraCopiesAllowed, basis, bounds)
			break
		}
		d.Kind, d.To = KindScaleUp, d.Desired
		d.Reason = fmt.Sprintf("%s: raise %s %d→%d now: %s; %s; %s.", ix.Name, name, d.From, d.To, basis, bounds, d.Cost)
	case d.Desired < d.From:
		d.PendingSince, d.ScaleDownAt = m.LowerSince, m.LowerSince.Add(cfg.ScaleDownAfter)
		if !evidence || now.Before(d.ScaleDownAt) {
			d.Kind = KindPendingScaleDown
			d.Reason = fmt.Sprintf("%s: keep %s at %d for now: %s, target below it since %s; lowers to %d (highest target of the last %s) at %s if it holds; %s.",
				ix.Name, name, d.From, basis, stamp(m.LowerSince), m.WindowMax, cfg.ScaleDownAfter, stamp(d.ScaleDownAt), bounds)
			break
		}
		d.Kind, d.To = KindScaleDown, m.WindowMax
		d.Cost = cost(ix, perCopies(d.From), perCopies(d.To))
		d.Reason = fmt.Sprintf("%s: lower %s %d→%d: the target stayed below %d on every cycle since %s (%s), and %d is the highest target of the last %s; %s; %s; %s.",
			ix.Name, name, d.From, d.To, d.From, stamp(m.LowerSince), cfg.ScaleDownAfter, d.To, cfg.ScaleDownAfter, basis, bounds, d.Cost)
	default:
		d.Kind = KindHold
		d.Reason = fmt.Sprintf("%s: keep %s at %d: %s%s; %s.", ix.Name, name, d.From, basis, needWhy, bounds)
	}
	return d, m, true
}

// projected is the share of the search threads of the nodes `copies` copies of each shard would
// occupy that the index's own load keeps busy; -1 when node pool sizes are unknown.
func projected(ix IndexInput, copies int) float64 {
	if ix.NodeSearchThreads <= 0 || ix.Primaries < 1 || copies < 1 {
		return -1
	}
	nodes := min(ix.Primaries*copies, max(ix.EligibleNodes, 1))
	return max(ix.SearchLoad, 0) / (float64(nodes) * ix.NodeSearchThreads)
}

// cost prices going from `from` to `to` copies of each shard.
func cost(ix IndexInput, from, to int) Cost {
	c := Cost{Copies: (to - from) * ix.Primaries, UtilizationBefore: projected(ix, from), UtilizationAfter: projected(ix, to)}
	c.WriteThreads = float64(c.Copies) * ix.WriteLoadPerCopy
	if ix.Primaries > 0 && from > 0 && to > 0 {
		load := max(ix.SearchLoad, 0) / float64(ix.Primaries)
		c.PerCopyBefore, c.PerCopyAfter = load/float64(from), load/float64(to)
	}
	if c.Copies > 0 {
		c.Bytes = int64(c.Copies) * ix.CopyBytes
	}
	return c
}

// String is the cost as the reasons print it.
func (c Cost) String() string {
	verb, n, w := "costs", c.Copies, c.WriteThreads
	if n < 0 {
		verb, n, w = "frees", -n, -w
	}
	s := fmt.Sprintf("%s %d shard copies indexing %.2f WRITE threads", verb, n, w)
	if c.Bytes > 0 {
		s += fmt.Sprintf(" and %.1f GiB to copy", float64(c.Bytes)/(1<<30))
	}
	s += fmt.Sprintf("; each copy serves %.2f busy search threads instead of %.2f", c.PerCopyAfter, c.PerCopyBefore)
	if c.UtilizationBefore >= 0 && c.UtilizationAfter >= 0 {
		s += fmt.Sprintf(", and its own load keeps the search pools of the nodes it spans %.0f%% busy instead of %.0f%%", 100*c.UtilizationAfter, 100*c.UtilizationBefore)
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
