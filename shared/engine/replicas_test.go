package engine

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/replicas"
)

// replicaWorld has capped, whose 3 replicas cannot all live on 3 nodes (one is unassigned, so the
// cap applies once delayed_timeout has passed: replicasConfig sets it to 0), and popular, carrying
// all of the cluster's search load on 1 replica and keeping its two nodes' 26 search threads 77 %
// busy: the formula wants 3 copies and need agrees, so it scales up to 2 replicas.
func replicaWorld() *world {
	return newWorld("a", "b", "c").
		index("capped", 3, []float64{0}, []float64{0}, []string{"a", "b", "c", ""}).
		index("popular", 1, []float64{0}, []float64{20}, []string{"a", "b"})
}

func replicasConfig() config.Config {
	c := testConfig("prod")
	c.Replicas.Enabled, c.Safety.DryRun = true, false
	c.Replicas.NodeLeftDelay = 0
	return c
}

// replicaRig ingests two samples of w, so search loads are known, and returns the second's key.
func replicaRig(t *testing.T, w *world) (*rig, string) {
	t.Helper()
	r := newRig(t, replicasConfig(), map[string]*world{"prod": w})
	r.ingest(t, "prod")
	w.tick(30 * time.Second)
	key := r.ingest(t, "prod")
	r.bus.Drain()
	return r, key
}

func kinds(ds []replicas.Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Index+" "+d.Kind)
	}
	return out
}

func replicaPuts(puts []putCall) []string {
	var out []string
	for _, p := range puts {
		out = append(out, fmt.Sprintf("%s=%v", p.Index, p.Settings["index.number_of_replicas"]))
	}
	return out
}

func TestReplicasBreaker(t *testing.T) {
	cases := []struct {
		name    string
		health  Health
		fail    error
		applied []string
		puts    []string
	}{
		{"breaker closed: cap and scale-up", Health{Status: "green"}, nil, []string{"capped cap", "popular scale-up"}, []string{"capped=2", "popular=2"}},
		{"health yellow: the cap applies, the scale-up waits", Health{Status: "yellow", Unassigned: 1}, nil, []string{"capped cap"}, []string{"capped=2"}},
		{"OpenSearch's balancer within cluster_concurrent_rebalance: both apply", Health{Status: "green", Relocating: 2}, nil, []string{"capped cap", "popular scale-up"}, []string{"capped=2", "popular=2"}},
		{"relocations over cluster_concurrent_rebalance: the cap applies, the scale-up waits", Health{Status: "green", Relocating: 3}, nil, []string{"capped cap"}, []string{"capped=2"}},
		{"unreachable: nothing applies", Health{}, errors.New("connection refused"), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, key := replicaRig(t, replicaWorld())
			api := r.apis["prod"]
			api.health, api.healthErr = tc.health, tc.fail

			res, err := r.e.Replicas(t.Context(), "prod", key)
			if err != nil {
				t.Fatal(err)
			}
			var decided []string
			for _, d := range res.Decisions {
				if d.IsChange() {
					decided = append(decided, d.Index+" "+d.Kind)
				}
			}
			if want := []string{"capped cap", "popular scale-up"}; !slices.Equal(decided, want) {
				t.Fatalf("decisions: got %v want %v\n%+v", decided, want, res.Decisions)
			}
			if got := kinds(res.Applied); !slices.Equal(got, tc.applied) {
				t.Errorf("applied: got %v want %v", got, tc.applied)
			}
			if res.Breaker.Closed != (len(tc.applied) == 2) {
				t.Errorf("breaker closed %v: %s", res.Breaker.Closed, res.Breaker.Reason())
			}
			if _, puts, _ := api.calls(); !slices.Equal(replicaPuts(puts), tc.puts) {
				t.Errorf("settings: got %v want %v", replicaPuts(puts), tc.puts)
			}
			ev := events[bus.ReplicasChanged](t, r.bus.Drain(), bus.TypeReplicasChanged)
			if len(tc.applied) == 0 {
				if len(ev) != 0 {
					t.Errorf("Replicas Changed published with nothing applied: %+v", ev)
				}
				return
			}
			if len(ev) != 1 || len(ev[0].Changes) != len(tc.applied) || ev[0].DryRun {
				t.Fatalf("Replicas Changed: got %+v, want one event with %d changes", ev, len(tc.applied))
			}
			for _, c := range ev[0].Changes {
				if c.Reason == "" || c.N != 3 || c.S != 1 {
					t.Errorf("change %s: reason %q N %d S %d, want the formula's numbers", c.Index, c.Reason, c.N, c.S)
				}
			}
		})
	}
}

