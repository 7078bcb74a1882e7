package scenario_test

import (
	"github.com/shardwise/shardwise/shared/sim/simtest"

	"github.com/shardwise/shardwise/shared/sim"

	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// FuzzParseScenario checks that no input panics the parser, and that whatever it accepts is a
// scenario the simulator can build and run, and survives a round trip through JSON unchanged.
func FuzzParseScenario(f *testing.F) {
	for _, name := range []string{"steady", "write-hotspot", "write-hotspot-placement", "search-spike", "shard-outweighs-node"} {
		data, err := os.ReadFile(filepath.Join(simtest.SharedScenarioDir(), name+".json"))
		if err != nil {
			f.Fatalf("seed corpus: %v", err)
		}
		f.Add(data)
	}
	f.Add([]byte(simtest.Minimal))
	f.Add([]byte(`{"name":"z","seed":0,"tick_seconds":1,"duration_seconds":1,"nodes":[{"name":"a"}],` +
		`"indices":[{"name":"i","primaries":1,"replicas":0,"shard_bytes":0,"write_load":{"kind":"constant","value":0}}]}`))
	f.Add([]byte(`{"name":"g","seed":2,"tick_seconds":10,"duration_seconds":60,"nodes":[{"name":"a"},{"name":"b"}],"indices":[],` +
		`"index_groups":[{"name_prefix":"m-","count":3,"primaries":1,"replicas":1,"shard_bytes":10,` +
		`"write_load":{"kind":"sine","mean":2,"amplitude":1,"period_seconds":30},"skew":{"kind":"zipf","s":1.1}}],` +
		`"events":[{"at_seconds":20,"kind":"node_leave","node":"b"},{"at_seconds":30,"kind":"api_latency","ms":1,"until_seconds":40}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenario.ParseScenario(data)
		if err != nil {
			return
		}
		// Keep the run short: the property is about accepted input, not long simulations.
		if sc.DurationSeconds/sc.TickSeconds > 20 || countCopies(sc) > 5000 {
			return
		}
		s, err := sim.New(sc, sim.Options{})
		if err != nil {
			t.Fatalf("ParseScenario accepted a scenario New refuses: %v", err)
		}
		for !s.Done() {
			s.Step()
		}
		again, err := json.Marshal(sc)
		if err != nil {
			t.Fatalf("marshal accepted scenario: %v", err)
		}
		sc2, err := scenario.ParseScenario(again)
		if err != nil {
			t.Fatalf("re-parse of marshalled scenario failed: %v\n%s", err, again)
		}
		third, err := json.Marshal(sc2)
		if err != nil {
			t.Fatalf("marshal re-parsed scenario: %v", err)
		}
		if string(third) != string(again) {
			t.Fatalf("round trip changed the scenario:\n%s\n%s", again, third)
		}
	})
}

func countCopies(sc *scenario.Scenario) int {
	n := 0
	for _, ix := range sc.Indices {
		n += ix.Primaries * (ix.Replicas + 1)
	}
	for _, g := range sc.IndexGroups {
		n += g.Count * g.Primaries * (g.Replicas + 1)
	}
	return n
}
