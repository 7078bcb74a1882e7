package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// tasksAPI is a fakeAPI that also lists search tasks, node loads and takes cancellations: the
// sandbox function's port, on a cluster without workload management (its version predates it).
type tasksAPI struct {
	*fakeAPI
	tasks     []sandbox.Task
	loads     []sandbox.NodeLoad
	cancelErr map[string]error
	mu        sync.Mutex
	cancelled []string
}

var _ TenantCluster = (*tasksAPI)(nil)

func (f *tasksAPI) SearchTasks(context.Context) ([]sandbox.Task, error)   { return f.tasks, nil }
func (f *tasksAPI) NodeLoads(context.Context) ([]sandbox.NodeLoad, error) { return f.loads, nil }
func (f *tasksAPI) CancelTask(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	return f.cancelErr[id]
}

// Version is one before workload management, so a sync reads nothing else of the plugin.
func (f *tasksAPI) Version(context.Context) (string, error) { return "2.17.0", nil }

var errNoWLM = errors.New("the fake has no workload management")

func (f *tasksAPI) WLMProbe(context.Context, string) (bool, error) { return false, errNoWLM }
func (f *tasksAPI) WLMState(context.Context, sandbox.WLMSupport) (sandbox.WLMState, error) {
	return sandbox.WLMState{}, errNoWLM
}
func (f *tasksAPI) WLMSend(context.Context, sandbox.Call) error { return errNoWLM }
func (f *tasksAPI) WLMStats(context.Context) ([]sandbox.WLMGroupStats, error) {
	return nil, errNoWLM
}

type metricRec struct {
	mu   sync.Mutex
	seen []string
}

func (m *metricRec) Add(name string, _ telemetry.Unit, v float64, dims ...telemetry.Dimension) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, d := range dims {
		parts = append(parts, d.Name+"="+d.Value)
	}
	m.seen = append(m.seen, fmt.Sprintf("%s %s %.3f", name, strings.Join(parts, ","), v))
}

const tenantDefs = `[
 {"name": "noisy", "attributes": {"custom_id": "noisy-*"}, "resources": {"cpu": {"allocation": 0.2}}, "enforcement": "%s"},
 {"name": "steady", "attributes": {"custom_id": "steady"}, "resources": {"cpu": {"allocation": 0.5}}, "enforcement": "hard"}
]`

// tenantTasks: three noisy requests of one core each on node d1 (4 processors), started a
// second apart, each a coordinating task on c1 and a shard task on d1; one steady request of a
// quarter core.
func tenantTasks() ([]sandbox.Task, []sandbox.NodeLoad) {
	var ts []sandbox.Task
	add := func(n int, opaque string, start time.Time, cores float64) {
		run := t0.Add(time.Minute).Sub(start)
		hdr := map[string]string{sandbox.OpaqueIDHeader: opaque}
		root := fmt.Sprintf("c1:%d", n)
		ts = append(ts,
			sandbox.Task{ID: root, Node: "c1", Action: "indices:data/read/search", Headers: hdr, Start: start, RunningTime: run, Cancellable: true},
			sandbox.Task{ID: fmt.Sprintf("d1:%d", n), ParentID: root, Node: "d1", Action: "indices:data/read/search[phase/query]", Headers: hdr,
				Start: start, RunningTime: run, CPUTimeNanos: int64(cores * float64(run)), Cancellable: true})
	}
	add(1, "noisy-a", t0, 1)
	add(2, "noisy-b", t0.Add(time.Second), 1)
	add(3, "noisy-c", t0.Add(2*time.Second), 1)
	add(4, "steady", t0.Add(3*time.Second), 0.25)
	loads := []sandbox.NodeLoad{
		{Node: "c1", CPU: 0.1, HeapUsedBytes: 1 << 30, HeapMaxBytes: 4 << 30, Processors: 4},
		{Node: "d1", CPU: 0.95, HeapUsedBytes: 1 << 30, HeapMaxBytes: 4 << 30, Processors: 4},
	}
	return ts, loads
}

