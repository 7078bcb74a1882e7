package bench

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/runner"
	"github.com/shardwise/shardwise/shared/sim"
)

// progressLog records what a benchmark reported.
type progressLog struct {
	starts []string
	ticks  int
	done   int
}

func (p *progressLog) Start(scenario, balancer string, _, _, _ int) {
	p.starts = append(p.starts, scenario+" "+balancer)
}
func (p *progressLog) Tick(int)             { p.ticks++ }
func (p *progressLog) Done(_ runner.Result) { p.done++ }

func TestRun(t *testing.T) {
	dir := t.TempDir()
	// 20 minutes: the write spike starts at 10, so both balancers see hot nodes.
	scenarioCopy(t, dir, "write-hotspot", "write-hotspot", 1200)
	scenarioCopy(t, dir, "steady", "steady-production", 600)
	p := &progressLog{}
	res, err := Run(t.Context(), Options{
		Dir: dir, Quick: true, Balancers: []string{runner.BalancerShardwise, runner.BalancerNone},
		Config: config.Default(), Progress: p,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Skipped, []string{"steady-production"}) {
		t.Errorf("skipped: got %q, want the production scenario", res.Skipped)
	}
	if want := []string{"write-hotspot shardwise", "write-hotspot none"}; !slices.Equal(p.starts, want) {
		t.Errorf("progress starts: got %q, want %q", p.starts, want)
	}
	if p.ticks != 80 || p.done != 2 {
		t.Errorf("progress: got %d ticks and %d runs done, want 80 and 2", p.ticks, p.done)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("runs: got %d, want 2", len(res.Runs))
	}
	for _, r := range res.Runs {
		s := r.Series
		if len(s.HotNodes) != 40 || len(s.Moves) != 40 || len(s.Replicas) != 40 {
			t.Fatalf("%s: got %d, %d, %d ticks of hot nodes, moves, replicas; want 40 each", r.Balancer, len(s.HotNodes), len(s.Moves), len(s.Replicas))
		}
		// The series add up to the run's own measures.
		hot, replicas, moves := 0, 0, 0
		for i := range s.HotNodes {
			hot += s.HotNodes[i]
			replicas += s.Replicas[i]
			moves += s.Moves[i]
		}
		if got, want := float64(hot)*s.TickSeconds, r.Result.HotNodeSeconds; got != want {
			t.Errorf("%s: hot nodes sum to %g node-seconds, the run measured %g", r.Balancer, got, want)
		}
		if got, want := float64(replicas)*s.TickSeconds/3600, r.Result.ReplicaNodeHours; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: replicas sum to %g node-hours, the run measured %g", r.Balancer, got, want)
		}
		if got, want := moves, r.Result.Moves+r.Result.BuiltinRelocations; got != want {
			t.Errorf("%s: moves sum to %d, the run has %d moves and built-in relocations", r.Balancer, got, want)
		}
		if len(s.Nodes) != 6 {
			t.Errorf("%s: got queue latency of %d nodes, want 6", r.Balancer, len(s.Nodes))
		}
		for _, n := range s.Nodes {
			if len(n.Ticks) != 40 || len(n.QueueSeconds) != 40 {
				t.Errorf("%s %s: got %d ticks of queue latency, want 40", r.Balancer, n.Name, len(n.QueueSeconds))
			}
		}
		if hot == 0 {
			t.Errorf("%s: no hot node in 20 minutes of write-hotspot", r.Balancer)
		}
	}
}

// TestRunScenarioConfig: a scenario's own configuration (configs/<name>.json) is laid over the
// benchmark's, here the noisy tenant's sandboxes, whose hard tenant then has searches cancelled; a
// configuration that does not parse stops the benchmark before any run, naming the file.
func TestRunScenarioConfig(t *testing.T) {
	dir := t.TempDir()
	scenarioCopy(t, dir, "sandbox-noisy-tenant", "sandbox-noisy-tenant", 600)
	if err := os.Mkdir(filepath.Join(dir, "configs"), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "configs", "sandbox-noisy-tenant.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "configs", "sandbox-noisy-tenant.json")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: dir, Balancers: []string{runner.BalancerShardwise}, Config: config.Default()}
	res, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Scenarios[0].Config; got != cfgPath {
		t.Errorf("scenario config: got %q, want %q", got, cfgPath)
	}
	if got := res.Runs[0].Result.TasksCancelledByTenant["reports"]; got == 0 {
		t.Errorf("the hard tenant's cancelled tasks: got 0, want its sandbox enforced")
	}

	if err := os.WriteFile(cfgPath, []byte(`{"sandbox": {"definitons": []}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), opts); err == nil || !strings.Contains(err.Error(), cfgPath) {
		t.Errorf("a misspelt field in the scenario's config: got %v, want an error naming %s", err, cfgPath)
	}
}

func TestRunRejectsUnknownBalancer(t *testing.T) {
	_, err := Run(t.Context(), Options{Dir: t.TempDir(), Balancers: []string{"nope"}})
	if err == nil {
		t.Fatal("got no error for an unknown balancer")
	}
}

func TestSmall(t *testing.T) {
	nodes := func(n int) []sim.NodeSpec { return make([]sim.NodeSpec, n) }
	join := sim.Event{Kind: sim.EventNodeJoin}
	tests := []struct {
		name string
		sc   sim.Scenario
		want bool
	}{
		{"six nodes", sim.Scenario{Name: "write-hotspot", Nodes: nodes(6)}, true},
		{"twelve nodes", sim.Scenario{Name: "a", Nodes: nodes(12)}, true},
		{"thirteen nodes", sim.Scenario{Name: "a", Nodes: nodes(13)}, false},
		{"joins count", sim.Scenario{Name: "a", Nodes: nodes(11), Events: []sim.Event{join, join}}, false},
		{"production by name", sim.Scenario{Name: "scale-out-production", Nodes: nodes(3)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Small(&tt.sc); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