// A scale-up the breaker held is decided again from the memory it would have had, and applied on
// the first cycle the breaker is closed.
func TestReplicasHeldScaleUpAppliesOnceTheBreakerCloses(t *testing.T) {
	w := replicaWorld()
	r, key := replicaRig(t, w)
	api := r.apis["prod"]
	api.health = Health{Status: "yellow"}
	if _, err := r.e.Replicas(t.Context(), "prod", key); err != nil {
		t.Fatal(err)
	}
	api.health = Health{Status: "green"}
	w.tick(30 * time.Second)
	res, err := r.e.Replicas(t.Context(), "prod", r.ingest(t, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Applied); !slices.Equal(got, []string{"popular scale-up"}) {
		t.Errorf("second cycle applied %v, want the held scale-up only (the cap took effect)", got)
	}
	if _, puts, _ := api.calls(); !slices.Equal(replicaPuts(puts), []string{"capped=2", "popular=2"}) {
		t.Errorf("settings: got %v", replicaPuts(puts))
	}
}

func TestReplicasDuplicateSnapshotIsRepeated(t *testing.T) {
	r, key := replicaRig(t, replicaWorld())
	first, err := r.e.Replicas(t.Context(), "prod", key)
	if err != nil {
		t.Fatal(err)
	}
	if first.Repeated || len(first.Applied) != 2 {
		t.Fatalf("first: repeated %v applied %v", first.Repeated, kinds(first.Applied))
	}
	r.bus.Drain()
	second, err := r.e.Replicas(t.Context(), "prod", key)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Repeated || len(second.Applied) != 0 {
		t.Errorf("second: repeated %v applied %v, want repeated and nothing applied", second.Repeated, kinds(second.Applied))
	}
	if _, puts, _ := r.apis["prod"].calls(); len(puts) != 2 {
		t.Errorf("settings calls: got %d want 2 (none for the duplicate)", len(puts))
	}
	if n := len(r.bus.Drain()); n != 0 {
		t.Errorf("duplicate published %d events", n)
	}
}

func TestReplicasDryRunChangesNothing(t *testing.T) {
	w := replicaWorld()
	cfg := replicasConfig()
	cfg.Safety.DryRun = true
	r := newRig(t, cfg, map[string]*world{"prod": w})
	r.ingest(t, "prod")
	w.tick(30 * time.Second)
	res, err := r.e.Replicas(t.Context(), "prod", r.ingest(t, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 2 {
		t.Errorf("applied (would-be): got %v", kinds(res.Applied))
	}
	if _, puts, _ := r.apis["prod"].calls(); len(puts) != 0 {
		t.Errorf("dry-run changed settings: %v", replicaPuts(puts))
	}
	ev := events[bus.ReplicasChanged](t, r.bus.Drain(), bus.TypeReplicasChanged)
	if len(ev) != 1 || !ev[0].DryRun {
		t.Errorf("Replicas Changed: got %+v, want one marked dry_run", ev)
	}
}

func TestReplicasDisabledDoesNothing(t *testing.T) {
	w := replicaWorld()
	cfg := replicasConfig()
	cfg.Replicas.Enabled = false
	r := newRig(t, cfg, map[string]*world{"prod": w})
	key := r.ingest(t, "prod")
	res, err := r.e.Replicas(t.Context(), "prod", key)
	if err != nil || len(res.Decisions) != 0 {
		t.Errorf("disabled: got %+v, %v", res, err)
	}
	if _, _, reads := r.apis["prod"].calls(); reads != 1 {
		t.Errorf("reads: got %d, want only the ingest's", reads)
	}
}
