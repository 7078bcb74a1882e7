package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/runner"
	"github.com/shardwise/shardwise/shared/sim"
)

// plan plans what simulate plans: the same scenario sampled at the same moments, every 30 s tick
// from the start, gives the same moves with the same reasons' figures (issue 25, item 8). simulate
// runs dry (nothing moves, so the two clusters stay the same); plan reads the simulator over HTTP
// as it reads any cluster, stepping it one tick between samples.
func TestPlanMatchesSimulate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario twice")
	}
	for _, name := range []string{"write-hotspot", "hotspot-three-zones"} {
		t.Run(name, func(t *testing.T) {
			sc, err := sim.LoadScenario(scenarioPath(name))
			if err != nil {
				t.Fatal(err)
			}
			label := func(m allocation.Move) string {
				return fmt.Sprintf("%s[%d] %s->%s %s %.3f", m.Index, m.Shard, m.FromName, m.ToName, m.Phase, m.WriteLoad)
			}
			var want []string
			tick := 0
			_, err = runner.Run(context.Background(), sc, runner.Options{Balancer: runner.BalancerShardwise, Config: config.Default(),
				OnTick: func(tk runner.Tick) {
					for _, p := range tk.Plans {
						if want == nil && len(p.Moves) > 0 {
							tick = tk.N
							for _, m := range p.Moves {
								want = append(want, label(m))
							}
						}
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				t.Fatal("simulate planned no move")
			}
			s, err := sim.New(sc, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			oldWait, oldClock := waitSample, liveClock
			waitSample = func(context.Context, time.Duration) error { s.Step(); return nil }
			liveClock = s.Now
			defer func() { waitSample, liveClock = oldWait, oldClock }()
			s.Step() // simulate's first sample is at the end of its first tick
			got := planOn(t, srv.URL, tick)
			if have := labels(got.Moves, label); !slices.Equal(have, want) {
				t.Fatalf("tick %d: plan planned\n  %v\nsimulate planned\n  %v", tick, have, want)
			}
			// The same with the collector's clock three times slower than the cluster's (samples
			// 10 s apart on it, 30 s on the cluster's), as against `shardwise sim serve --speed
			// 3`: the nodes' own stats timestamps time the streak and the backlog's growth.
			slow, err := sim.New(sc, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			slowSrv := httptest.NewServer(slow.Handler())
			defer slowSrv.Close()
			start, samples := slow.Now(), 0
			waitSample = func(context.Context, time.Duration) error { slow.Step(); samples++; return nil }
			liveClock = func() time.Time { return start.Add(time.Duration(samples) * 10 * time.Second) }
			slow.Step()
			if have := labels(planOn(t, slowSrv.URL, tick).Moves, label); !slices.Equal(have, want) {
				t.Fatalf("tick %d, the collector's clock 3× slower than the cluster's: plan planned\n  %v\nsimulate planned\n  %v", tick, have, want)
			}
			// explain, on a third simulator sampled alike, answers for the first move's copy and
			// target what the plan's verdicts say.
			m := got.Moves[0]
			s2, err := sim.New(sc, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv2 := httptest.NewServer(s2.Handler())
			defer srv2.Close()
			waitSample = func(context.Context, time.Duration) error { s2.Step(); return nil }
			liveClock = s2.Now
			s2.Step()
			args := []string{"explain", m.Index, fmt.Sprint(m.Shard), "--url", srv2.URL, "--samples", fmt.Sprint(tick), "--interval", "30s", "--json"}
			if m.Primary {
				args = append(args, "--primary")
			}
			out, _, err := execute(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			var ex []allocation.NodeExplanation
			if err := json.Unmarshal([]byte(out), &ex); err != nil {
				t.Fatalf("explain --json: %v", err)
			}
			verdicts := func(vs []allocation.Verdict) []string {
				var out []string
				for _, v := range vs {
					out = append(out, fmt.Sprintf("%s %s %.4f/%.4f", v.Decider, v.Decision, v.Value, v.Limit))
				}
				return out
			}
			i := slices.IndexFunc(ex, func(n allocation.NodeExplanation) bool { return n.Node == m.To })
			if i < 0 {
				t.Fatalf("explain lists no %s", m.ToName)
			}
			if g, w := verdicts(ex[i].Verdicts), verdicts(m.Verdicts); !slices.Equal(g, w) {
				t.Errorf("%s: explain answers\n  %v\nthe plan's verdicts are\n  %v", label(m), g, w)
			}
		})
	}
}

// planOn runs plan --json against url with samples samples, and returns its plan.
func planOn(t *testing.T, url string, samples int) allocation.Plan {
	t.Helper()
	out, _, err := execute(t, "plan", "--url", url, "--samples", fmt.Sprint(samples), "--interval", "30s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plan allocation.Plan `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("plan --json: %v", err)
	}
	return got.Plan
}

// labels names each move by label.
func labels(moves []allocation.Move, label func(allocation.Move) string) []string {
	var out []string
	for _, m := range moves {
		out = append(out, label(m))
	}
	return out
}
