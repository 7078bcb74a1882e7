//go:build integration

package it

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// tenantDocs is the tenants index's size: small documents (a long and a keyword), so they
// index fast, and enough of them that heavySearch keeps a node's CPU busy for seconds.
const tenantDocs = 500_000

// heavySearch is a CPU-bound search made of core features only (the integ-test distribution
// has no scripting module): a disjunction of 300 overlapping ranges, each matching half the
// documents, under terms, histogram and percentiles aggregations. A range on a long field is two
// clauses to Lucene (points or doc values), so 300 of them and their bool stay under OpenSearch's
// maxClauseCount of 1,024 (1,000 were refused as too_many_nested_clauses). Its shard tasks check
// for cancellation as they collect.
func heavySearch() string {
	const ranges = 300
	var b strings.Builder
	b.WriteString(`{"size":0,"track_total_hits":true,"query":{"bool":{"should":[`)
	for i := range ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		lo := i * tenantDocs / (2 * ranges)
		fmt.Fprintf(&b, `{"range":{"n":{"gte":%d,"lt":%d}}}`, lo, lo+tenantDocs/2)
	}
	b.WriteString(`]}},"aggs":{"k":{"terms":{"field":"k","size":1000}},"n":{"terms":{"field":"n","size":10000}},` +
		`"h":{"histogram":{"field":"n","interval":20}},"p":{"percentiles":{"field":"n"}}}}`)
	return b.String()
}

// fillTenants indexes tenantDocs small documents in bulks of 10,000 and refreshes.
func (a *admin) fillTenants(t *testing.T, index string) {
	t.Helper()
	const per = 10_000
	for start := 0; start < tenantDocs; start += per {
		var b bytes.Buffer
		for i := start; i < start+per; i++ {
			fmt.Fprintf(&b, "{\"index\":{}}\n{\"n\":%d,\"k\":\"k%d\"}\n", i, i%5000)
		}
		if err := a.sendBulk(t.Context(), index, b.Bytes()); err != nil {
			t.Fatalf("fill %s: %v", index, err)
		}
	}
	if _, err := a.api.Indices.Refresh(t.Context(), &opensearchapi.IndicesRefreshReq{Index: []string{index}}); err != nil {
		t.Fatalf("refresh %s: %v", index, err)
	}
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

// tenantLoad runs heavySearch back to back from workers, each request tagged with the tenant's
// X-Opaque-Id, and keeps what became of them.
type tenantLoad struct {
	admin   *admin
	index   string
	opaque  string
	workers int

	done, failed, cancelled atomic.Int64
	mu                      sync.Mutex
	// firstErr is the first failure other than a cancellation, firstCancel the first cancellation.
	firstErr, firstCancel error
}

func (l *tenantLoad) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	body := heavySearch()
	var wg sync.WaitGroup
	for range l.workers {
		wg.Go(func() {
			h := http.Header{}
			h.Set("X-Opaque-Id", l.opaque)
			for ctx.Err() == nil {
				_, err := l.admin.api.Search(ctx, &opensearchapi.SearchReq{Indices: []string{l.index}, Body: strings.NewReader(body),
					Header: h, Params: opensearchapi.SearchParams{RequestCache: new(false)}})
				switch {
				case err == nil:
					l.done.Add(1)
				case ctx.Err() != nil:
				default:
					l.failed.Add(1)
					l.mu.Lock()
					if strings.Contains(strings.ToLower(err.Error()), "cancel") {
						l.cancelled.Add(1)
						if l.firstCancel == nil {
							l.firstCancel = err
						}
					} else if l.firstErr == nil {
						l.firstErr = err
					}
					l.mu.Unlock()
				}
			}
		})
	}
	return sync.OnceFunc(func() {
		cancel()
		wg.Wait()
	})
}

