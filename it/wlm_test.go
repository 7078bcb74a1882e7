//go:build integration

package it

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sandbox"
)

// wlmDefs is the noisy-neighbour case of issue 27 in the RFC's array form: a hard flood, a
// latency-sensitive tenant and a monitor batch, each told apart by the indices it searches, so
// each gets an index_pattern rule and the plugin attributes its requests itself.
//
// The latency-sensitive tenant is soft, as an operator would declare it: the plugin measures a
// group's CPU as Σ cpu_time / (age × processors) over its running tasks, so one light search
// running alone on a 2-core node reads up to 0.5, and an enforced group of allocation 0.5
// (rejection above 0.4) had 25 of its searches rejected in one CI run (0.436 over 0.4) while its
// use over the phase was near 0. A soft group is rejected and cancelled only under node duress.
const wlmDefs = `[
 {"name": "flood", "attributes": {"indices_name": "flood-*"}, "resources": {"cpu": {"allocation": 0.1}}, "enforcement": "hard"},
 {"name": "latency", "attributes": {"indices_name": "orders-*"}, "resources": {"cpu": {"allocation": 0.5}}, "enforcement": "soft"},
 {"name": "batch", "attributes": {"indices_name": "batch-*"}, "resources": {"cpu": {"allocation": 0.3}}, "enforcement": "monitor"}
]`

// The tenants' indices, one shard each on the one node scripts/opensearch-wlm.sh starts.
const (
	floodIndex  = "flood-logs"
	ordersIndex = "orders-live"
	batchIndex  = "batch-archive"
	smallDocs   = 50_000
	wlmPhase    = 20 * time.Second
	wlmWarmUp   = 2 * time.Second
	ordersRate  = 25.0 // the protected tenant's searches per second
	floodRate   = 8.0  // the flood's heavy searches per second
	batchRate   = 2.0  // the monitor batch's searches per second
	// doneWhenFactor is issue 27's bound on the protected tenant's p99 with the flood over its p99
	// without, reported beside the measured ratio (docs/wlm.md has the figures).
	doneWhenFactor = 2.0
	// wlmRounds is how many times the plugin alone and the plugin with the second line each face
	// the flood, in turns.
	wlmRounds = 2
	// wlmExtraRounds is how many more rounds of the plugin alone the flood may face when the
	// plugin's counters show it stopped none of the flood in wlmRounds.
	wlmExtraRounds = 3
)

// floodSearch is the flood's CPU-heavy search: heavySearch's disjunction of 300 overlapping ranges
// over tenantDocs documents, with only a histogram aggregation. It burns CPU matching and counting,
// which the flood's CPU limit governs, without the large terms aggregations whose allocations
// would make garbage collection, not the plugin, decide every tenant's latency.
func floodSearch() string {
	var q map[string]any
	if err := json.Unmarshal([]byte(heavySearch()), &q); err != nil {
		panic(err)
	}
	q["aggs"] = map[string]any{"h": map[string]any{"histogram": map[string]any{"field": "n", "interval": 20}}}
	return string(mustJSON(q))
}

// requireWLM fails (in CI) or skips (elsewhere) unless the cluster is the workload-management
// one scripts/opensearch-wlm.sh starts, and fails if that cluster does not serve the plugin's API.
func requireWLM(t *testing.T, a *admin) {
	t.Helper()
	if os.Getenv("SHARDWISE_OPENSEARCH_WLM") == "" {
		msg := "the cluster is not scripts/opensearch-wlm.sh's OpenSearch 3.x with the workload-management plugin " +
			"(SHARDWISE_OPENSEARCH_WLM unset): `make it` runs this test on it"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, path := range []string{"/_wlm/workload_group", "/_rules/workload_group", "/_wlm/stats"} {
		if _, err := a.get(t, path); err != nil {
			t.Fatalf("the workload-management plugin does not answer: %v", err)
		}
	}
}

// get sends GET path to the first node and returns the body; a status of 300 or more is an
// error with the body.
func (a *admin) get(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, clusterURLs[0]+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}

// tenantSearches sends one tenant's searches open-loop at a fixed rate, as independent clients do:
// each request leaves on time whether or not the ones before it finished, so a node that makes
// the tenant wait builds its latency up. At most inFlight are outstanding; one past that is
// dropped and counted. It keeps every completed search's latency.
type tenantSearches struct {
	admin    *admin
	index    string
	body     string
	rate     float64
	inFlight int

	done, rejected, cancelled, failed, dropped, unfinished atomic.Int64
	mu                                                     sync.Mutex
	// latencies are the completed searches' and, as a lower bound, the age at the stop of those
	// still in flight then: a search the node kept waiting past the phase counts.
	latencies []time.Duration
	firstErr  error
}

func (l *tenantSearches) record(err error, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.done.Add(1)
		l.latencies = append(l.latencies, took)
		return
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "cancel"):
		l.cancelled.Add(1)
	case strings.Contains(msg, "reject"):
		l.rejected.Add(1)
	default:
		l.failed.Add(1)
	}
	if l.firstErr == nil {
		l.firstErr = err
	}
}

