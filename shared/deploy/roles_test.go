package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/deploy"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/handler"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// The functions of the stack, as the template names them.
var functionIDs = map[string]string{
	"ingest": "IngestFunction", "detect": "DetectFunction", "move": "MoveFunction",
	"replicas": "ReplicasFunction", "sandbox": "SandboxFunction",
}

// calls records, per function, the OpenSearch requests ("GET /_stats") and the DynamoDB actions
// ("dynamodb:PutItem") each function sends on the wire. Every function has its own clients and
// its own recording servers, as each Lambda has its own, so a call is always its sender's.
type calls struct {
	mu         sync.Mutex
	openSearch map[string]map[string]bool
	dynamoDB   map[string]map[string]bool
}

func newCalls() *calls {
	return &calls{openSearch: map[string]map[string]bool{}, dynamoDB: map[string]map[string]bool{}}
}

func (c *calls) add(set map[string]map[string]bool, fn, call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if set[fn] == nil {
		set[fn] = map[string]bool{}
	}
	set[fn][call] = true
}

// openSearchRecorder serves h and records each request's method and path as fn's.
func (c *calls) openSearchRecorder(fn string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(c.openSearch, fn, r.Method+" "+r.URL.Path)
		h.ServeHTTP(w, r)
	})
}

// dynamoRecorder forwards to moto and records each call's operation as fn's; the DynamoDB JSON
// protocol names it in X-Amz-Target ("DynamoDB_20120810.PutItem").
func (c *calls) dynamoRecorder(t *testing.T, fn, moto string) http.Handler {
	u, err := url.Parse(moto)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, op, ok := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		if !ok {
			t.Errorf("DynamoDB request without X-Amz-Target: %s %s", r.Method, r.URL)
		}
		c.add(c.dynamoDB, fn, "dynamodb:"+op)
		proxy.ServeHTTP(w, r)
	})
}

// stack runs the five functions' handlers in one process, as the local runner does, but each on
// the wire: the production OpenSearch client against the simulator over HTTP, and shared/state's
// DynamoDB store against moto, both through recorders.
type stack struct {
	t     *testing.T
	sim   *sim.Sim
	calls *calls
	bus   *bus.Memory
	fns   map[string]func(context.Context, json.RawMessage) error
	// engines are the functions' engines, whose configuration a run may change between ticks.
	engines map[string]*engine.Engine
	// closers stop the stack's clients, then its recording servers: see close.
	closers []func()
}

// close stops every client of the stack and then its recording servers. httptest.Server.Close
// returns only once every request in flight has been served, so after close nothing of this
// stack is still recording: a retry or a client library's own poll cannot land while the test
// reads what was recorded. It is safe to call again, and the test's cleanup does.
func (s *stack) close() {
	for _, stop := range s.closers {
		stop()
	}
	s.closers = nil
}

