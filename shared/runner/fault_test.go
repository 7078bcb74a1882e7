package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// faultSeeds is how many random scenarios TestFaults runs: SHARDWISE_FAULT_SEEDS, default 25, or
// 5 under the race detector. The gate's `make faults` runs 200 seeds without it; under it each
// seed costs about 18 s on 2 cores, and what the detector looks for (goroutines sharing state in
// the functions and the simulator) is reached by every seed's cycles alike.
func faultSeeds(t *testing.T) int {
	if v := os.Getenv("SHARDWISE_FAULT_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SHARDWISE_FAULT_SEEDS=%q: want a positive number", v)
		}
		return n
	}
	if raceDetector {
		return 5
	}
	return 25
}

// faultScenarioWith builds a random cluster with a write hotspot and a mix of faults: API errors, API
// latency, reroute refusals, and a node leaving, often while a relocation is in flight; and the
// operator's own faults drawn from r2 (nil: none):
// an operator's allocation filter on the hot index, set mid-run. It returns the node the operator
// excluded ("" when none), which must still be excluded at the end: shardwise's cleanup keeps an
// operator's entries.
func faultScenarioWith(seed uint64, r2 *rand.Rand) (*sim.Scenario, []string, string, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	nodes := 4 + r.IntN(3)
	var ns []map[string]any
	for i := range nodes {
		ns = append(ns, map[string]any{"name": fmt.Sprintf("node-%d", i)})
	}
	primaries := 4 + r.IntN(3)
	weights := make([]float64, primaries)
	placement := make([][]string, primaries)
	for i := range primaries {
		weights[i] = float64(1 + r.IntN(4))
		a := (2 * i) % nodes
		b := (2*i + 1) % nodes
		placement[i] = []string{fmt.Sprintf("node-%d", a), fmt.Sprintf("node-%d", b)}
	}
	duration := 1200.0
	var events []map[string]any
	var faults []string
	add := func(e map[string]any) {
		events = append(events, e)
		faults = append(faults, e["kind"].(string))
	}
	left := false
	for range 1 + r.IntN(3) {
		at := float64(30 * r.IntN(36))
		kind := r.IntN(4)
		if kind == 3 && left {
			kind = r.IntN(3)
		}
		switch kind {
		case 0:
			add(map[string]any{"at_seconds": at, "kind": "api_errors", "rate": 0.1 + 0.5*r.Float64(), "until_seconds": at + float64(30*(1+r.IntN(6)))})
		case 1:
			add(map[string]any{"at_seconds": at, "kind": "api_latency", "ms": float64(2 + r.IntN(20)), "until_seconds": at + 60})
		case 2:
			add(map[string]any{"at_seconds": at, "kind": "reroute_rejects", "until_seconds": at + float64(30*(1+r.IntN(10)))})
		case 3:
			left = true
			// Right after the spike, when the first relocations are likely in flight.
			leave := 330 + float64(30*r.IntN(8))
			add(map[string]any{"at_seconds": leave, "kind": "node_leave", "node": fmt.Sprintf("node-%d", r.IntN(nodes))})
			if r.IntN(2) == 0 {
				add(map[string]any{"at_seconds": leave + 300, "kind": "node_join", "node": map[string]any{"name": "node-new"}})
			}
		}
	}
	operatorExcluded := ""
	if r2 != nil && r2.IntN(3) == 0 {
		// Not a node that leaves: the exclusion must outlive the run on a node that is there.
		operatorExcluded = fmt.Sprintf("node-%d", r2.IntN(nodes))
		for _, e := range events {
			if e["kind"] == "node_leave" && e["node"] == operatorExcluded {
				operatorExcluded = ""
			}
		}
		if operatorExcluded != "" {
			add(map[string]any{"at_seconds": float64(30 * r2.IntN(36)), "kind": "set_index_settings", "index": "hot",
				"settings": map[string]any{"index.routing.allocation.exclude._name": operatorExcluded}})
			faults[len(faults)-1] = "operator_filter"
		}
	}
	sc := map[string]any{
		"name": fmt.Sprintf("faults-%d", seed), "seed": seed, "tick_seconds": 30, "duration_seconds": duration,
		"cluster":       map[string]any{"builtin_balancer": r.IntN(4) != 0, "recovery_bytes_per_second": 41943040, "node_concurrent_recoveries": 2, "disk_high_watermark": 0.9},
		"node_defaults": map[string]any{"write_threads": 8, "search_threads": 13, "heap_bytes": 8 << 30, "disk_bytes": 1 << 40},
		"nodes":         ns,
		"indices": []map[string]any{{
			"name": "hot", "primaries": primaries, "replicas": 1, "shard_bytes": (1 + r.IntN(4)) << 30,
			"write_load":    map[string]any{"kind": "step", "before": 2, "after": 8 + 8*r.Float64(), "at_seconds": 300},
			"search_load":   map[string]any{"kind": "constant", "value": 0.5},
			"shard_weights": weights, "placement": placement,
		}},
		"index_groups": []map[string]any{{
			"name_prefix": "cold-", "count": 3 + r.IntN(4), "primaries": 1, "replicas": 1, "shard_bytes": 1 << 28,
			"write_load": map[string]any{"kind": "constant", "value": 0.3}, "search_load": map[string]any{"kind": "constant", "value": 0.3},
			"skew": map[string]any{"kind": "even"},
		}},
		"events": events,
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, nil, "", err
	}
	s, err := sim.ParseScenario(b)
	return s, faults, operatorExcluded, err
}

