package runner

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
)

// firstTick returns the number of the first tick for which ok holds, 0 when none does.
func firstTick(ticks []Tick, ok func(Tick) bool) int {
	for _, tk := range ticks {
		if ok(tk) {
			return tk.N
		}
	}
	return 0
}

// Act before the queue forms: on a slow ramp the first move is issued before the first sample in
// which a node's WRITE queue waits 3 s, and it says why (the node is rising). A node flat at about
// 85 % with jitter is never rising and gets no move.
func TestEarlyRelief(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole scenarios")
	}
	t.Run("slow ramp: the first move comes before the first hot sample", func(t *testing.T) {
		t.Parallel()
		sc := scenario(t, "write-ramp-slow")
		res, ticks := runScenario(t, sc, BalancerShardwise)
		none, noneTicks := runScenario(t, sc, BalancerNone)
		hot := firstTick(ticks, func(tk Tick) bool { return len(tk.Hot) > 0 })
		moved := firstTick(ticks, func(tk Tick) bool { return len(tk.Issued) > 0 })
		t.Logf("first move at tick %d, first hot sample at tick %d (%d without shardwise); hot node-seconds %v (none %v), moves %d",
			moved, hot, firstTick(noneTicks, func(tk Tick) bool { return len(tk.Hot) > 0 }), res.HotNodeSeconds, none.HotNodeSeconds, res.Moves)
		if none.HotNodeSeconds == 0 {
			t.Fatal("no hotspot without shardwise: the scenario tests nothing")
		}
		if moved == 0 {
			t.Fatal("no move issued")
		}
		if hot != 0 && moved >= hot {
			t.Errorf("first move at tick %d, not before the first hot sample at tick %d", moved, hot)
		}
		for _, m := range ticks[moved-1].Issued {
			if m.Phase == allocation.PhaseWriteHotspot && !strings.Contains(m.Reason, "rising") {
				t.Errorf("the first move's reason does not say the node is rising: %s", m.Reason)
			}
		}
		if res.SafetyViolations != 0 || res.MovesUndoneByBuiltin != 0 {
			t.Errorf("safety violations %d, moves undone %d: want 0, 0", res.SafetyViolations, res.MovesUndoneByBuiltin)
		}
		if res.HotNodeSeconds >= none.HotNodeSeconds/2 {
			t.Errorf("hot node-seconds: got %v, want under half of %v without shardwise", res.HotNodeSeconds, none.HotNodeSeconds)
		}
	})
	t.Run("flat 85 % with jitter: no move", func(t *testing.T) {
		t.Parallel()
		res, ticks := runScenario(t, scenario(t, "write-flat-jitter"), BalancerShardwise)
		// The scenario must hold what it claims: node-0 busy near 85 %, jittering, never queueing
		// (until a move, if one was made, changed its load).
		lo, hi := 2.0, 0.0
		for _, tk := range ticks {
			if len(tk.Issued) > 0 {
				break
			}
			for _, n := range tk.Report.Nodes {
				if n.Name == "node-0" {
					lo, hi = min(lo, n.WriteUtil), max(hi, n.WriteUtil)
				}
			}
		}
		t.Logf("node-0 WRITE use between %.2f and %.2f; moves %d, hot node-seconds %v", lo, hi, res.Moves, res.HotNodeSeconds)
		if lo < 0.75 || hi > 0.95 || hi-lo < 0.05 {
			t.Fatalf("node-0 WRITE use between %.2f and %.2f: want a jitter of at least 5 %% within 75-95 %%", lo, hi)
		}
		if res.Moves != 0 || res.HotNodeSeconds != 0 {
			t.Errorf("moves %d, hot node-seconds %v: want 0, 0", res.Moves, res.HotNodeSeconds)
		}
		for _, tk := range ticks {
			for _, p := range tk.Plans {
				for _, h := range p.Hotspots {
					if h.Rising != nil {
						t.Fatalf("tick %d: %s judged rising: %s", tk.N, h.NodeName, h.Reason)
					}
				}
			}
		}
	})
}