func newStack(t *testing.T, c *calls, scenario string, strategy config.MoveStrategy, prepare func(*sim.Scenario, *config.Config)) *stack {
	t.Helper()
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", scenario+".json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	// One sandbox, so that the sandbox function lists the search tasks.
	cfg.Sandbox.Definitions = json.RawMessage(`{"sandboxes":[{"name":"readers","attributes":{"indices_name":"clicks"},` +
		`"resources":{"cpu":{"allocation":0.3}},"enforcement":"soft"}]}`)
	if prepare != nil {
		prepare(sc, &cfg)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	moto := dynamotest.Endpoint(t)
	table := dynamotest.NewTable(t, dynamotest.Client(t, moto))
	cfg.Table = table
	cfg.Safety.DryRun = false
	cfg.MoveStrategy = strategy

	events := &bus.Memory{}
	st := &stack{t: t, sim: s, calls: c, bus: events, fns: map[string]func(context.Context, json.RawMessage) error{},
		engines: map[string]*engine.Engine{}}
	t.Cleanup(st.close)
	var clients []func()
	for fn := range functionIDs {
		osSrv := httptest.NewServer(c.openSearchRecorder(fn, s.Handler()))
		ddbSrv := httptest.NewServer(c.dynamoRecorder(t, fn, moto))
		st.closers = append(st.closers, osSrv.Close, ddbSrv.Close)
		fcfg := cfg
		fcfg.Clusters = []config.Cluster{{Name: "prod", URLs: []string{osSrv.URL}, Auth: string(opensearch.AuthNone)}}
		if err := fcfg.Validate(); err != nil {
			t.Fatal(err)
		}
		// Built on first use, as handler.Env builds a Lambda's clients: a function that never
		// asks for the cluster has no client, and so no client sending anything on its own.
		conns := &collect.Connections{Dial: func(string) (*collect.API, error) {
			client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{osSrv.URL}, Auth: opensearch.AuthNone})
			if err != nil {
				return nil, err
			}
			clients = append(clients, func() { _ = client.Close() })
			return collect.New(client, s.Now), nil
		}}
		eng := &engine.Engine{
			Store:   state.NewDynamo(dynamotest.Client(t, ddbSrv.URL), table, s.Now),
			Bus:     events,
			Cluster: conns.Cluster,
			Tenants: conns.Tenants,
			Clock:   s.Now,
			Log:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Config:  fcfg,
		}
		st.engines[fn] = eng
		f := &handler.Function{Name: fn, Engine: eng, Pushed: conns.Pushed}
		st.fns[fn] = map[string]func(context.Context, json.RawMessage) error{
			"ingest":   func(ctx context.Context, raw json.RawMessage) error { _, err := f.Ingest(ctx, raw); return err },
			"detect":   func(ctx context.Context, raw json.RawMessage) error { _, err := f.Detect(ctx, raw); return err },
			"move":     func(ctx context.Context, raw json.RawMessage) error { _, err := f.Move(ctx, raw); return err },
			"replicas": func(ctx context.Context, raw json.RawMessage) error { _, err := f.Replicas(ctx, raw); return err },
			"sandbox":  func(ctx context.Context, raw json.RawMessage) error { _, err := f.Sandbox(ctx, raw); return err },
		}[fn]
	}
	// Clients first, so that none is left polling a server that is shutting down.
	st.closers = append([]func(){func() {
		for _, stop := range clients {
			stop()
		}
	}}, st.closers...)
	return st
}

// eventBridge wraps a detail as EventBridge delivers it to a rule's target.
func eventBridge(t *testing.T, source, detailType string, detail json.RawMessage) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"version": "0", "id": "00000000-0000-0000-0000-000000000000", "detail-type": detailType, "source": source,
		"account": "123456789012", "time": "2026-01-01T00:00:00Z", "region": dynamotest.Region, "resources": []string{},
		"detail": detail,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tick steps the simulator, then runs the schedule's ingest and every function the published
// events invoke, until none is left.
func (s *stack) tick(ctx context.Context) {
	s.t.Helper()
	s.sim.Step()
	s.invoke(ctx, "ingest", eventBridge(s.t, "aws.events", "Scheduled Event", json.RawMessage(`{}`)))
	for {
		evs := s.bus.Drain()
		if len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			for _, fn := range bus.Subscribers(ev.DetailType) {
				s.invoke(ctx, fn, eventBridge(s.t, ev.Source, ev.DetailType, ev.Detail))
			}
		}
	}
}

func (s *stack) invoke(ctx context.Context, fn string, raw json.RawMessage) {
	s.t.Helper()
	if err := s.fns[fn](ctx, raw); err != nil {
		s.t.Fatalf("%s at %s: %v", fn, s.sim.Elapsed(), err)
	}
}

// grant is one function's role as the template states it.
type grant struct {
	// openSearch maps an HTTP method to the paths granted under the domain, IAM patterns.
	openSearch map[string][]string
	dynamoDB   []string
}

