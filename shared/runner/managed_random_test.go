package runner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// TestRandomManagedClusters runs TestRandomClusters' clusters on a managed domain that refuses
// _cluster/reroute for the whole run (as Amazon OpenSearch Service answers: 403), so the default
// move strategy, auto, moves through index-level allocation filters: an exclusion moves every copy
// of the index on the node, and OpenSearch's allocator picks the targets. It holds the properties
// that do not depend on choosing the target: no safety violation (never two copies of a shard in
// flight at once, exclusions included), no churn, and no Scale Up Needed that no bound proves.
// It prints how far the hot node-seconds came against OpenSearch's balancer alone and how many
// moves OpenSearch's balancer undid, the figures this mode still falls short on.
func TestRandomManagedClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs many scenarios")
	}
	if raceDetector {
		t.Skip("property suite: makes no concurrent calls of its own and takes minutes under the race detector; `make properties` runs it")
	}
	goal := config.Default().Allocation.AllocationUtilization
	seeds := randomSeeds(t)
	var mu sync.Mutex
	var rows []string
	var hot, undone, halved int
	var shares float64
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				sc, c, err := randomManagedScenario(seed)
				if err != nil {
					t.Fatalf("seed %d: scenario: %v", seed, err)
				}
				res, ticks := runScenario(t, sc, BalancerShardwise)
				none, _ := runScenario(t, sc, BalancerNone)
				sig := countSignals(ticks, goal)
				ratio := math.NaN()
				if none.HotNodeSeconds > 0 {
					ratio = res.HotNodeSeconds / none.HotNodeSeconds
				}
				mu.Lock()
				rows = append(rows, fmt.Sprintf("managed %v | hot %v vs %v (%.2f) | moves %d | signals %d (unproven %d) | undone %d | violations %d",
					c, res.HotNodeSeconds, none.HotNodeSeconds, ratio, res.Moves, sig.total, sig.unproven, res.MovesUndoneByBuiltin, res.SafetyViolations))
				undone += res.MovesUndoneByBuiltin
				if none.HotNodeSeconds > 0 {
					hot++
					shares += ratio
					if ratio <= randomReliefLimit {
						halved++
					}
				}
				mu.Unlock()
				if res.SafetyViolations != 0 {
					t.Errorf("managed %v: safety violations %d: %+v", c, res.SafetyViolations, res.Violations)
				}
				for _, v := range churnViolations(ticks, config.Default().Allocation.ReliefCoolingOff.Std()) {
					t.Errorf("managed %v: churn: %s", c, v)
				}
				if sig.unproven > 0 {
					t.Errorf("managed %v: %d of %d scale-up signals no bound proves; first: %s", c, sig.unproven, sig.total, sig.firstUnproven)
				}
			})
		}
	})
	mean := math.NaN()
	if hot > 0 {
		mean = shares / float64(hot)
	}
	summary := fmt.Sprintf("random managed clusters (reroute refused): %d seeds; %d with a hotspot, mean share of hot node-seconds without shardwise %.2f, %d of them relieved to %.1f× or better; %d moves undone by OpenSearch's balancer",
		seeds, hot, mean, halved, randomReliefLimit, undone)
	t.Log(summary + "\n" + strings.Join(rows, "\n"))
	fmt.Println(summary)
}

// randomManagedScenario is randomScenario's cluster with _cluster/reroute refused for the whole run.
func randomManagedScenario(seed uint64) (*sim.Scenario, randomCluster, error) {
	sc, c, err := randomScenario(seed)
	if err != nil {
		return nil, c, err
	}
	sc.Name = fmt.Sprintf("random-managed-%d", seed)
	sc.Events = append(sc.Events, sim.Event{AtSeconds: 0, Kind: sim.EventRerouteRejects, UntilSeconds: sc.DurationSeconds})
	slices.SortStableFunc(sc.Events, func(a, b sim.Event) int { return cmp.Compare(a.AtSeconds, b.AtSeconds) })
	return sc, c, nil
}