// TestFaults runs random clusters with injected faults and checks the simulator's safety invariants
// (two copies of a shard on one node, a shard left without an active copy by a move, a move issued
// while a breaker check failed, the same move issued twice) on every tick: zero violations, no panic.
// Beside the cluster's faults it injects the operator's and the deployment's: an operator's own
// allocation filter (kept at the end), nodes excluded in shardwise's config (no move onto them),
// racing invocations whose clocks differ within the lease's bound, and floods of alarm-triggered
// ingest-and-plan calls racing the schedule.
//
// faultKinds are the faults the test injects, as its summary counts them.
var faultKinds = []string{"api_errors", "api_latency", "reroute_rejects", "node_leave", "node_join", "concurrent_invocations",
	"operator_filter", "excluded_node", "clock_skew", "alert_flood", "killed_moves"}

// maxFaultClockSkew keeps two copies' clocks within engine.leaseClockSkew (5 s) of each other:
// the lease is documented to hold only within that bound.
const maxFaultClockSkew = 2500 * time.Millisecond

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs many scenarios")
	}
	seeds := faultSeeds(t)
	var injected, moves, violations, killed atomic.Int64
	counts := map[string]*atomic.Int64{}
	for _, k := range faultKinds {
		counts[k] = &atomic.Int64{}
	}
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				runFaultSeed(t, seed, counts, &injected, &moves, &violations, &killed)
			})
		}
	})
	summary := fmt.Sprintf("fault test: %d seeds, %d faults injected (", seeds, injected.Load())
	for _, k := range faultKinds {
		summary += fmt.Sprintf("%s %d ", k, counts[k].Load())
	}
	summary += fmt.Sprintf("), %d moves, %d move invocations killed, %d safety violations", moves.Load(), killed.Load(), violations.Load())
	t.Log(summary)
	fmt.Println(summary)
}

// faultRun is one seed's scenario, options and injected faults.
type faultRun struct {
	sc     *sim.Scenario
	opts   Options
	faults []string
	// excluded is the node shardwise's config excludes, operatorExcluded the node the operator's
	// filter excludes from hot ("" when none).
	excluded, operatorExcluded string
}

