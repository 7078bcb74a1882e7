package alloc_test

import (
	"github.com/shardwise/shardwise/shared/sim"

	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// cycleScenario has two shards on disjoint nodes and two empty nodes, so two moves touch no node
// in common. Rebalancing is off so only the commands move anything.
const cycleScenario = `{
  "name": "cycle", "seed": 5, "tick_seconds": 30, "duration_seconds": 3000,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}, {"name": "f"}],
  "indices": [
    {"name": "x", "primaries": 2, "replicas": 1, "shard_bytes": 1048576,
     "write_load": {"kind": "constant", "value": 1}, "placement": [["a", "b"], ["c", "d"]]}
  ]
}`

// TestCycleInvariants: one mover acts once per cycle, within its budget. A second reroute call
// that starts relocations in the same tick, or more relocations than the budget, is a violation;
// the same calls a tick apart are not.
func TestCycleInvariants(t *testing.T) {
	cases := []struct {
		name     string
		maxMoves int
		calls    []string
		step     bool // a tick passes between the calls
		want     string
	}{
		{name: "one call within the budget", maxMoves: 2, calls: []string{simtest.Commands(simtest.Move("x", 0, "a", "e"), simtest.Move("x", 1, "c", "f"))}},
		{name: "one call over the budget", maxMoves: 1, calls: []string{simtest.Commands(simtest.Move("x", 0, "a", "e"), simtest.Move("x", 1, "c", "f"))},
			want: "2 relocations started by reroute this cycle, over max_moves_per_cycle 1"},
		{name: "two calls in one cycle", calls: []string{simtest.Commands(simtest.Move("x", 0, "a", "e")), simtest.Commands(simtest.Move("x", 1, "c", "f"))},
			want: "two movers acting on the cluster at once"},
		{name: "two calls a cycle apart", step: true, calls: []string{simtest.Commands(simtest.Move("x", 0, "a", "e")), simtest.Commands(simtest.Move("x", 1, "c", "f"))}},
		{name: "a dry run is no action", calls: []string{simtest.Commands(simtest.Move("x", 0, "a", "e")), simtest.Commands(simtest.Move("x", 1, "c", "f")) + "?dry"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.ParseScenario([]byte(cycleScenario))
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.New(sc, sim.Options{MaxMovesPerCycle: tc.maxMoves})
			if err != nil {
				t.Fatal(err)
			}
			s.Step()
			for i, body := range tc.calls {
				if i > 0 && tc.step {
					s.Step()
				}
				target := "/_cluster/reroute"
				if b, ok := strings.CutSuffix(body, "?dry"); ok {
					body, target = b, target+"?dry_run=true"
				}
				if code, resp := simtest.Call(t, s, "POST", target, body); code != 200 {
					t.Fatalf("call %d: HTTP %d %s", i+1, code, resp)
				}
			}
			res := s.Result()
			switch {
			case tc.want == "" && res.SafetyViolations != 0:
				t.Fatalf("got violations %+v, want none", res.Violations)
			case tc.want != "" && (res.SafetyViolations != 1 || !strings.Contains(res.Violations[0].What, tc.want)):
				t.Fatalf("got violations %+v, want one saying %q", res.Violations, tc.want)
			}
		})
	}
}