func (l *tenantSearches) search(ctx context.Context) {
	started := time.Now()
	resp, err := l.admin.api.Search(ctx, &opensearchapi.SearchReq{Indices: []string{l.index}, Body: strings.NewReader(l.body),
		Params: opensearchapi.SearchParams{RequestCache: new(false)}})
	took := time.Since(started)
	if ctx.Err() != nil {
		l.mu.Lock()
		l.unfinished.Add(1)
		l.latencies = append(l.latencies, took)
		l.mu.Unlock()
		return
	}
	if err == nil && resp.Shards.Failed > 0 {
		err = fmt.Errorf("%d of %d shards failed: %s", resp.Shards.Failed, resp.Shards.Total, string(mustJSON(resp.Shards.Failures)))
	}
	l.record(err, took)
}

// start runs the load until the returned stop is called; stop waits for the requests in flight.
func (l *tenantSearches) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	slots := make(chan struct{}, l.inFlight)
	var wg sync.WaitGroup
	wg.Go(func() {
		every := time.Duration(float64(time.Second) / l.rate)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-slots }()
					l.search(ctx)
				})
			default:
				l.dropped.Add(1)
			}
		}
	})
	return sync.OnceFunc(func() {
		cancel()
		wg.Wait()
	})
}

// reset forgets what the load recorded, so one load can be measured phase by phase.
func (l *tenantSearches) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latencies = nil
	l.firstErr = nil
	for _, c := range []*atomic.Int64{&l.done, &l.rejected, &l.cancelled, &l.failed, &l.dropped, &l.unfinished} {
		c.Store(0)
	}
}

// phase is what one tenant's load did in one phase.
type phase struct {
	done, rejected, cancelled, failed, dropped, unfinished int64
	p50, p99, max                                          time.Duration
	firstErr                                               error
}

func (l *tenantSearches) snapshot() phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := phase{done: l.done.Load(), rejected: l.rejected.Load(), cancelled: l.cancelled.Load(), failed: l.failed.Load(),
		dropped: l.dropped.Load(), unfinished: l.unfinished.Load(), firstErr: l.firstErr}
	lat := slices.Clone(l.latencies)
	slices.Sort(lat)
	p.p50, p.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	if len(lat) > 0 {
		p.max = lat[len(lat)-1]
	}
	return p
}

func (p phase) String() string {
	return fmt.Sprintf("%d done, %d unfinished at the stop (p50 %s, p99 %s, max %s), %d rejected, %d cancelled, %d failed, %d dropped",
		p.done, p.unfinished, ms(p.p50), ms(p.p99), ms(p.max), p.rejected, p.cancelled, p.failed, p.dropped)
}

// percentile is the nearest-rank q-quantile of sorted latencies; 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(math.Ceil(q*float64(len(sorted))))-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

// fillSmall indexes n small documents (a long and a keyword) in one bulk per 10,000 and refreshes.
func (a *admin) fillSmall(t *testing.T, index string, n int) {
	t.Helper()
	const per = 10_000
	for start := 0; start < n; start += per {
		var b strings.Builder
		for i := start; i < min(start+per, n); i++ {
			fmt.Fprintf(&b, "{\"index\":{}}\n{\"n\":%d,\"k\":\"k%d\"}\n", i, i%5000)
		}
		if err := a.sendBulk(t.Context(), index, []byte(b.String())); err != nil {
			t.Fatalf("fill %s: %v", index, err)
		}
	}
	if _, err := a.api.Indices.Refresh(t.Context(), &opensearchapi.IndicesRefreshReq{Index: []string{index}}); err != nil {
		t.Fatalf("refresh %s: %v", index, err)
	}
}

