//go:build integration

package it

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// slowSearch is a script filter that spins on every document: a CPU-bound search whose shard
// tasks run for tens of seconds and check for cancellation as they go. loops stays under
// Painless's limit of a million loop iterations per script run.
func slowSearch(loops int) string {
	return fmt.Sprintf(`{"size":0,"track_total_hits":true,"query":{"bool":{"filter":{"script":{"script":{"lang":"painless",`+
		`"source":"double s = 0; for (int i = 0; i < params.loops; i++) { s += Math.sqrt(i + doc['n'].value); } return s > 0;",`+
		`"params":{"loops":%d}}}}}}}`, loops)
}

// sandboxDefs: a hard sandbox and a monitor one, each a few percent of a node's CPU, told
// apart by the X-Opaque-Id their searches carry.
const sandboxDefs = `[
 {"name": "it-hard", "attributes": {"custom_id": "it-hard-*"}, "resources": {"cpu": {"allocation": 0.05}}, "enforcement": "hard"},
 {"name": "it-monitor", "attributes": {"custom_id": "it-monitor-*"}, "resources": {"cpu": {"allocation": 0.05}}, "enforcement": "monitor"}
]`

// metricLog keeps the sandbox metrics the engine emits.
type metricLog struct {
	mu sync.Mutex
	// over counts, per sandbox, the cycles in which its usage on some node passed its limit.
	usage map[string]float64
	limit map[string]float64
	over  map[string]int
}

func (m *metricLog) Add(name string, _ telemetry.Unit, v float64, dims ...telemetry.Dimension) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sb, node string
	for _, d := range dims {
		switch d.Name {
		case "Sandbox":
			sb = d.Value
		case "Node":
			node = d.Value
		}
	}
	key := sb + "@" + node
	switch name {
	case "SandboxUsage":
		m.usage[key] = v
	case "SandboxLimit":
		m.limit[key] = v
		if m.usage[key] > v {
			m.over[sb]++
		}
	}
}

type searchResult struct {
	err  error
	took time.Duration
}

// TestSandboxCancellation runs two long searches tagged with X-Opaque-Id on the real cluster,
// one in a hard sandbox and one in a monitor sandbox, both far over their 5 % of a node's CPU,
// and runs the sandbox function with dry-run off every two seconds: the hard one must be
// cancelled by shardwise through POST _tasks/{id}/_cancel, the monitor one left to finish.
func TestSandboxCancellation(t *testing.T) {
	const index = "tenants"
	a := newAdmin(t)
	t.Cleanup(func() { a.deleteIndices(t, index) })
	// One shard per node, so each search has a shard task on every node, children of its
	// coordinating task.
	a.createIndices(t, indexSpec{Name: index, Primaries: len(clusterURLs), Replicas: 0})
	a.fill(t, index, 20, bulkDocs)

	cfg := e2eConfig()
	cfg.Safety.DryRun = false
	cfg.Sandbox.Definitions = []byte(sandboxDefs)
	e, events := newEngine(t, cfg)
	metrics := &metricLog{usage: map[string]float64{}, limit: map[string]float64{}, over: map[string]int{}}
	e.Metrics = metrics

	search := func(ctx context.Context, opaque string, loops int) searchResult {
		started := time.Now()
		h := http.Header{}
		h.Set("X-Opaque-Id", opaque)
		_, err := a.api.Search(ctx, &opensearchapi.SearchReq{Indices: []string{index}, Body: strings.NewReader(slowSearch(loops)),
			Header: h, Params: opensearchapi.SearchParams{RequestCache: new(false)}})
		return searchResult{err: err, took: time.Since(started)}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	hard, monitor := make(chan searchResult, 1), make(chan searchResult, 1)
	// The hard tenant's search would run for minutes; the monitor tenant's for a fraction of that.
	go func() { hard <- search(ctx, "it-hard-report", 999_000) }()
	go func() { monitor <- search(ctx, "it-monitor-dashboard", 400_000) }()

	var hardRes, monitorRes *searchResult
	var executed []engine.CancelOutcome
	for cycle := 1; hardRes == nil || monitorRes == nil; cycle++ {
		select {
		case r := <-hard:
			hardRes = &r
		case r := <-monitor:
			monitorRes = &r
		case <-ctx.Done():
			t.Fatalf("the searches did not both end within 4 minutes (hard done %v, monitor done %v)", hardRes != nil, monitorRes != nil)
		case <-time.After(2 * time.Second):
			res, err := e.Sandbox(ctx, clusterName)
			if err != nil {
				t.Fatalf("sandbox cycle %d: %v", cycle, err)
			}
			t.Logf("cycle %d: %d search tasks, %v; breaker %s", cycle, res.Tasks, res.Assigned, res.Breaker.Reason())
			for _, o := range res.Outcomes {
				t.Logf("cycle %d: %s %s (%s): %s; %s", cycle, o.Outcome, o.Task, o.OpaqueID, o.Reason, o.Why)
				if o.Outcome == engine.CancelExecuted {
					executed = append(executed, o)
				}
			}
		}
	}

	if len(executed) == 0 {
		t.Fatalf("shardwise cancelled nothing; the hard search ended after %s with %v", hardRes.took, hardRes.err)
	}
	for _, o := range executed {
		if o.Sandbox != "it-hard" || o.OpaqueID != "it-hard-report" {
			t.Errorf("cancelled %s of sandbox %s (%s), want only the hard tenant's search", o.Task, o.Sandbox, o.OpaqueID)
		}
		if o.Usage <= o.Limit {
			t.Errorf("cancelled %s at usage %.3f within its limit %.3f", o.Task, o.Usage, o.Limit)
		}
	}
	if hardRes.err == nil || !strings.Contains(strings.ToLower(hardRes.err.Error()), "cancel") {
		t.Errorf("the hard tenant's search ended after %s with %v, want a cancellation error", hardRes.took, hardRes.err)
	}
	if monitorRes.err != nil {
		t.Errorf("the monitor tenant's search failed after %s: %v, want it left alone to finish", monitorRes.took, monitorRes.err)
	}
	metrics.mu.Lock()
	overMonitor := metrics.over["it-monitor"]
	metrics.mu.Unlock()
	if overMonitor == 0 {
		t.Errorf("the monitor sandbox never showed over its limit in the metrics; the test did not exercise monitor mode")
	}
	evs := eventsOf[bus.SandboxEnforced](t, events, bus.TypeSandboxEnforced)
	withNumbers := 0
	for _, ev := range evs {
		if c := ev.Cancellation; c != nil && c.Outcome == engine.CancelExecuted && !c.DryRun && c.Sandbox == "it-hard" && c.Usage > c.Limit {
			withNumbers++
		}
	}
	if withNumbers != len(executed) {
		t.Errorf("Sandbox Enforced events with their numbers: got %d, want one per cancellation (%d)", withNumbers, len(executed))
	}
	t.Logf("hard search cancelled after %s (%v); monitor search finished in %s, over its limit in %d metric samples",
		hardRes.took.Round(time.Second), hardRes.err, monitorRes.took.Round(time.Second), overMonitor)
}