// templateGrants reads template.yaml, the file a user deploys, and returns each function's
// grants on the domain and on the state table.
func templateGrants(t *testing.T) map[string]grant {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	out := map[string]grant{}
	for fn, id := range functionIDs {
		// The function's role (roles.go), which the template writes rather than SAM.
		policies, _ := dig(doc, "Resources", id+"Role", "Properties", "Policies").([]any)
		if policies == nil {
			t.Fatalf("%sRole has no Policies", id)
		}
		g := grant{openSearch: map[string][]string{}}
		for _, st := range statements(policies) {
			actions := strs(t, st["Action"])
			for _, a := range actions {
				switch {
				case strings.HasPrefix(a, "es:ESHttp"):
					method := strings.ToUpper(strings.TrimPrefix(a, "es:ESHttp"))
					for _, r := range deploy.DomainResources(t, st["Resource"], []string{rolesDomain}) {
						p, ok := strings.CutPrefix(r, rolesDomain+"/")
						if !ok {
							t.Errorf("%s: %s granted on %q, not a path under the domain", id, a, r)
						}
						g.openSearch[method] = append(g.openSearch[method], p)
					}
				case strings.HasPrefix(a, "dynamodb:"):
					if got, want := st["Resource"], map[string]any{"Fn::GetAtt": []any{"StateTable", "Arn"}}; !equalJSON(got, want) {
						t.Errorf("%s: %s granted on %v, want the state table only", id, a, got)
					}
					g.dynamoDB = append(g.dynamoDB, a)
				}
			}
		}
		for _, p := range policies {
			if m, ok := p.(map[string]any); ok {
				if _, crud := m["DynamoDBCrudPolicy"]; crud {
					t.Errorf("%s: DynamoDBCrudPolicy grants more than the actions the function calls", id)
				}
			}
		}
		out[fn] = g
	}
	return out
}

// statements collects the IAM statements of a role's inline policies, inside Fn::If branches too.
func statements(v any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			out = append(out, statements(e)...)
		}
	case map[string]any:
		if _, ok := x["Effect"]; ok {
			return []map[string]any{x}
		}
		for k, e := range x {
			if k == "PolicyDocument" || k == "Statement" || k == "Fn::If" {
				out = append(out, statements(e)...)
			}
		}
	}
	return out
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, strs(t, e)...)
		}
		return out
	}
	t.Fatalf("not a string or a list of strings: %#v", v)
	return nil
}

// rolesDomain is the one domain the roles are read for: TestDomainGrants checks that what is
// granted on one is granted on each.
const rolesDomain = "arn:aws:es:eu-west-1:123456789012:domain/prod"

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// iamMatch reports whether an IAM resource pattern matches a path: "*" is any run of characters,
// "/" included; "?" is one character.
func iamMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if iamMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && iamMatch(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && iamMatch(pattern[1:], s[1:])
}