// TestSandboxCancellation runs searches tagged with X-Opaque-Id on the real cluster back to back,
// from a tenant in a hard sandbox and one in a monitor sandbox, both far over their 5 % of a
// node's CPU, and runs the sandbox function with dry-run off every second: the hard tenant's
// searches must be cancelled by shardwise through POST _tasks/{id}/_cancel, the monitor tenant's
// left alone.
func TestSandboxCancellation(t *testing.T) {
	const index = "tenants"
	a := newAdmin(t)
	t.Cleanup(func() { a.deleteIndices(t, index) })
	// One shard per node, so each search has a shard task on every node, children of its
	// coordinating task.
	if _, err := a.api.Indices.Create(t.Context(), opensearchapi.IndicesCreateReq{Index: index, Body: jsonBody(t, map[string]any{
		"settings": map[string]any{"index.number_of_shards": len(clusterURLs), "index.number_of_replicas": 0},
		"mappings": map[string]any{"properties": map[string]any{"n": map[string]any{"type": "long"}, "k": map[string]any{"type": "keyword"}}},
	})}); err != nil {
		t.Fatalf("create %s: %v", index, err)
	}
	a.waitSettled(t, 2*time.Minute)
	filled := time.Now()
	a.fillTenants(t, index)
	t.Logf("%d documents indexed in %s", tenantDocs, time.Since(filled).Round(time.Second))

	cfg := e2eConfig()
	cfg.Safety.DryRun = false
	cfg.Sandbox.Definitions = []byte(sandboxDefs)
	e, events := newEngine(t, cfg)
	metrics := &metricLog{usage: map[string]float64{}, limit: map[string]float64{}, over: map[string]int{}}
	e.Metrics = metrics

	hard := &tenantLoad{admin: a, index: index, opaque: "it-hard-report", workers: 2}
	monitor := &tenantLoad{admin: a, index: index, opaque: "it-monitor-dashboard", workers: 1}
	stopHard, stopMonitor := hard.start(), monitor.start()
	defer stopHard()
	defer stopMonitor()

	var executed []engine.CancelOutcome
	started := time.Now()
	// At least 30 s, so the monitor tenant runs many searches while over its limit; at most 3 min.
	for cycle := 1; time.Since(started) < 30*time.Second || hard.cancelled.Load() == 0; cycle++ {
		if time.Since(started) > 3*time.Minute {
			t.Fatalf("after 3 min: %d cancellations executed, hard tenant %d searches done, %d failed (%d cancelled)",
				len(executed), hard.done.Load(), hard.failed.Load(), hard.cancelled.Load())
		}
		if other := hard.failed.Load() - hard.cancelled.Load(); other > 0 || monitor.failed.Load() > 0 {
			t.Fatalf("searches failed other than by cancellation (hard %d, monitor %d); hard's first error %v, monitor's %v",
				other, monitor.failed.Load(), hard.firstErr, monitor.firstErr)
		}
		time.Sleep(time.Second)
		res, err := e.Sandbox(t.Context(), clusterName)
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
	stopHard()
	stopMonitor()

	if len(executed) == 0 {
		t.Fatal("shardwise cancelled nothing")
	}
	for _, o := range executed {
		if o.Sandbox != "it-hard" || o.OpaqueID != "it-hard-report" {
			t.Errorf("cancelled %s of sandbox %s (%s), want only the hard tenant's searches", o.Task, o.Sandbox, o.OpaqueID)
		}
		if o.Usage <= o.Limit {
			t.Errorf("cancelled %s at usage %.3f within its limit %.3f", o.Task, o.Usage, o.Limit)
		}
	}
	if monitor.failed.Load() > 0 || monitor.done.Load() == 0 {
		t.Errorf("the monitor tenant: %d searches done, %d failed (first: %v); want it left alone", monitor.done.Load(), monitor.failed.Load(), monitor.firstErr)
	}
	metrics.mu.Lock()
	overMonitor := metrics.over["it-monitor"]
	metrics.mu.Unlock()
	if overMonitor == 0 {
		t.Errorf("the monitor sandbox never showed over its limit in the metrics; the test did not exercise monitor mode")
	}
	evs := eventsOf[bus.SandboxEnforced](t, events, bus.TypeSandboxEnforced)
	// One event per sandbox per invocation, counting its cancellations, each listed with its numbers.
	counted, withNumbers := 0, 0
	for _, ev := range evs {
		sc := ev.Cancellations
		if sc == nil || sc.DryRun || sc.Sandbox != "it-hard" {
			continue
		}
		counted += sc.Outcomes[engine.CancelExecuted]
		for _, c := range sc.Requests {
			if c.Outcome == engine.CancelExecuted && c.Usage > c.Limit && c.Reason != "" {
				withNumbers++
			}
		}
	}
	if counted != len(executed) || withNumbers == 0 || withNumbers > counted {
		t.Errorf("Sandbox Enforced events: %d executed counted, %d listed with their numbers; want %d counted, each listed up to the events' bound",
			counted, withNumbers, len(executed))
	}
	t.Logf("hard tenant: %d searches done, %d cancelled by shardwise's %d cancellations (first: %v); monitor tenant: %d done, none failed, over its limit in %d metric samples",
		hard.done.Load(), hard.cancelled.Load(), len(executed), hard.firstCancel, monitor.done.Load(), overMonitor)
}
