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
// on every cycle for Config.ScaleDownAfter, and then to the highest target seen in that window;
// when nodes leave and the current count exceeds the maximum, cap it at once.
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
}

// Memory is what Decide remembers about an index between cycles. The caller stores it as is.
type Memory struct {
	Index             string `json:"index"`
	FirstSeenReplicas int    `json:"first_seen_replicas"`
	// LowerSince is when the target first fell below the current count; zero when no scale-down
	// is pending.
	LowerSince time.Time `json:"lower_since,omitzero"`
	// WindowMax is the highest target seen since LowerSince.
	WindowMax  int       `json:"window_max,omitempty"`
	LastChange time.Time `json:"last_change,omitzero"`
	LastReason string    `json:"last_reason,omitempty"`
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
	idle := total < cfg.MinTotalSearchLoad
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

// applied is the memory after a change is made: the pending window restarts from the new count.
func applied(m Memory, d Decision, now time.Time) Memory {
	m.LastChange = now
	m.LastReason = d.Reason
	m.LowerSince, m.WindowMax = time.Time{}, 0
	if d.Desired < d.To {
		// The target is already below the new count (a cap or a scale-down to a window maximum):
		// a further scale-down must again hold for the whole ScaleDownAfter.
		m.LowerSince, m.WindowMax = now, d.Desired
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
		m.LowerSince, m.WindowMax = time.Time{}, 0
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
	if cfg.UseSearchReplicas {
		d.Min, minWhy = 0, "search replicas may go to 0"
		d.Max, maxWhy = ix.EligibleNodes, fmt.Sprintf("one per search node, N=%d", ix.EligibleNodes)
	} else {
		d.Min = max(m.FirstSeenReplicas, cfg.DefaultMin)
		minWhy = fmt.Sprintf("first seen with %d, at least %d", m.FirstSeenReplicas, cfg.DefaultMin)
		d.Max, maxWhy = ix.EligibleNodes-1, fmt.Sprintf("N-1 with N=%d", ix.EligibleNodes)
	}
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

	usable := ix.LoadKnown && !idle
	var basis string
	target := d.From
	switch {
	case usable:
		d.L = max(ix.SearchLoad, 0) / total
		copies := Copies(d.L, ix.EligibleNodes, ix.Primaries, cfg.X)
		target = copies
		if !cfg.UseSearchReplicas {
			target = copies - 1
		}
		basis = fmt.Sprintf("desired copies = min(ceil(L×N/(S×X)), N) = %d with L=%.3f (%.3f of %.3f busy search threads), N=%d, S=%d, X=%g",
			copies, d.L, max(ix.SearchLoad, 0), total, ix.EligibleNodes, ix.Primaries, cfg.X)
	case idle:
		basis = fmt.Sprintf("the cluster is idle (%.3f busy search threads, under %.3f), so load says nothing", total, cfg.MinTotalSearchLoad)
	default:
		basis = "its search load is not known this cycle, so load says nothing"
	}
	d.Desired = min(max(target, d.Min), d.Max)

	// The pending scale-down window advances only on cycles whose load says the target is lower;
	// anything else (recovery, idle, unknown load) restarts it.
	if usable && d.Desired < d.From {
		// A window maximum at or above the current count dates from before someone lowered the
		// setting by hand; it says nothing about this count, so the window restarts.
		if m.LowerSince.IsZero() || m.WindowMax >= d.From {
			m.LowerSince, m.WindowMax = now, d.Desired
		} else {
			m.WindowMax = max(m.WindowMax, d.Desired)
		}
	} else {
		m.LowerSince, m.WindowMax = time.Time{}, 0
	}

	name := strings.TrimPrefix(d.Setting, "index.")
	switch {
	case d.From > d.Max:
		d.Kind, d.To = KindCap, d.Max
		d.Reason = fmt.Sprintf("%s: cap %s %d→%d now, without waiting: %s; %s.", ix.Name, name, d.From, d.To, bounds, basis)
	case d.Desired > d.From:
		added := (d.Desired - d.From) * ix.Primaries
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
		d.Reason = fmt.Sprintf("%s: raise %s %d→%d now: %s; %s.", ix.Name, name, d.From, d.To, basis, bounds)
	case d.Desired < d.From:
		d.PendingSince, d.ScaleDownAt = m.LowerSince, m.LowerSince.Add(cfg.ScaleDownAfter)
		if now.Before(d.ScaleDownAt) {
			d.Kind = KindPendingScaleDown
			d.Reason = fmt.Sprintf("%s: keep %s at %d for now: %s, target %d since %s; lowers to %d (highest target seen) at %s if it holds; %s.",
				ix.Name, name, d.From, basis, d.Desired, stamp(m.LowerSince), m.WindowMax, stamp(d.ScaleDownAt), bounds)
			break
		}
		d.Kind, d.To = KindScaleDown, m.WindowMax
		d.Reason = fmt.Sprintf("%s: lower %s %d→%d: the target stayed below %d on every cycle since %s (%s), and %d is the highest target seen since; %s; %s.",
			ix.Name, name, d.From, d.To, d.From, stamp(m.LowerSince), cfg.ScaleDownAfter, d.To, basis, bounds)
	default:
		d.Kind = KindHold
		d.Reason = fmt.Sprintf("%s: keep %s at %d: %s; %s.", ix.Name, name, d.From, basis, bounds)
	}
	return d, m, true
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