// waitNoSearches waits until the node runs no search task, so a phase starts on a quiet node.
func (a *admin) waitNoSearches(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		resp, err := a.api.Tasks.List(t.Context(), &opensearchapi.TasksListReq{Params: opensearchapi.TasksListParams{Actions: []string{"indices:data/read/search*"}}})
		if err != nil {
			t.Fatalf("list search tasks: %v", err)
		}
		n := 0
		for _, node := range resp.Nodes {
			n += len(node.Tasks)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d search tasks still running after %s", n, limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// wlmStats runs the sandbox function once and returns the plugin's view of each sandbox, which
// the function read from _wlm/stats because the plugin enforces the sandboxes.
func wlmStats(t *testing.T, e *engine.Engine) map[string]sandbox.WLMSandboxStats {
	t.Helper()
	res, err := e.Sandbox(t.Context(), clusterName)
	if err != nil {
		t.Fatalf("sandbox function: %v", err)
	}
	if res.WLM == nil {
		t.Fatalf("sandbox function: no _wlm/stats read; loop %q", res.Loop)
	}
	out := map[string]sandbox.WLMSandboxStats{}
	for _, s := range res.WLM.Sandboxes {
		out[s.Sandbox] = s
	}
	return out
}

// TestWLMNoisyTenant is issue 27's noisy-neighbour case on a real OpenSearch 3.x node with the
// workload-management plugin (scripts/opensearch-wlm.sh). shardwise's sandbox function, with
// dry-run off, syncs three sandboxes to the plugin as workload groups with index_pattern rules and
// sets its mode to enabled; from then on the plugin rejects and cancels on the node, and the
// function's loop, where it runs, is a second line beside it for the hard sandboxes. A flood
// tenant sends CPU-heavy searches at floodRate a second, a protected tenant light ones at
// ordersRate, a monitor batch tenant medium ones at batchRate, all open-loop. The protected
// tenant's p99 is measured for wlmPhase with the flood absent and wlmPhase with it present, first
// before the sync (the node uncontained), then after it, the flood meeting the plugin alone and
// the plugin with the second line (one looping invocation) in turns, wlmRounds times each; all
// are reported beside issue 27's bound (doneWhenFactor), which no run at 8 a second met
// (docs/sandboxes.md). Asserted: the sync creates the groups, rules and mode and hands
// enforcement to the plugin; the sandbox function's read of _wlm/stats shows the flood's group
// rejected or cancelled while the flood ran, and the protected tenant's group completing searches
// with none rejected or cancelled; no protected search fails; the second line cancels none of the
// protected tenant's requests.
func TestWLMNoisyTenant(t *testing.T) {
	a := newAdmin(t)
	requireWLM(t, a)
	t.Cleanup(func() { a.deleteIndices(t, floodIndex, ordersIndex, batchIndex) })
	for _, index := range []string{floodIndex, ordersIndex, batchIndex} {
		if _, err := a.api.Indices.Create(t.Context(), opensearchapi.IndicesCreateReq{Index: index, Body: jsonBody(t, map[string]any{
			"settings": map[string]any{"index.number_of_shards": 1, "index.number_of_replicas": 0},
			"mappings": map[string]any{"properties": map[string]any{"n": map[string]any{"type": "long"}, "k": map[string]any{"type": "keyword"}}},
		})}); err != nil {
			t.Fatalf("create %s: %v", index, err)
		}
	}
	a.waitSettled(t, 2*time.Minute)
	filled := time.Now()
	a.fillTenants(t, floodIndex)
	a.fillSmall(t, ordersIndex, smallDocs)
	a.fillSmall(t, batchIndex, smallDocs)
	// One segment each, so no background merge takes CPU while the latencies are measured.
	if _, err := a.api.Indices.Forcemerge(t.Context(), &opensearchapi.IndicesForcemergeReq{Indices: []string{floodIndex, ordersIndex, batchIndex},
		Params: opensearchapi.IndicesForcemergeParams{MaxNumSegments: new(1)}}); err != nil {
		t.Fatalf("force merge: %v", err)
	}
	t.Logf("indexed %d documents for the flood, %d each for the protected and batch tenants in %s", tenantDocs, smallDocs, time.Since(filled).Round(time.Second))

	orders := &tenantSearches{admin: a, index: ordersIndex, rate: ordersRate, inFlight: 64,
		body: `{"size":10,"query":{"bool":{"filter":[{"term":{"k":"k42"}},{"range":{"n":{"gte":1000}}}]}}}`}
	batch := &tenantSearches{admin: a, index: batchIndex, rate: batchRate, inFlight: 8,
		body: `{"size":0,"aggs":{"k":{"terms":{"field":"k","size":500}},"p":{"percentiles":{"field":"n"}}}}`}
	flood := &tenantSearches{admin: a, index: floodIndex, rate: floodRate, inFlight: 32, body: floodSearch()}

	// run measures the protected tenant for one phase, the flood on or off; the batch runs
	// throughout. No protected search may fail, be rejected or be cancelled: the plugin never
	// holds the protected tenant to its limit, which it stays under.
	run := func(name string, withFlood bool) (protected, fl phase) {
		t.Helper()
		a.waitNoSearches(t, 2*time.Minute)
		flood.reset()
		stopBatch := batch.start()
		stopFlood := func() {}
		if withFlood {
			stopFlood = flood.start()
		}
		// The plugin measures and acts once a second: the protected tenant is measured from
		// wlmWarmUp after the flood began, with and without it alike.
		time.Sleep(wlmWarmUp)
		orders.reset()
		stopOrders := orders.start()
		time.Sleep(wlmPhase)
		stopOrders()
		stopFlood()
		stopBatch()
		protected, fl = orders.snapshot(), flood.snapshot()
		t.Logf("%s: protected tenant %s", name, protected)
		if withFlood {
			t.Logf("%s: flood %s (first failure: %v)", name, fl, fl.firstErr)
		}
		if protected.failed+protected.rejected+protected.cancelled > 0 {
			t.Fatalf("%s: the protected tenant's searches failed: %s; first failure %v", name, protected, protected.firstErr)
		}
		return protected, fl
	}

	// Uncontained: the plugin is installed but holds no group (its mode is monitor_only).
	// The first searches after the load find cold caches and a JIT still compiling: a phase of
	// them, not measured, so the baseline is the node's steady state.
	run("warm-up, not measured", false)
	baseOpen, _ := run("uncontained, no flood", false)
	floodOpen, _ := run("uncontained, flood", true)

	cfg := e2eConfig()
	cfg.Sandbox.Definitions = []byte(wlmDefs)
	e, events := newEngine(t, cfg)
	res, err := e.Sandbox(t.Context(), clusterName)
	if err != nil {
		t.Fatalf("sandbox function (sync): %v", err)
	}
	t.Logf("sandbox function: %s", res.Loop)
	synced := false
	for _, ev := range eventsOf[bus.SandboxEnforced](t, events, bus.TypeSandboxEnforced) {
		if ev.Mode == "wlm-sync" {
			synced = true
			for _, line := range ev.Actions {
				t.Logf("sync: %s", line)
			}
		}
	}
	if !synced || res.WLM == nil {
		t.Fatalf("the sandbox function did not sync the sandboxes to the plugin and hand it enforcement (event published %v, stats read %v): %s",
			synced, res.WLM != nil, res.Loop)
	}
	// The plugin's rules reach its in-memory matcher at its next refresh: wait until the
	// protected tenant's searches count in its group. On a loaded machine that took over a
	// minute once (a clean-clone CI rehearsal with the other core busy), so the wait is long and
	// its length is logged.
	const ruleWait = 3 * time.Minute
	waitFrom := time.Now()
	for {
		orders.search(t.Context())
		batch.search(t.Context())
		if s := wlmStats(t, e); s["latency"].Completions > 0 && s["batch"].Completions > 0 {
			break
		}
		if time.Since(waitFrom) > ruleWait {
			t.Fatalf("after %s the plugin's stats still count no search in the groups of the rules shardwise made", ruleWait)
		}
		time.Sleep(time.Second)
	}
	t.Logf("the plugin's stats counted the tenants' searches in their groups after %s", time.Since(waitFrom).Round(time.Second))
	before := wlmStats(t, e)

	// The plugin alone and the plugin with shardwise's second line take turns, wlmRounds times
	// each, so neither is measured only on a node warmer or a machine quieter than the other.
	base, _ := run("contained, no flood", false)
	var alone, lined []time.Duration
	// seen counts the flood's searches the plugin rejected or cancelled, as the flood saw them,
	// over every round the plugin contained it alone: a round in which its CPU stayed under the
	// group's limit at each of the plugin's once-a-second checks sees none.
	var seenRejected, seenCancelled int64
	var after map[string]sandbox.WLMSandboxStats
	for round := range wlmRounds {
		flooded, f := run(fmt.Sprintf("round %d: contained by the plugin alone, flood", round+1), true)
		alone = append(alone, flooded.p99)
		seenRejected, seenCancelled = seenRejected+f.rejected, seenCancelled+f.cancelled
		after = wlmStats(t, e)
		for _, name := range []string{"flood", "latency", "batch"} {
			t.Logf("round %d: _wlm/stats read by the sandbox function: %s", round+1, after[name].Reason)
		}

		// The second line: one invocation of the sandbox function, as Lambda runs it, loops
		// beside the plugin for the whole phase and rejects and cancels what the hard flood runs
		// over.
		loopCtx, endLoop := context.WithCancel(t.Context())
		var loopRes engine.SandboxResult
		var loopErr error
		var looping sync.WaitGroup
		e.SandboxLoop = engine.SandboxLoop{Budget: 5 * time.Minute}
		looping.Go(func() { loopRes, loopErr = e.Sandbox(loopCtx, clusterName) })
		withLine, _ := run(fmt.Sprintf("round %d: contained by the plugin and shardwise's second line, flood", round+1), true)
		endLoop()
		looping.Wait()
		e.SandboxLoop = engine.SandboxLoop{}
		if loopErr != nil && !errors.Is(loopErr, context.Canceled) {
			t.Fatalf("sandbox function (second line): %v", loopErr)
		}
		lined = append(lined, withLine.p99)
		byKind := map[string]int{}
		for _, o := range loopRes.Outcomes {
			byKind[o.Sandbox+" "+o.Kind+" "+o.Outcome]++
		}
		t.Logf("round %d: second line: %d passes, %s; outcomes %v", round+1, loopRes.Passes, loopRes.Loop, byKind)
		if byKind["latency cancel executed"]+byKind["latency reject executed"] > 0 {
			t.Errorf("the second line cancelled the protected tenant's searches: %v", byKind)
		}
	}

	// Latencies are reported, not asserted (the project's tests assert no timings): on a 2-core
	// node shared with other work they vary run to run more than any bound would allow.
	ratios := func(p99s []time.Duration) string {
		var out []string
		for _, p := range p99s {
			out = append(out, fmt.Sprintf("%s (%.2f×)", ms(p), latencyRatio(p, base.p99)))
		}
		return strings.Join(out, ", ")
	}
	t.Logf("protected tenant's p99: uncontained %s without the flood, %s with it (%.1f×); contained, %s without the flood; with it, by the plugin alone %s; by the plugin and shardwise's second line %s (issue 27 asks at most %.0f×)",
		ms(baseOpen.p99), ms(floodOpen.p99), latencyRatio(floodOpen.p99, baseOpen.p99), ms(base.p99), ratios(alone), ratios(lined), doneWhenFactor)
	// The plugin's own counters prove it enforces the group shardwise made. What the flood
	// itself saw is reported, not asserted: the plugin checks once a second, and whether a flood
	// search is running over the limit at that instant depends on the machine's load (a CI run
	// counted 17 in _wlm/stats while the flood saw none over 2 rounds; another saw 27 and 0).
	stopped := func() int64 {
		return (after["flood"].Rejections - before["flood"].Rejections) + (after["flood"].Cancellations - before["flood"].Cancellations)
	}
	// A clean-clone rehearsal with the other core busy counted none over both rounds (the plugin
	// acts on what it samples once a second): before calling the plugin idle, the flood faces it
	// alone again, up to wlmExtraRounds more times, until its counters show it stopped some.
	rounds := wlmRounds
	for ; stopped() == 0 && rounds < wlmRounds+wlmExtraRounds; rounds++ {
		_, f := run(fmt.Sprintf("extra round %d: contained by the plugin alone, flood", rounds-wlmRounds+1), true)
		seenRejected, seenCancelled = seenRejected+f.rejected, seenCancelled+f.cancelled
		after = wlmStats(t, e)
		t.Logf("extra round %d: _wlm/stats read by the sandbox function: %s", rounds-wlmRounds+1, after["flood"].Reason)
	}
	t.Logf("the plugin's enforcement: _wlm/stats counts %d rejections and cancellations in the flood's group; the flood saw %d rejected and %d cancelled over %d rounds of the plugin alone",
		stopped(), seenRejected, seenCancelled, rounds)
	if stopped() == 0 {
		t.Errorf("the plugin stopped none of the flood: _wlm/stats counts no rejection or cancellation in its group over %d rounds", rounds)
	}
	if l := after["latency"]; l.Rejections+l.Cancellations > 0 || l.Completions <= before["latency"].Completions {
		t.Errorf("the protected tenant's group: %s; want its searches completed, none rejected or cancelled", l.Reason)
	}
}

func latencyRatio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}
