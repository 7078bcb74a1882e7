package runner

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
)

// The no-churn properties (issue 25, item 11), checked on every run of random clusters, with and
// without faults, from what the run's ticks recorded: the moves issued as planned, the plans with
// their notes, and the simulator's true loads.
const (
	// churnReturnWithin: a copy does not go back within this long to a node it left...
	churnReturnWithin = time.Hour
	// churnLoadChange: ...unless that node's true WRITE utilization changed by this much since. The
	// planner's rule is a fifth on the utilization its counters measure, which a saturated node's
	// caps at 100 %; the simulator's truth is not capped, so the test allows a smaller change.
	churnLoadChange = 0.1
	// churnMinRelief: a group with copies sent back to the hot node takes at least this share of
	// its hot copy's load off it; a trade of equal-load copies is not relief.
	churnMinRelief = 0.25
)

// churnViolations returns each breach of the no-churn properties in ticks, cooling being the
// configured ReliefCoolingOff:
//   - no copy returns within the hour to a node it left unless that node's load changed (a copy
//     that may not remain where it is excepted: a decider, not load, sends it; and a segment
//     primary arriving where its replica left to clear the way for it, which is not a return);
//   - no group issued for a hot node trades copies of equal load: what it sends back is less than
//     what leaves by a quarter of the hot copy's load;
//   - a kind of plan measured to relieve nothing on a node (note relief-missed), primary balance
//     included, is not planned there again within the cooling-off, unless the node's load changed by a fifth of its
//     threads (a tenth here, for the same reason as above).
func churnViolations(ticks []Tick, cooling time.Duration) []string {
	var out []string
	type left struct {
		at   time.Duration
		util float64
		// clearedWay: a segment replica left to clear the way for its primary, which may follow.
		clearedWay bool
	}
	departed := map[string]left{} // index/shard/node
	util := func(tk Tick, node string) (float64, bool) {
		for _, n := range tk.Report.Nodes {
			if n.Name == node && n.WriteThreads > 0 {
				return n.WriteLoad / float64(n.WriteThreads), true
			}
		}
		return 0, false
	}
	type missed struct {
		m  allocation.Measurement
		at time.Time
	}
	var misses []missed
	for _, tk := range ticks {
		for _, m := range tk.Issued {
			if m.Phase != allocation.PhaseCannotRemain {
				if d, ok := departed[fmt.Sprintf("%s/%d/%s", m.Index, m.Shard, m.ToName)]; ok && tk.At-d.at < churnReturnWithin && (!d.clearedWay || !m.Primary) {
					if now, ok := util(tk, m.ToName); ok && math.Abs(now-d.util) < churnLoadChange {
						out = append(out, fmt.Sprintf("%v: %s[%d] %s→%s (%s) returns to %s, left at %v, true WRITE use %.2f then and %.2f now: %s",
							tk.At, m.Index, m.Shard, m.FromName, m.ToName, m.Phase, m.ToName, d.at, d.util, now, m.Reason))
					}
				}
			}
			if u, ok := util(tk, m.FromName); ok {
				departed[fmt.Sprintf("%s/%d/%s", m.Index, m.Shard, m.FromName)] = left{at: tk.At, util: u,
					clearedWay: m.Phase == allocation.PhaseClearWay && !m.Primary}
			}
		}
		out = append(out, equalTrades(tk)...)
		for _, p := range tk.Plans {
			for _, n := range p.Notes {
				if n.Kind == allocation.NoteReliefMissed && n.Measurement != nil {
					misses = append(misses, missed{m: *n.Measurement, at: p.SnapshotAt})
				}
			}
			for _, m := range p.Moves {
				if m.Phase != allocation.PhaseWriteHotspot && m.Phase != allocation.PhasePrimaryBalance {
					continue
				}
				for _, x := range misses {
					if x.m.NodeName != m.FromName || !ofKind(m, x.m.Kind) || p.SnapshotAt.Sub(x.at) >= cooling {
						continue
					}
					load, ok := planLoad(p, x.m.Node, x.m.Threads)
					if ok && math.Abs(load-x.m.MeasuredAfter) >= churnLoadChange*float64(x.m.Threads) {
						continue
					}
					out = append(out, fmt.Sprintf("%v: a %s off %s again %v after it measured no relief there (%s); its load then %.2f, now %.2f: %s",
						p.SnapshotAt.Format(time.TimeOnly), x.m.Kind, m.FromName, p.SnapshotAt.Sub(x.at), x.m, x.m.MeasuredAfter, load, m.Reason))
				}
			}
		}
	}
	return out
}

// planLoad is a node's WRITE load in threads as the plan's hotspot entry for it states (the larger
// of its utilization's threads and its demand), false when the plan does not list it.
func planLoad(p allocation.Plan, node string, threads int) (float64, bool) {
	for _, h := range p.Hotspots {
		if h.Node == node {
			return math.Max(h.Utilization*float64(threads), h.Demand), true
		}
	}
	return 0, false
}

// ofKind reports whether a planned move is of the kind of plan a measurement names: a relief
// group's reason names its kind; a primary-balance move is its own kind.
func ofKind(m allocation.Move, kind string) bool {
	if m.Phase == allocation.PhasePrimaryBalance {
		return kind == allocation.PlanPrimaryBalance
	}
	return strings.Contains(m.Reason, " as a "+kind+":")
}

// equalTrades lists the groups issued in a tick for a hot node that send back to it nearly as much
// load as they take off it.
func equalTrades(tk Tick) []string {
	type group struct {
		hot       *allocation.Move
		off, back float64
	}
	groups := map[int]*group{}
	for i := range tk.Issued {
		m := &tk.Issued[i]
		if m.SwapGroup == 0 {
			continue
		}
		g := groups[m.SwapGroup]
		if g == nil {
			g = &group{}
			groups[m.SwapGroup] = g
		}
		if m.Phase == allocation.PhaseWriteHotspot {
			g.hot = m
		}
	}
	var out []string
	for _, g := range groups {
		if g.hot == nil {
			continue
		}
		for _, m := range tk.Issued {
			if m.SwapGroup == 0 || groups[m.SwapGroup] != g {
				continue
			}
			if m.From == g.hot.From {
				g.off += m.WriteLoad
			}
			if m.To == g.hot.From {
				g.back += m.WriteLoad
			}
		}
		if g.back > 0 && g.off-g.back < churnMinRelief*g.hot.WriteLoad-1e-9 {
			out = append(out, fmt.Sprintf("%v: a group off %s takes %.2f WRITE threads off and sends %.2f back, under a quarter of its hot copy's %.2f: %s",
				tk.At, g.hot.FromName, g.off, g.back, g.hot.WriteLoad, g.hot.Reason))
		}
	}
	return out
}