// TestRolesMatchCalls runs every function's handler against the simulator and moto, recording
// what each sends, and compares it with its role in template.yaml: every call must be granted,
// and every grant must have been used by some call. Two scenarios cover the paths a single one
// cannot: a managed domain that refuses _cluster/reroute (move falls back to allocation filters,
// ingest removes them an hour after they were set) and a search spike (replicas adds copies). Each
// ends with a shardwise alarm (events/alarm.json), on which detect samples the cluster itself.
func TestRolesMatchCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("drives two scenarios through every function against moto (about 20 s); -short leaves it out")
	}
	grants := templateGrants(t)
	c := newCalls()
	runs := []struct {
		scenario string
		strategy config.MoveStrategy
		prepare  func(*sim.Scenario, *config.Config)
		// until is the call that shows the scenario has done what it is here for.
		until func() bool
		// then are sandbox definitions set one after the other after until, a tick each, so that
		// the workload-management sync updates and deletes what it created.
		then []json.RawMessage
	}{
		{scenario: "write-hotspot-managed", strategy: config.StrategyAuto, until: func() bool { return c.has("ingest", "PUT", "/_settings") }},
		{scenario: "search-spike", strategy: config.StrategyReroute, until: func() bool { return c.has("replicas", "PUT", "/_settings") }},
		// A tenant over its hard sandbox's share has its requests cancelled; OpenSearch 2.19's
		// workload management (_wlm/query_group) gets the sandboxes as groups.
		{
			scenario: "sandbox-noisy-tenant", strategy: config.StrategyReroute,
			prepare: wlmCluster(t, "2.19.0", noisyTenantSandboxes(t, "")),
			until: func() bool {
				return c.has("sandbox", "POST", "/_cancel") && c.has("sandbox", "PUT", "/_wlm/query_group")
			},
			then: []json.RawMessage{noisyTenantSandboxes(t, "analytics", storefrontAt(0.4))},
		},
		// OpenSearch 3.1: _wlm/workload_group, and a rule for the sandbox keyed on an index.
		{
			scenario: "sandbox-noisy-tenant", strategy: config.StrategyReroute,
			prepare: wlmCluster(t, "3.1.0", noisyTenantSandboxes(t, "", indexSandbox("catalog"))),
			until:   func() bool { return c.has("sandbox", "PUT", "/_rules/workload_group") },
			then: []json.RawMessage{
				noisyTenantSandboxes(t, "analytics", storefrontAt(0.4), indexSandbox("catalog*")),
				noisyTenantSandboxes(t, "analytics", storefrontAt(0.4)),
			},
		},
	}
	var stacks []*stack
	for _, run := range runs {
		s := newStack(t, c, run.scenario, run.strategy, run.prepare)
		for !run.until() {
			if s.sim.Done() {
				t.Fatalf("%s ended without the call it is run for; calls: %v", run.scenario, c.sent())
			}
			s.tick(t.Context())
		}
		t.Logf("%s: done after %s", run.scenario, s.sim.Elapsed())
		for _, defs := range run.then {
			s.engines["sandbox"].Config.Sandbox.Definitions = defs
			s.tick(t.Context())
		}
		// A shardwise alarm on the cluster: detect reads and stores a fresh sample itself
		// (engine.DetectNow), one tick after the last.
		alarm, err := os.ReadFile(filepath.Join("..", "..", "events", "alarm.json"))
		if err != nil {
			t.Fatal(err)
		}
		s.sim.Step()
		s.invoke(t.Context(), "detect", alarm)
		if run.scenario == "search-spike" {
			// A cycle that fails after claiming its snapshot gives the claim back: here the
			// snapshot the event names does not exist.
			ev := eventBridge(t, bus.Source, bus.TypeStatsIngested, json.RawMessage(`{"cluster":"prod","snapshot_key":"snap#missing"}`))
			if err := s.fns["replicas"](t.Context(), ev); err == nil {
				t.Error("replicas on a missing snapshot: got no error")
			}
		}
		stacks = append(stacks, s)
	}
	// Every stack is closed, clients first, only now: closed mid-test, a server's port could be
	// taken by the next stack's server while a closed client's poll was still on its way to it.
	// Then nothing records any more, and the sets below are copies.
	for _, s := range stacks {
		s.close()
	}
	openSearch, dynamoDB := c.recorded()

	for _, fn := range slices.Sorted(maps.Keys(functionIDs)) {
		t.Run(fn, func(t *testing.T) {
			g := grants[fn]
			used := map[string]bool{}
			for _, call := range slices.Sorted(maps.Keys(openSearch[fn])) {
				method, path, _ := strings.Cut(call, " ")
				granted := false
				for _, p := range g.openSearch[method] {
					if iamMatch(p, strings.TrimPrefix(path, "/")) {
						granted, used[method+" "+p] = true, true
					}
				}
				if transportPolls[call] {
					if granted {
						t.Errorf("grants %s, a poll of the client library that shardwise does not need", call)
					}
					continue
				}
				if !granted {
					t.Errorf("sends %s, which its role does not grant (granted: %v)", call, g.openSearch)
				}
			}
			for method, paths := range g.openSearch {
				for _, p := range paths {
					if !used[method+" "+p] {
						t.Errorf("granted %s %s, which it never sent (sent: %v)", method, p, slices.Sorted(maps.Keys(openSearch[fn])))
					}
				}
			}
			sent := maps.Clone(dynamoDB[fn])
			for _, call := range unreachedGrants[fn] {
				sent[call] = true
			}
			if got, want := slices.Sorted(maps.Keys(sent)), slices.Sorted(slices.Values(g.dynamoDB)); !slices.Equal(got, want) {
				t.Errorf("DynamoDB: calls %v (with %v these runs cannot reach), granted %v", got, unreachedGrants[fn], want)
			}
		})
	}
}

// unreachedGrants are calls a function's code makes on paths these runs do not reach, granted all
// the same. move deletes an allocation-filter record when it cleans up a relocation that ended
// between ingest's cleanup and its own, or undoes a group whose later exclusion failed; every tick
// here steps the simulator before ingest, and no exclusion fails. Its lease is never deleted (a
// release rewrites it under its owner token), so nothing else of move's deletes.
var unreachedGrants = map[string][]string{"move": {"dynamodb:DeleteItem"}}

// transportPolls are requests opensearch-go's transport sends on its own timer, every 5 to 30 s
// while a function runs: node stats for its load shedding. shardwise's code does not send them
// and the roles do not grant them. With one URL per cluster the client has a single-server pool,
// which a failed poll leaves as it is, so a denied poll costs one 403 and changes nothing.
var transportPolls = map[string]bool{"GET /_nodes/_local/stats/jvm,breaker,thread_pool": true}

