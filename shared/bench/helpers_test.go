package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/shardwise/shardwise/shared/runner"
	"github.com/shardwise/shardwise/shared/sim"
)

// scenarioCopy writes the repository's scenario from as name into dir, cut to seconds of virtual
// time, so a test runs it in well under a second per balancer.
func scenarioCopy(t *testing.T, dir, from, name string, seconds float64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "scenarios", from+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	sc["name"], sc["duration_seconds"] = name, seconds
	if data, err = json.Marshal(sc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixedRun is a run with the result's fields the table shows and a short series.
func fixedRun(scenario, balancer string, hot float64) Record {
	return Record{
		Scenario: scenario,
		Balancer: balancer,
		Result: runner.Result{
			Balancer: balancer,
			Result: sim.Result{
				Scenario: scenario, Ticks: 4, Moves: 3, BytesMoved: 3 << 29, MovesUndoneByBuiltin: 1,
				HotNodeSeconds: hot, MaxQueueLatencySeconds: 7.5, P99QueueLatencySeconds: 4.1,
				RejectedWrites: 12, ReplicaNodeHours: 31.5, P99SearchLatencyMs: 38, SafetyViolations: 0,
				BuiltinRelocations: 2, Hotspots: 2, HotspotSecondsP50: 60, HotspotSecondsMax: 90,
				SearchHotNodeSeconds: 30, P50SearchLatencyMs: 21,
			},
			ScaleUpSignals: 1,
		},
		Series: Series{
			TickSeconds: 30,
			HotNodes:    []int{0, 1, 2, 0},
			Moves:       []int{0, 2, 1, 0},
			Replicas:    []int{6, 6, 7, 7},
			Nodes: []NodeSeries{
				{Name: "node-0", Ticks: []int{0, 1, 2, 3}, QueueSeconds: []float64{0, 3.5, 7.5, 0.2}},
				// node-1 leaves after the first tick and comes back for the last.
				{Name: "node-1", Ticks: []int{0, 3}, QueueSeconds: []float64{0.1, 0.3}},
			},
		},
	}
}

// fixedResults are two scenarios' runs as a benchmark would report them.
func fixedResults(scenarios []string, balancers ...string) Results {
	res := Results{Balancers: balancers}
	for _, sc := range scenarios {
		res.Scenarios = append(res.Scenarios, ScenarioInfo{Name: sc, Description: "A <fixed> scenario & more.", TickSeconds: 30, DurationSeconds: 120, Nodes: 2})
		for i, b := range balancers {
			res.Runs = append(res.Runs, fixedRun(sc, b, float64(100*(i+1))))
		}
	}
	return res
}
