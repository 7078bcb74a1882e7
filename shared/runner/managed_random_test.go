package runner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

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
	var count relievedCount
	var mu sync.Mutex
	var hot, undone int
	var shares float64
	seeds := randomSuite(t, randomManagedScenario, func(uint64) (gap, bool) { return gap{}, false }, func(t *testing.T, c managedCluster, r randomRun) {
		count.add(fmt.Sprintf("%v | hot %v vs %v (%.2f) | moves %d | signals %d (unproven %d) | undone %d | violations %d | hot cycles %s",
			c, r.res.HotNodeSeconds, r.none.HotNodeSeconds, r.ratio, r.res.Moves, r.sig.total, r.sig.unproven, r.res.MovesUndoneByBuiltin, r.res.SafetyViolations, r.res.Outcomes()),
			r.res, r.none.HotNodeSeconds > 0, r.ratio <= randomReliefLimit)
		mu.Lock()
		defer mu.Unlock()
		undone += r.res.MovesUndoneByBuiltin
		if r.none.HotNodeSeconds > 0 {
			hot++
			shares += r.ratio
		}
	})
	mean := math.NaN()
	if hot > 0 {
		mean = shares / float64(hot)
	}
	summary := fmt.Sprintf("random managed clusters (reroute refused): %d seeds; %d with a hotspot, mean share of hot node-seconds without shardwise %.2f, %d of them relieved to %.1f× or better; %d moves undone by OpenSearch's balancer; %s",
		seeds, hot, mean, count.reached, randomReliefLimit, undone, count.outcomesLine())
	t.Log(summary + "\n" + strings.Join(count.rows, "\n"))
	fmt.Println(summary)
}

// managedCluster is a random cluster on a managed domain: its rows and failures say so.
type managedCluster struct{ randomCluster }

func (c managedCluster) String() string { return "managed " + c.randomCluster.String() }

// randomManagedScenario is randomScenario's cluster with _cluster/reroute refused for the whole run.
func randomManagedScenario(seed uint64) (*sim.Scenario, managedCluster, error) {
	sc, c, err := randomScenario(seed)
	if err != nil {
		return nil, managedCluster{c}, err
	}
	sc.Name = fmt.Sprintf("random-managed-%d", seed)
	sc.Events = append(sc.Events, sim.Event{AtSeconds: 0, Kind: sim.EventRerouteRejects, UntilSeconds: sc.DurationSeconds})
	slices.SortStableFunc(sc.Events, func(a, b sim.Event) int { return cmp.Compare(a.AtSeconds, b.AtSeconds) })
	return sc, managedCluster{c}, nil
}
