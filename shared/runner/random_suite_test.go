package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// randomRun is one random cluster run twice: with shardwise and with OpenSearch's balancer alone.
type randomRun struct {
	seed      uint64
	sc        *sim.Scenario
	res, none Result
	// ticks and noneTicks are the two runs' ticks.
	ticks, noneTicks []Tick
	sig              signals
	// ratio is shardwise's hot node-seconds over those without it; NaN when there were none.
	ratio float64
	// limit is what the seed is held to: the targets, or its known gap.
	limit gap
}

// randomSuite runs a property suite over randomSeeds(t) clusters that build makes, each seed a
// parallel subtest. A seed's scenario is written where SHARDWISE_RANDOM_DUMP names (to replay with
// shardwise simulate) and run with shardwise and with OpenSearch's balancer alone, and the run is
// held to what every suite holds: no safety violation, and no more churn and Scale Up Needed that
// no bound proves than its limit allows. limit gives a seed's known gap (ok false: the targets,
// randomReliefLimit and zeros). check then holds the suite's own properties; it runs on the seed's
// goroutine, with mu held around nothing: a suite that gathers rows locks mu itself.
func randomSuite[C fmt.Stringer](t *testing.T, build func(seed uint64) (*sim.Scenario, C, error),
	limit func(seed uint64) (gap, bool), check func(t *testing.T, c C, r randomRun)) (seeds int) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs many scenarios")
	}
	if raceDetector {
		t.Skip("property suite: makes no concurrent calls of its own and takes minutes under the race detector; `make properties` runs it")
	}
	goal := config.Default().Allocation.AllocationUtilization
	coolingOff := config.Default().Allocation.ReliefCoolingOff.Std()
	seeds = randomSeeds(t)
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				sc, c, err := build(seed)
				if err != nil {
					t.Fatalf("seed %d: scenario: %v", seed, err)
				}
				if dir := os.Getenv("SHARDWISE_RANDOM_DUMP"); dir != "" {
					b, err := json.MarshalIndent(sc, "", "  ")
					if err == nil {
						err = os.WriteFile(filepath.Join(dir, sc.Name+".json"), b, 0o644)
					}
					if err != nil {
						t.Fatalf("seed %d: dump: %v", seed, err)
					}
				}
				r := randomRun{seed: seed, sc: sc, ratio: math.NaN(), limit: gap{ratio: randomReliefLimit}}
				r.res, r.ticks = runScenario(t, sc, BalancerShardwise)
				r.none, r.noneTicks = runScenario(t, sc, BalancerNone)
				r.sig = countSignals(r.ticks, goal)
				if r.none.HotNodeSeconds > 0 {
					r.ratio = r.res.HotNodeSeconds / r.none.HotNodeSeconds
				}
				if g, ok := limit(seed); ok {
					r.limit = g
					t.Logf("%v: known gap, held to %.2f×, %d undone, %d unproven signals and %d churn, against the targets %.1f×, 0, 0 and 0",
						c, g.ratio, g.undone, g.unproven, g.churn, randomReliefLimit)
				}
				if r.res.SafetyViolations != 0 {
					t.Errorf("%v: safety violations %d: %+v", c, r.res.SafetyViolations, r.res.Violations)
				}
				if churn := churnViolations(r.ticks, coolingOff); len(churn) > r.limit.churn {
					for _, v := range churn {
						t.Errorf("%v: churn: %s (want at most %d)", c, v, r.limit.churn)
					}
				}
				if r.sig.unproven > r.limit.unproven {
					t.Errorf("%v: %d of %d scale-up signals no bound proves, want at most %d; first: %s",
						c, r.sig.unproven, r.sig.total, r.limit.unproven, r.sig.firstUnproven)
				}
				check(t, c, r)
			})
		}
	})
	return seeds
}

// relievedCount tallies, under its own lock, the seeds held to the relief target and those
// relieved to it, and where the suite's hot node-cycles went.
type relievedCount struct {
	mu                sync.Mutex
	rows              []string
	eligible, reached int
	outcomes          map[string]int
}

// add records a seed's row, its hot node-cycles by outcome and, when it is held to the relief
// target, whether it reached it.
func (c *relievedCount) add(row string, res Result, eligible, reached bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, row)
	for k, n := range res.HotCyclesByOutcome {
		if c.outcomes == nil {
			c.outcomes = map[string]int{}
		}
		c.outcomes[k] += n
	}
	if eligible {
		c.eligible++
		if reached {
			c.reached++
		}
	}
}

// outcomesLine sums where every seed's hot node-cycles went, the most frequent first (Result.Outcomes),
// for the suite's summary: the share a change moves between waiting and planning is read there.
func (c *relievedCount) outcomesLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.outcomes {
		total += n
	}
	return fmt.Sprintf("hot node-cycles %d by outcome: %s", total, Result{HotCyclesByOutcome: c.outcomes}.Outcomes())
}

// holdRelief fails a seed held to the relief target (room, time and a hotspot without shardwise)
// whose hot node-seconds came over its limit, and the seed's moves undone by OpenSearch's balancer
// over its limit.
func holdRelief(t *testing.T, c fmt.Stringer, r randomRun, eligible bool) {
	t.Helper()
	if r.res.MovesUndoneByBuiltin > r.limit.undone {
		t.Errorf("%v: moves undone by OpenSearch's balancer: got %d want at most %d", c, r.res.MovesUndoneByBuiltin, r.limit.undone)
	}
	if eligible && r.ratio > r.limit.ratio+1e-9 {
		t.Errorf("%v: room for relief, yet hot node-seconds %v against %v without shardwise (%.2f), want at most %.2f× (unrelieved hotspot cycles %d)",
			c, r.res.HotNodeSeconds, r.none.HotNodeSeconds, r.ratio, r.limit.ratio, r.res.UnrelievedHotspotCycles)
	}
}