func TestSandboxEnforcement(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		dryRun     bool
		health     string
		nodeCPU    float64
		cancelErr  map[string]error
		wantCalls  []string
		wantOut    []string // outcome per planned cancellation, in order
		wantReason string
	}{
		// noisy: 0.75 of d1 against 0.2 × 0.9 = 0.18; newest first until at most 0.18.
		{name: "hard, dry-run off: cancels newest first", mode: "hard", health: "green", nodeCPU: 0.95,
			wantCalls: []string{"c1:3", "c1:2", "c1:1"}, wantOut: []string{CancelExecuted, CancelExecuted, CancelExecuted}},
		{name: "hard, dry-run: nothing sent", mode: "hard", dryRun: true, health: "green", nodeCPU: 0.95,
			wantOut: []string{CancelDryRun, CancelDryRun, CancelDryRun}, wantReason: "dry-run"},
		{name: "hard, breaker open: nothing sent", mode: "hard", health: "red", nodeCPU: 0.95,
			wantOut: []string{CancelSkipped, CancelSkipped, CancelSkipped}, wantReason: "health"},
		{name: "a request that finished is gone, not failed", mode: "hard", health: "green", nodeCPU: 0.95,
			cancelErr: map[string]error{"c1:2": fmt.Errorf("%w: task not found", ErrNotFound), "c1:1": fmt.Errorf("boom")},
			wantCalls: []string{"c1:3", "c1:2", "c1:1"}, wantOut: []string{CancelExecuted, CancelGone, CancelFailed}},
		{name: "monitor: reports only", mode: "monitor", health: "green", nodeCPU: 0.95},
		{name: "soft on a calm node: nothing", mode: "soft", health: "green", nodeCPU: 0.5},
		{name: "soft under duress: cancels", mode: "soft", health: "green", nodeCPU: 0.95,
			wantCalls: []string{"c1:3", "c1:2", "c1:1"}, wantOut: []string{CancelExecuted, CancelExecuted, CancelExecuted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("prod")
			cfg.Safety.DryRun = tc.dryRun
			cfg.Sandbox.Definitions = []byte(fmt.Sprintf(tenantDefs, tc.mode))
			r := newRig(t, cfg, map[string]*world{"prod": newWorld("c1", "d1")})
			tasks, loads := tenantTasks()
			loads[1].CPU = tc.nodeCPU
			api := &tasksAPI{fakeAPI: r.apis["prod"], tasks: tasks, loads: loads, cancelErr: tc.cancelErr}
			api.health = Health{Status: tc.health}
			r.e.Tenants = func(string) (TenantCluster, error) { return api, nil }
			m := &metricRec{}
			r.e.Metrics = m

			res, err := r.e.Sandbox(t.Context(), "prod")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(api.cancelled, tc.wantCalls) {
				t.Errorf("cancel calls got %v, want %v", api.cancelled, tc.wantCalls)
			}
			var outs []string
			for _, o := range res.Outcomes {
				outs = append(outs, o.Outcome)
				if o.Sandbox != "noisy" {
					t.Errorf("cancelled a request of %s: %+v", o.Sandbox, o)
				}
				if tc.wantReason != "" && !strings.Contains(o.Why, tc.wantReason) {
					t.Errorf("why got %q, want it to mention %q", o.Why, tc.wantReason)
				}
			}
			if !slices.Equal(outs, tc.wantOut) {
				t.Errorf("outcomes got %v, want %v", outs, tc.wantOut)
			}
			// One event for the sandbox, whatever the number of its cancellations, each kept in it.
			evs := events[bus.SandboxEnforced](t, r.bus.Drain(), bus.TypeSandboxEnforced)
			wantEvents := min(len(tc.wantOut), 1)
			if len(evs) != wantEvents {
				t.Fatalf("events got %d, want %d: one per sandbox that lost requests", len(evs), wantEvents)
			}
			for _, ev := range evs {
				sc := ev.Cancellations
				if sc == nil || sc.Sandbox != "noisy" || sc.Count != len(tc.wantOut) || len(sc.Requests) != len(tc.wantOut) ||
					sc.DryRun != tc.dryRun || sc.Passes != 1 || !strings.Contains(ev.Reason, "over its limit") {
					t.Fatalf("event got %+v (%+v)", ev, sc)
				}
				executed := 0
				for i, c := range sc.Requests {
					if c.Outcome != tc.wantOut[i] || c.Node != "d1" || c.Usage <= c.Limit || c.Limit < 0.17 || c.Limit > 0.19 ||
						!strings.Contains(c.Reason, "cancel request") || c.Why == "" {
						t.Errorf("request %d got %+v", i, c)
					}
					if c.Outcome == CancelExecuted {
						executed++
					}
					sc.Outcomes[c.Outcome]--
				}
				for o, n := range sc.Outcomes {
					if n != 0 {
						t.Errorf("outcome %s counted %d more than the requests listed", o, n)
					}
				}
				// Each request frees 0.25 of d1's CPU.
				if got, want := sc.Freed["cpu"], 0.25*float64(executed); got < want-1e-6 || got > want+1e-6 {
					t.Errorf("freed cpu got %.3f, want %.3f (%d executed)", got, want, executed)
				}
			}
			// Every mode: usage and limit per sandbox, node and resource, every cycle.
			want := fmt.Sprintf("SandboxUsage Cluster=prod,Node=d1,Sandbox=noisy,Resource=cpu,Mode=%s 0.750", tc.mode)
			if !slices.Contains(m.seen, want) {
				t.Errorf("metrics %v lack %q", m.seen, want)
			}
			if !slices.Contains(m.seen, "SandboxUsage Cluster=prod,Node=d1,Sandbox=steady,Resource=cpu,Mode=hard 0.062") {
				t.Errorf("metrics %v lack steady's usage on d1", m.seen)
			}
			if res.Assigned["noisy"] != 6 || res.Assigned["steady"] != 2 {
				t.Errorf("assigned got %v, want noisy 6 (3 requests × 2 tasks), steady 2", res.Assigned)
			}
		})
	}
}
