package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

func scenario(t *testing.T, name string) *sim.Scenario {
	t.Helper()
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func simulate(t *testing.T, name, balancer string, dryRun bool) (Result, []Tick) {
	t.Helper()
	cfg := config.Default()
	cfg.Safety.DryRun = dryRun
	var ticks []Tick
	res, err := Run(context.Background(), scenario(t, name), Options{Balancer: balancer, Config: cfg, OnTick: func(tk Tick) { ticks = append(ticks, tk) }})
	if err != nil {
		t.Fatal(err)
	}
	return res, ticks
}

// The foundation's end-to-end claims, on the simulator over HTTP through the production client.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole scenarios")
	}
	t.Run("write-hotspot ends with no hot node, one move per hot node per period", func(t *testing.T) {
		res, ticks := simulate(t, "write-hotspot", BalancerShardwise, false)
		none, _ := simulate(t, "write-hotspot", BalancerNone, false)
		if res.SafetyViolations != 0 {
			t.Fatalf("safety violations: got %d want 0: %+v", res.SafetyViolations, res.Violations)
		}
		if res.MovesUndoneByBuiltin != 0 {
			t.Errorf("moves undone by builtin: got %d want 0", res.MovesUndoneByBuiltin)
		}
		if res.Moves == 0 {
			t.Fatalf("moves: got 0, want the hotspot corrected")
		}
		if last := ticks[len(ticks)-1]; len(last.Hot) != 0 {
			t.Errorf("last tick: got hot nodes %v, want none", last.Hot)
		}
		if res.HotNodeSeconds >= none.HotNodeSeconds/2 {
			t.Errorf("hot node-seconds: got %v with shardwise, %v without: want under half", res.HotNodeSeconds, none.HotNodeSeconds)
		}
		for _, tk := range ticks {
			// A swap is two moves in one call; per tick at most one swap (2 moves) per hot node.
			if len(tk.Moves) > 2*max(len(tk.Hot), 1) {
				t.Errorf("tick %d: %d moves for %d hot nodes", tk.N, len(tk.Moves), len(tk.Hot))
			}
		}
	})
	t.Run("steady makes no moves", func(t *testing.T) {
		res, _ := simulate(t, "steady", BalancerShardwise, false)
		if res.Moves != 0 || res.SafetyViolations != 0 {
			t.Errorf("got moves %d violations %d, want 0 and 0", res.Moves, res.SafetyViolations)
		}
	})
	t.Run("a shard outweighing its node: no move, scale-up signalled", func(t *testing.T) {
		res, _ := simulate(t, "shard-outweighs-node", BalancerShardwise, false)
		if res.Moves != 0 {
			t.Errorf("moves: got %d want 0", res.Moves)
		}
		if res.ScaleUpSignals == 0 {
			t.Error("scale-up signals: got 0, want at least one")
		}
	})
	t.Run("dry-run moves nothing", func(t *testing.T) {
		res, ticks := simulate(t, "write-hotspot", BalancerShardwise, true)
		if res.Moves != 0 {
			t.Errorf("moves in dry-run: got %d want 0", res.Moves)
		}
		planned := 0
		for _, tk := range ticks {
			planned += len(tk.Moves)
		}
		if planned == 0 {
			t.Error("dry-run reported no would-be moves")
		}
	})
}