// recorded returns copies of the OpenSearch and DynamoDB sets, taken under the lock: a request
// may still be in flight on a server's goroutine while a stack runs.
func (c *calls) recorded() (openSearch, dynamoDB map[string]map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clone := func(set map[string]map[string]bool) map[string]map[string]bool {
		out := make(map[string]map[string]bool, len(set))
		for fn, calls := range set {
			out[fn] = maps.Clone(calls)
		}
		return out
	}
	return clone(c.openSearch), clone(c.dynamoDB)
}

// sent lists what each function has sent to OpenSearch so far, for a failure message.
func (c *calls) sent() map[string][]string {
	openSearch, _ := c.recorded()
	out := map[string][]string{}
	for fn, calls := range openSearch {
		out[fn] = slices.Sorted(maps.Keys(calls))
	}
	return out
}

// has reports whether fn sent method on a path ending in suffix.
func (c *calls) has(fn, method, suffix string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for call := range c.openSearch[fn] {
		m, p, _ := strings.Cut(call, " ")
		if m == method && strings.HasSuffix(p, suffix) {
			return true
		}
	}
	return false
}

func TestIAMMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"_nodes/stats/*", "_nodes/stats/jvm,fs,thread_pool,indices", true},
		{"_nodes/stats/*", "_nodes/stats", false},
		{"_nodes", "_nodes", true},
		{"_nodes", "_nodes/stats/jvm", false},
		{"*/_settings", "logs-a/_settings", true},
		{"*/_settings", "_cluster/settings", false},
		{"_tasks/*/_cancel", "_tasks/node:1/_cancel", true},
		{"_stat?", "_stats", true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s~%s", tc.pattern, tc.path), func(t *testing.T) {
			if got := iamMatch(tc.pattern, tc.path); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// noisyTenantSandboxes returns the sandbox-noisy-tenant scenario's sandbox definitions without the
// sandbox named drop, with extra sandboxes added or, by name, replacing.
func noisyTenantSandboxes(t *testing.T, drop string, extra ...map[string]any) json.RawMessage {
	t.Helper()
	cfg, err := config.LoadFile(filepath.Join("..", "..", "scenarios", "configs", "sandbox-noisy-tenant.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sandboxes []map[string]any `json:"sandboxes"`
		Resources map[string]any   `json:"resources"`
	}
	if err := json.Unmarshal(cfg.Sandbox.Definitions, &doc); err != nil {
		t.Fatal(err)
	}
	doc.Sandboxes = slices.DeleteFunc(doc.Sandboxes, func(sb map[string]any) bool {
		return sb["name"] == drop || slices.ContainsFunc(extra, func(x map[string]any) bool { return x["name"] == sb["name"] })
	})
	doc.Sandboxes = append(doc.Sandboxes, extra...)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// indexSandbox is a monitor sandbox keyed on an index pattern, which workload management's rules
// can express (the others key on X-Opaque-Id, which they cannot).
func indexSandbox(pattern string) map[string]any {
	return map[string]any{"name": "catalog-readers", "attributes": map[string]any{"indices_name": pattern},
		"resources": map[string]any{"cpu": map[string]any{"allocation": 0.1}}, "enforcement": "monitor"}
}

// storefrontAt is the scenario's storefront sandbox with another CPU allocation.
func storefrontAt(cpu float64) map[string]any {
	return map[string]any{"name": "storefront", "attributes": map[string]any{"custom_id": "storefront-web"},
		"resources": map[string]any{"cpu": map[string]any{"allocation": cpu}, "jvm": map[string]any{"allocation": 0.3}}, "enforcement": "soft"}
}

// wlmCluster makes the scenario's cluster the given OpenSearch version with the
// workload-management plugin, and sets the sandbox definitions.
func wlmCluster(t *testing.T, version string, definitions json.RawMessage) func(*sim.Scenario, *config.Config) {
	t.Helper()
	return func(sc *sim.Scenario, cfg *config.Config) {
		sc.Cluster.OpenSearchVersion = version
		sc.Cluster.Plugins = []string{"workload-management"}
		cfg.Sandbox.Definitions = definitions
	}
}
