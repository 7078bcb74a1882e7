package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/sandbox"
)

// The sandbox function keeps looking within its invocation: a pass every interval for its budget,
// each sleep on the engine's clock, so a flood is met at the rate it arrives. It does not loop
// when nothing acts or the budget leaves no interval, and a sleep that fails ends the loop.
func TestSandboxLoop(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		budget     time.Duration
		sleepErr   error
		wantPasses int
		wantLoop   string
	}{
		{name: "hard: a pass every 2 s for 10 s", mode: "hard", budget: 10 * time.Second, wantPasses: 6, wantLoop: "looked every 2s for 10s"},
		{name: "monitor only: one pass", mode: "monitor", budget: 10 * time.Second, wantPasses: 1, wantLoop: "every sandbox is in monitor mode"},
		{name: "no budget: one pass", mode: "hard", wantPasses: 1, wantLoop: "leaves no 2s interval"},
		{name: "a failed sleep ends the loop", mode: "hard", budget: 10 * time.Second, sleepErr: context.Canceled, wantPasses: 1, wantLoop: "stopped after 1 passes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("prod")
			cfg.Safety.DryRun = false
			cfg.Sandbox.Definitions = []byte(fmt.Sprintf(tenantDefs, tc.mode))
			if tc.mode == "monitor" {
				cfg.Sandbox.Definitions = []byte(`[{"name": "noisy", "attributes": {"custom_id": "noisy-*"}, "resources": {"cpu": {"allocation": 0.2}}, "enforcement": "monitor"}]`)
			}
			r := newRig(t, cfg, map[string]*world{"prod": newWorld("c1", "d1")})
			tasks, loads := tenantTasks()
			loads[1].CPU = 0.95
			api := &tasksAPI{fakeAPI: r.apis["prod"], tasks: tasks, loads: loads}
			api.health = Health{Status: "green"}
			r.e.Tenants = func(string) (TenantCluster, error) { return api, nil }
			now := t0
			r.e.Clock = func() time.Time { return now }
			var slept []time.Duration
			r.e.Sleep = func(_ context.Context, d time.Duration) error {
				if tc.sleepErr != nil {
					return tc.sleepErr
				}
				slept = append(slept, d)
				now = now.Add(d)
				return nil
			}
			r.e.SandboxLoop = SandboxLoop{Budget: tc.budget}
			m := &metricRec{}
			r.e.Metrics = m
			res, err := r.e.Sandbox(t.Context(), "prod")
			if err != nil {
				t.Fatal(err)
			}
			if res.Passes != tc.wantPasses || len(slept) != max(tc.wantPasses-1, 0) && tc.sleepErr == nil {
				t.Errorf("passes %d after sleeps %v, want %d", res.Passes, slept, tc.wantPasses)
			}
			if !strings.Contains(res.Loop, tc.wantLoop) {
				t.Errorf("loop %q, want it to say %q", res.Loop, tc.wantLoop)
			}
			// Each pass cancels what the fake still lists: three per pass when hard.
			if tc.mode == "hard" && len(api.cancelled) != 3*tc.wantPasses {
				t.Errorf("cancel calls %d over %d passes, want 3 each", len(api.cancelled), tc.wantPasses)
			}
			// One event per sandbox for the whole invocation, however many passes cancelled.
			evs := events[bus.SandboxEnforced](t, r.bus.Drain(), bus.TypeSandboxEnforced)
			if tc.mode == "hard" {
				if len(evs) != 1 || evs[0].Cancellations == nil || evs[0].Cancellations.Count != 3*tc.wantPasses ||
					evs[0].Cancellations.Passes != tc.wantPasses || evs[0].Cancellations.Outcomes[CancelExecuted] != 3*tc.wantPasses {
					t.Errorf("events got %+v, want one for noisy counting %d cancellations over %d passes", evs, 3*tc.wantPasses, tc.wantPasses)
				}
			} else if len(evs) != 0 {
				t.Errorf("events got %+v, want none", evs)
			}
			// The invocation's record: usage per node over its passes and its cancellations.
			recs, err := SandboxHistory(t.Context(), r.e.Store, "prod", t0, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Passes != tc.wantPasses || !recs[0].At.Equal(now) || !strings.Contains(res.History, "recorded sandbox#history#") {
				t.Fatalf("history got %+v (%s), want one record of %d passes at %s", recs, res.History, tc.wantPasses, now)
			}
			var noisy *sandbox.UsageRow
			for i, u := range recs[0].Usage {
				if u.Node == "d1" && u.Sandbox == "noisy" && u.Resource == sandbox.CPU {
					noisy = &recs[0].Usage[i]
				}
			}
			if noisy == nil || noisy.Peak < 0.749 || noisy.Peak > 0.751 || noisy.Over != tc.wantPasses {
				t.Errorf("noisy's usage row on d1 got %+v, want peak 0.75 over its limit in all %d passes", noisy, tc.wantPasses)
			}
			if tc.mode == "hard" {
				c := recs[0].Cancelled
				if len(c) != 1 || c[0].Sandbox != "noisy" || c[0].Count[CancelExecuted] != 3*tc.wantPasses ||
					c[0].Freed[CancelExecuted] < 0.75*float64(tc.wantPasses)-1e-6 || recs[0].PlanTotal != 3 {
					t.Errorf("cancelled got %+v, plan total %d; want noisy's %d executed, freeing 0.75 a pass, and the last pass's 3 planned",
						c, recs[0].PlanTotal, 3*tc.wantPasses)
				}
			}
			// The alarm's metric and the dashboard's per-tenant cancellations.
			for _, want := range []string{"SandboxOverLimit Cluster=prod,Sandbox=noisy 1.000", "SandboxOverLimit Cluster=prod,Sandbox=steady 0.000",
				"SandboxRequestsCancelled Cluster=prod,Sandbox=noisy 3.000"} {
				if tc.mode == "hard" && !slices.Contains(m.seen, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

// The function leaves the per-second work to the plugin only when the plugin holds every sandbox
// that acts, for real, with the rule that brings it its requests.
func TestWLMEnforces(t *testing.T) {
	defs := sandbox.Definitions{Sandboxes: []sandbox.Sandbox{
		{Name: "flood", Enforcement: sandbox.Hard}, {Name: "batch", Enforcement: sandbox.Monitor},
	}}
	ok := WLMSyncResult{Support: sandbox.WLMSupport{API: sandbox.WorkloadGroupAPI, Rules: true}, Mode: "enabled", Ruled: []string{"flood"}}
	with := func(f func(*WLMSyncResult)) WLMSyncResult { r := ok; f(&r); return r }
	tests := []struct {
		name string
		sync WLMSyncResult
		err  error
		want bool
		why  string
	}{
		{"synced, enabled, ruled", ok, nil, true, "enforces every sandbox"},
		{"the sync failed", ok, errors.New("boom"), false, "sync failed"},
		{"no plugin", WLMSyncResult{Support: sandbox.WLMSupport{Reason: "2.17"}}, nil, false, "no workload management"},
		{"dry run", with(func(r *WLMSyncResult) { r.DryRun = true }), nil, false, "dry run"},
		{"drift left", with(func(r *WLMSyncResult) { r.After = []sandbox.Drift{{Kind: "group"}} }), nil, false, "still differs"},
		{"monitor_only", with(func(r *WLMSyncResult) { r.Mode = "monitor_only" }), nil, false, "cancels nothing"},
		{"a hard sandbox without a rule", with(func(r *WLMSyncResult) { r.Ruled = nil }), nil, false, "flood has no rule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := wlmEnforces(tc.sync, tc.err, defs)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("got %v %q, want %v and %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// growingTasks is one noisy request whose shard task, at each read, has run 2 s more and used 2
// cores in them, after a minute at 0.4 of a core: over its life it stays under the sandbox's
// limit, over the last pass it is far over.
type growingTasks struct {
	*tasksAPI
	reads int
}

func (g *growingTasks) SearchTasks(context.Context) ([]sandbox.Task, error) {
	run := time.Minute + time.Duration(g.reads)*2*time.Second
	cpu := int64(0.4*float64(time.Minute)) + int64(g.reads)*int64(4*time.Second)
	g.reads++
	hdr := map[string]string{sandbox.OpaqueIDHeader: "noisy-a"}
	return []sandbox.Task{
		{ID: "c1:1", Node: "c1", Action: "indices:data/read/search", Headers: hdr, Start: t0, RunningTime: run, Cancellable: true},
		{ID: "d1:1", ParentID: "c1:1", Node: "d1", Action: "indices:data/read/search[phase/query]", Headers: hdr,
			Start: t0, RunningTime: run, CPUTimeNanos: cpu, Cancellable: true},
	}, nil
}

// From its second pass the loop measures a task over the time since the pass before: a request
// whose life average (0.11 of d1's 4 processors) is under its hard sandbox's 0.18, but which used
// half the node in the last 2 s, is cancelled in the second pass, not in the first.
func TestSandboxLoopMeasuresSinceLastPass(t *testing.T) {
	cfg := testConfig("prod")
	cfg.Safety.DryRun = false
	cfg.Sandbox.Definitions = []byte(fmt.Sprintf(tenantDefs, "hard"))
	r := newRig(t, cfg, map[string]*world{"prod": newWorld("c1", "d1")})
	_, loads := tenantTasks()
	api := &growingTasks{tasksAPI: &tasksAPI{fakeAPI: r.apis["prod"], loads: loads}}
	api.health = Health{Status: "green"}
	r.e.Tenants = func(string) (TenantCluster, error) { return api, nil }
	now := t0
	r.e.Clock = func() time.Time { return now }
	r.e.Sleep = func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil }
	r.e.SandboxLoop = SandboxLoop{Budget: 2 * time.Second}
	res, err := r.e.Sandbox(t.Context(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if res.Passes != 2 || !slices.Equal(api.cancelled, []string{"c1:1"}) {
		t.Fatalf("passes %d, cancelled %v; want 2 passes and c1:1 cancelled once, in the second", res.Passes, api.cancelled)
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Usage < 0.49 || res.Outcomes[0].Usage > 0.51 {
		t.Errorf("outcomes %+v, want one cancellation at usage 0.5 (2 cores of 4 over the last 2 s)", res.Outcomes)
	}
}
