package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
)

// floorBy returns when index's replicas last changed to floor ("index a→floor"), and whether
// that was its last change.
func floorBy(ticks []Tick, index string, floor string) (time.Duration, bool) {
	ch := replicaChanges(ticks, index)
	if len(ch) == 0 {
		return 0, false
	}
	last := ch[len(ch)-1]
	for _, r := range last.Replicas {
		if strings.HasPrefix(r, index+" ") && strings.HasSuffix(r, "→"+floor) {
			return last.At, true
		}
	}
	return 0, false
}

// Issue 14's scenarios: a hot index spread wide, an idle night, a rolling restart.
func TestReplicaScenariosIssue14(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole scenarios")
	}
	// Each spike ends when its load is back to the baseline.
	const wideEnd, nightEnd, rollingEnd = 2460 * time.Second, 2460 * time.Second, 3060 * time.Second
	t.Run("wide spike: p99 search latency at least 10x under none, floor within 35 min of the end", func(t *testing.T) {
		res, ticks := simulate(t, "replicas-wide-spike", BalancerShardwise, false)
		none, _ := simulate(t, "replicas-wide-spike", BalancerNone, false)
		if res.P99SearchLatencyMs*10 > none.P99SearchLatencyMs {
			t.Errorf("p99 search latency: got %.0f ms, want at most a tenth of none's %.0f ms", res.P99SearchLatencyMs, none.P99SearchLatencyMs)
		}
		at, ok := floorBy(ticks, "catalog", "1")
		if !ok || at > wideEnd+35*time.Minute {
			t.Errorf("catalog back to 1 replica: got %v (%v), want within 35 min of %v; changes %v", at, ok, wideEnd, replicaChanges(ticks, "catalog"))
		}
		// Ideal: none's replica node-hours plus the extra copies (2 shards × 8 more replicas)
		// from the spike's start (600 s) to 30 min after its end.
		ideal := none.ReplicaNodeHours + 16*(wideEnd-600*time.Second+30*time.Minute).Hours()
		t.Logf("p99 %.0f ms (none %.0f ms); replica node-hours %.1f, ideal %.1f (none %.1f); catalog back to its floor at %v",
			res.P99SearchLatencyMs, none.P99SearchLatencyMs, res.ReplicaNodeHours, ideal, none.ReplicaNodeHours, at)
		if res.ReplicaNodeHours > ideal*1.1 {
			t.Errorf("replica node-hours: got %.1f, want within 10%% of the ideal %.1f", res.ReplicaNodeHours, ideal)
		}
	})
	t.Run("idle night: the day's copies go back to the floor within 35 min of the spike although the cluster is idle", func(t *testing.T) {
		res, ticks := simulate(t, "replicas-idle-night", BalancerShardwise, false)
		ch := replicaChanges(ticks, "shop")
		if len(ch) != 2 {
			t.Fatalf("shop changes: got %d (%v), want 2 (up for the day, down at night)", len(ch), ch)
		}
		at, ok := floorBy(ticks, "shop", "1")
		if !ok || at > nightEnd+35*time.Minute || at < nightEnd+30*time.Minute {
			t.Errorf("shop back to 1 replica: got %v (%v), want 30 to 35 min after %v", at, ok, nightEnd)
		}
		t.Logf("replica node-hours %.1f; shop back to its floor at %v", res.ReplicaNodeHours, at)
	})
	t.Run("rolling restart during a spike: no replica change from the restart", func(t *testing.T) {
		res, ticks := simulate(t, "replicas-rolling-restart", BalancerShardwise, false)
		var all []string
		for _, tk := range ticks {
			all = append(all, tk.Replicas...)
		}
		// The spike's own two changes, and nothing else: no cap while a node is briefly gone.
		if want := []string{"search 1→5", "search 5→1"}; strings.Join(all, ",") != strings.Join(want, ",") {
			t.Errorf("replica changes: got %v, want %v", all, want)
		}
		at, ok := floorBy(ticks, "search", "1")
		if !ok || at > rollingEnd+35*time.Minute {
			t.Errorf("search back to 1 replica: got %v (%v), want within 35 min of %v", at, ok, rollingEnd)
		}
		t.Logf("p99 %.0f ms; replica node-hours %.1f", res.P99SearchLatencyMs, res.ReplicaNodeHours)
	})
}

// A scale-up never creates a copy that cannot be assigned: with
// index.routing.allocation.total_shards_per_node=1, catalog's 2 shards fit 12 copies on 12 nodes,
// 6 of each shard, so replicas stop at 5 where the formula alone wants 9, and no copy is left
// unassigned once the recoveries are done.
func TestReplicasRespectTotalShardsPerNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole scenario")
	}
	ctx := context.Background()
	s, err := sim.New(scenario(t, "replicas-wide-spike"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/catalog/_settings",
		strings.NewReader(`{"index.routing.allocation.total_shards_per_node": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT catalog/_settings: %s", resp.Status)
	}
	cfg := config.Default()
	cfg.Safety.DryRun = false
	eng, events, stop, err := Attach(ctx, s, cfg, state.NewMemory(s.Now), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r := &run{engs: []*engine.Engine{eng}, events: events, copies: 1}
	var changes []string
	var last sim.TickReport
	for s.Elapsed() < 38*time.Minute {
		last = s.Step()
		var tk Tick
		if err := r.cycle(ctx, &tk); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, tk.Replicas...)
	}
	if want := []string{"catalog 1→5"}; strings.Join(changes, ",") != strings.Join(want, ",") {
		t.Errorf("replica changes during the spike: got %v, want %v", changes, want)
	}
	if last.Unassigned != 0 || last.Health != "green" {
		t.Errorf("at 38 min: %d unassigned copies, health %s; want 0 and green", last.Unassigned, last.Health)
	}
}