// newFaultRun draws seed's scenario and faults.
func newFaultRun(seed uint64) (faultRun, error) {
	// The operator's and deployment's faults come from their own generator, so that every seed's
	// cluster faults stay the ones it always had.
	r2 := rand.New(rand.NewPCG(seed, seed^0xfa17))
	sc, faults, operatorExcluded, err := faultScenarioWith(seed, r2)
	if err != nil {
		return faultRun{}, err
	}
	fr := faultRun{sc: sc, operatorExcluded: operatorExcluded}
	cfg := config.Default()
	cfg.Safety.DryRun = false
	if seed%2 == 0 {
		cfg.MoveStrategy = "auto"
	}
	fr.opts = Options{Balancer: BalancerShardwise, Config: cfg}
	// A third of the seeds race duplicate and overlapping invocations of every function, and half
	// of those on clocks that differ.
	if seed%3 == 0 {
		fr.opts.Concurrency = 2 + int(seed/3)%2
		faults = append(faults, "concurrent_invocations")
		if r2.IntN(2) == 0 {
			for range fr.opts.Concurrency {
				fr.opts.ClockSkew = append(fr.opts.ClockSkew, time.Duration(r2.Int64N(int64(2*maxFaultClockSkew)+1))-maxFaultClockSkew)
			}
			faults = append(faults, "clock_skew")
		}
	}
	if n := len(sc.Nodes); r2.IntN(4) == 0 && n > 3 {
		fr.excluded = sc.Nodes[r2.IntN(n)].Name
		fr.opts.Config.Allocation.ExcludedNodes = []string{fr.excluded}
		faults = append(faults, "excluded_node")
	}
	if r2.IntN(4) == 0 {
		fr.opts.AlertsPerTick = 2 + r2.IntN(4)
		faults = append(faults, "alert_flood")
	}
	if r2.IntN(3) == 0 {
		// Killed move invocations leave their lease to expire and their ledger entries claimed.
		fr.opts.KillMoves = 0.2 + 0.4*r2.Float64()
		faults = append(faults, "killed_moves")
	}
	fr.faults = faults
	return fr, nil
}

// runFaultSeed runs one seed's scenario with its faults and checks the invariants.
func runFaultSeed(t *testing.T, seed uint64, counts map[string]*atomic.Int64, injected, moves, violations, killed *atomic.Int64) {
	fr, err := newFaultRun(seed)
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	sc, opts, faults, excluded, operatorExcluded := fr.sc, fr.opts, fr.faults, fr.excluded, fr.operatorExcluded
	for _, f := range faults {
		counts[f].Add(1)
	}
	injected.Add(int64(len(faults)))

	var ontoExcluded []string
	var ticks []Tick
	opts.OnTick = func(tk Tick) {
		ticks = append(ticks, tk)
		for _, m := range tk.Moves {
			if excluded != "" && strings.HasSuffix(m, "→"+excluded) {
				ontoExcluded = append(ontoExcluded, fmt.Sprintf("%v: %s", tk.At, m))
			}
		}
	}
	var kept string
	if operatorExcluded != "" {
		opts.AtEnd = func(api http.Handler) error {
			v, err := indexSetting(api, "hot", "index.routing.allocation.exclude._name")
			kept = v
			return err
		}
	}
	res, err := Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatalf("seed %d (faults %v): run: %v", seed, faults, err)
	}
	moves.Add(int64(res.Moves))
	killed.Add(int64(res.KilledMoves))
	violations.Add(int64(res.SafetyViolations))
	if res.SafetyViolations != 0 {
		t.Errorf("seed %d (faults %v): %d safety violations: %+v", seed, faults, res.SafetyViolations, res.Violations)
	}
	for _, v := range churnViolations(ticks, opts.Config.Allocation.ReliefCoolingOff.Std()) {
		t.Errorf("seed %d (faults %v): churn: %s", seed, faults, v)
	}
	if len(ontoExcluded) > 0 {
		t.Errorf("seed %d (faults %v): moves onto %s, which the config excludes: %v", seed, faults, excluded, ontoExcluded)
	}
	if operatorExcluded != "" && !slices.Contains(strings.Split(kept, ","), operatorExcluded) {
		t.Errorf("seed %d (faults %v): the operator's exclusion of %s from hot is gone at the end: exclude._name is %q",
			seed, faults, operatorExcluded, kept)
	}
}

// indexSetting reads one setting of index through the REST API, as an operator would, "" when unset.
func indexSetting(api http.Handler, index, key string) (string, error) {
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/"+index+"/_settings?flat_settings=true", nil))
	if rec.Code != http.StatusOK {
		return "", fmt.Errorf("GET /%s/_settings: %d %s", index, rec.Code, rec.Body.String())
	}
	var got map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		return "", fmt.Errorf("GET /%s/_settings: %w", index, err)
	}
	v, _ := got[index].Settings[key].(string)
	return v, nil
}
