package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/webhook"
)

var webhookSecret = []byte("test-secret-test-secret-test-secret")

// recordingStore is the embedded store, recording the key of every write.
type recordingStore struct {
	state.Store
	mu     sync.Mutex
	writes []string
}

func (s *recordingStore) record(keys ...state.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.writes = append(s.writes, k.String())
	}
}

func (s *recordingStore) Put(ctx context.Context, it state.Item, c state.Condition) (state.Item, error) {
	s.record(it.Key)
	return s.Store.Put(ctx, it, c)
}

func (s *recordingStore) Delete(ctx context.Context, k state.Key, c state.Condition) error {
	s.record(k)
	return s.Store.Delete(ctx, k, c)
}

func (s *recordingStore) BatchPut(ctx context.Context, items []state.Item) error {
	for _, it := range items {
		s.record(it.Key)
	}
	return s.Store.BatchPut(ctx, items)
}

func (s *recordingStore) Writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

// webhookFixture is the ingest function with cluster "prod" served by the simulator over HTTP and
// cluster "staging" configured on a port nothing listens on.
type webhookFixture struct {
	f      *Function
	sim    *sim.Sim
	simURL string
	store  *recordingStore
	events *bus.Memory
}

func newWebhookFixture(t *testing.T) *webhookFixture {
	t.Helper()
	write, search := sim.Constant(6), sim.Constant(2)
	sc := &sim.Scenario{
		Name: "webhook", Seed: 3, TickSeconds: 30, DurationSeconds: 3600,
		NodeDefaults: sim.NodeSpec{WriteThreads: 8, SearchThreads: 13, HeapBytes: 8 << 30, DiskBytes: 1 << 40},
		Nodes:        []sim.NodeSpec{{Name: "node-0"}, {Name: "node-1"}, {Name: "node-2"}},
		Indices: []sim.IndexSpec{{Name: "logs", Primaries: 3, Replicas: 1, ShardBytes: 1 << 30,
			WriteLoad: &write, SearchLoad: &search}},
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	s.Step()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{srv.URL}, Auth: opensearch.AuthNone, MaxRetries: -1})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	down, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{"http://127.0.0.1:1"}, Auth: opensearch.AuthNone, MaxRetries: -1})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	apis := map[string]*collect.API{"prod": collect.New(client, s.Now), "staging": collect.New(down, s.Now)}
	conns := &collect.Connections{Dial: func(name string) (*collect.API, error) { return apis[name], nil }}
	cfg := config.Default()
	cfg.Clusters = []config.Cluster{
		{Name: "prod", URLs: []string{srv.URL}, Auth: string(opensearch.AuthNone)},
		{Name: "staging", URLs: []string{"http://127.0.0.1:1"}, Auth: string(opensearch.AuthNone)},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	fx := &webhookFixture{sim: s, simURL: srv.URL, store: &recordingStore{Store: state.NewMemory(s.Now)}, events: &bus.Memory{}}
	fx.f = &Function{Name: "ingest", WebhookSecret: webhook.StaticSecret(webhookSecret), Pushed: conns.Pushed, Engine: &engine.Engine{
		Store:   fx.store,
		Bus:     fx.events,
		Cluster: conns.Cluster,
		Clock:   s.Now,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config:  cfg,
	}}
	return fx
}

// nodesStats is the simulator's own _nodes/stats document: what a collector beside the cluster
// would push.
func (fx *webhookFixture) nodesStats(t *testing.T) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fx.simURL+"/_nodes/stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET _nodes/stats: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET _nodes/stats: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// sampleURLRequest reads a Function URL request from events/.
func sampleURLRequest(t *testing.T, name string) events.LambdaFunctionURLRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	var req events.LambdaFunctionURLRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return req
}

// request is a POST to path: SigV4-authorized (as the AWS_IAM URL delivers it) unless hmacAt is
// set, then HMAC-signed at that time with the fixture's secret (the public URL).
type request struct {
	path, body, cluster, contentType string
	hmacAt                           time.Time
	hmacSecret                       []byte
	unsigned                         bool
}

func (r request) build() events.LambdaFunctionURLRequest {
	req := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.path, Body: r.body,
		Headers: map[string]string{"content-type": "application/json"}}
	req.RequestContext.HTTP.Method = http.MethodPost
	req.RequestContext.HTTP.Path = r.path
	req.RequestContext.RequestID = testRequestID
	if r.contentType != "" {
		req.Headers["content-type"] = r.contentType
	}
	if r.cluster != "" {
		req.Headers[webhook.HeaderCluster] = r.cluster
	}
	switch {
	case r.unsigned:
	case !r.hmacAt.IsZero():
		secret := webhookSecret
		if r.hmacSecret != nil {
			secret = r.hmacSecret
		}
		m := webhook.Message{Method: http.MethodPost, Path: r.path, Cluster: r.cluster, Body: []byte(r.body)}
		req.Headers[webhook.HeaderTimestamp], req.Headers[webhook.HeaderSignature] = webhook.Sign(secret, m, r.hmacAt)
	default:
		req.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
			IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: "arn:aws:sts::123456789012:assumed-role/forwarder/x"}}
	}
	return req
}

// testRequestID is the Function URL request id of every request built here.
const testRequestID = "4f2a6c1e-test"

// replyBody reads both the error body and the reply.
type replyBody struct {
	Status    int             `json:"status"`
	Code      string          `json:"error"`
	Message   string          `json:"message"`
	RequestID string          `json:"request_id"`
	Kind      string          `json:"kind"`
	Ignored   string          `json:"ignored"`
	Results   []webhookResult `json:"results"`
}

func decodeReply(t *testing.T, resp events.LambdaFunctionURLResponse) replyBody {
	t.Helper()
	if ct := resp.Headers["content-type"]; ct != "application/json" {
		t.Errorf("content-type: got %q, want application/json", ct)
	}
	var r replyBody
	if err := json.Unmarshal([]byte(resp.Body), &r); err != nil {
		t.Fatalf("reply is not JSON: %v: %s", err, resp.Body)
	}
	return r
}

// TestWebhookBadInputStoresNothing: every refused request gets its status and a JSON error, and
// leaves the state table and the bus untouched.
func TestWebhookBadInputStoresNothing(t *testing.T) {
	alert := sampleURLRequest(t, "webhook-alertmanager.json").Body
	foreign := sampleURLRequest(t, "webhook-nodes-stats.json").Body // node IDs the simulator does not have
	tests := []struct {
		name      string
		req       func(fx *webhookFixture) request
		secret    webhook.SecretSource // replaces the fixture's when set
		status    int
		code      string
		inMessage string
		// notInBody is internal detail the answer must not carry (it goes to the log).
		notInBody []string
	}{
		{name: "malformed JSON", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathNodesStats, cluster: "prod", body: fx.nodesStats(t)[:200]}
		}, status: 400, code: "malformed_body", inMessage: "unexpected end of JSON"},
		{name: "wrong content type", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert, contentType: "text/plain"}
		}, status: 400, code: "unsupported_content_type", inMessage: "text/plain"},
		{name: "body over 1 MiB", req: func(*webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert + strings.Repeat(" ", webhook.MaxBodyBytes)}
		}, status: 413, code: "body_too_large", inMessage: "limit 1048576"},
		{name: "missing signature", req: func(*webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert, unsigned: true}
		}, status: 401, code: "unauthenticated", inMessage: "not signed"},
		{name: "wrong signature", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert, hmacAt: fx.sim.Now(), hmacSecret: []byte("another-secret-another-secret-another")}
		}, status: 401, code: "unauthenticated", inMessage: "does not match"},
		{name: "stale timestamp", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert, hmacAt: fx.sim.Now().Add(-webhook.MaxClockSkew - time.Second)}
		}, status: 401, code: "unauthenticated", inMessage: "a replay or a wrong clock"},
		{name: "unknown cluster", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathNodesStats, cluster: "dev", body: fx.nodesStats(t)}
		}, status: 404, code: "unknown_cluster", inMessage: `"dev"`},
		{name: "unknown path", req: func(*webhookFixture) request {
			return request{path: "/metrics", body: alert}
		}, status: 404, code: "no_such_webhook", inMessage: "/metrics"},
		{name: "another cluster's node stats", req: func(*webhookFixture) request {
			return request{path: webhook.PathNodesStats, cluster: "prod", body: foreign}
		}, status: 422, code: "push_rejected", inMessage: "not in the cluster state"},
		{name: "cluster unreachable", req: func(*webhookFixture) request {
			return request{path: webhook.PathAlertmanager, cluster: "staging", body: alert}
		}, status: 502, code: "ingest_failed", inMessage: "the log of request " + testRequestID, notInBody: []string{"connection refused", "127.0.0.1"}},
		{name: "secret unreadable", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert, hmacAt: fx.sim.Now()}
		}, secret: failingSecret{}, status: 503, code: "secret_unavailable", inMessage: "the log of request " + testRequestID,
			notInBody: []string{"arn:aws", "AccessDenied", "GetParameter"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newWebhookFixture(t)
			if tc.secret != nil {
				fx.f.WebhookSecret = tc.secret
			}
			resp := fx.f.webhook(t.Context(), tc.req(fx).build())
			r := decodeReply(t, resp)
			if resp.StatusCode != tc.status || r.Status != tc.status || r.Code != tc.code {
				t.Errorf("got %d %q (body status %d), want %d %q: %s", resp.StatusCode, r.Code, r.Status, tc.status, tc.code, resp.Body)
			}
			if !strings.Contains(r.Message, tc.inMessage) {
				t.Errorf("message %q does not say %q", r.Message, tc.inMessage)
			}
			if r.RequestID != testRequestID {
				t.Errorf("request id: got %q, want %q", r.RequestID, testRequestID)
			}
			for _, secret := range tc.notInBody {
				if strings.Contains(resp.Body, secret) {
					t.Errorf("answer carries %q: %s", secret, resp.Body)
				}
			}
			if w := fx.store.Writes(); len(w) != 0 {
				t.Errorf("stored %v, want nothing", w)
			}
			for _, c := range []string{"prod", "staging", "dev"} {
				if items, err := fx.store.Query(t.Context(), "cluster#"+c, ""); err != nil || len(items) != 0 {
					t.Errorf("cluster %s has %d items (%v), want none", c, len(items), err)
				}
			}
			if ev := fx.events.Events(); len(ev) != 0 {
				t.Errorf("published %d events, want none", len(ev))
			}
		})
	}
}

// failingSecret is an SSM parameter the function may not read: its error names the role's ARN.
type failingSecret struct{}

func (failingSecret) Secret(context.Context) ([]byte, error) {
	return nil, fmt.Errorf("%w: ssm parameter /shardwise/webhook: operation error SSM: GetParameter, https response error StatusCode: 400, "+
		"AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/shardwise-ingest/fn is not authorized", webhook.ErrSecretUnavailable)
}

// A failure upstream reaches the log with the request id the caller was given.
func TestWebhookLogsWhatItHides(t *testing.T) {
	fx := newWebhookFixture(t)
	var logged strings.Builder
	fx.f.Engine.Log = slog.New(slog.NewTextHandler(&logged, nil))
	alert := sampleURLRequest(t, "webhook-alertmanager.json").Body
	resp := fx.f.webhook(t.Context(), request{path: webhook.PathAlertmanager, cluster: "staging", body: alert}.build())
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(resp.Body, "connection refused") {
		t.Fatalf("got %d %s, want 502 without the cause", resp.StatusCode, resp.Body)
	}
	for _, want := range []string{"connection refused", "request_id=" + testRequestID} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged.String())
		}
	}
}

// An HMAC-signed request is carried out once: sent again it is refused and changes nothing.
func TestWebhookRefusesReplays(t *testing.T) {
	fx := newWebhookFixture(t)
	req := request{path: webhook.PathNodesStats, cluster: "prod", body: fx.nodesStats(t), hmacAt: fx.sim.Now()}.build()
	if resp := fx.f.webhook(t.Context(), req); resp.StatusCode != http.StatusOK {
		t.Fatalf("first delivery: got %d %s, want 200", resp.StatusCode, resp.Body)
	}
	writes, published := len(fx.store.Writes()), len(fx.events.Events())
	resp := fx.f.webhook(t.Context(), req)
	r := decodeReply(t, resp)
	if resp.StatusCode != http.StatusConflict || r.Code != "replayed" {
		t.Errorf("replay: got %d %q, want 409 replayed: %s", resp.StatusCode, r.Code, resp.Body)
	}
	if w := fx.store.Writes(); len(w) != writes+1 || !strings.Contains(w[len(w)-1], "webhook#sig#") {
		t.Errorf("replay wrote %v, want only its refused signature claim", w[writes:])
	}
	if ev := fx.events.Events(); len(ev) != published {
		t.Errorf("replay published %d more events, want none", len(ev)-published)
	}
}

// TestWebhookIngests: accepted requests store a snapshot and publish "Stats Ingested"; alerts and
// alarms are planned at once.
func TestWebhookIngests(t *testing.T) {
	alert := sampleURLRequest(t, "webhook-alertmanager.json").Body
	alarm := sampleURLRequest(t, "webhook-alarm.json").Body
	resolved := strings.ReplaceAll(alert, `"firing"`, `"resolved"`)
	tests := []struct {
		name     string
		req      func(fx *webhookFixture) request
		kind     webhook.Kind
		ignored  bool
		detected bool
	}{
		{name: "pushed node stats, SigV4", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathNodesStats, cluster: "prod", body: fx.nodesStats(t)}
		}, kind: webhook.KindNodesStats},
		{name: "pushed node stats, HMAC", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathNodesStats, cluster: "prod", body: fx.nodesStats(t), hmacAt: fx.sim.Now().Add(-time.Minute)}
		}, kind: webhook.KindNodesStats},
		{name: "Alertmanager, HMAC", req: func(fx *webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: alert, hmacAt: fx.sim.Now()}
		}, kind: webhook.KindAlertmanager, detected: true},
		{name: "CloudWatch alarm, SigV4", req: func(*webhookFixture) request {
			return request{path: webhook.PathAlarm, body: alarm}
		}, kind: webhook.KindAlarm, detected: true},
		{name: "resolved alert", req: func(*webhookFixture) request {
			return request{path: webhook.PathAlertmanager, body: resolved}
		}, kind: webhook.KindAlertmanager, ignored: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newWebhookFixture(t)
			resp := fx.f.webhook(t.Context(), tc.req(fx).build())
			r := decodeReply(t, resp)
			if resp.StatusCode != http.StatusOK || r.Kind != string(tc.kind) {
				t.Fatalf("got %d kind %q, want 200 %q: %s", resp.StatusCode, r.Kind, tc.kind, resp.Body)
			}
			if tc.ignored {
				if r.Ignored == "" || len(r.Results) != 0 || len(fx.store.Writes()) != 0 || len(fx.events.Events()) != 0 {
					t.Errorf("got %s with %d writes and %d events, want it ignored and nothing stored", resp.Body, len(fx.store.Writes()), len(fx.events.Events()))
				}
				return
			}
			if len(r.Results) != 1 || r.Results[0].Cluster != "prod" || r.Results[0].SnapshotKey == "" || r.Results[0].Error != "" {
				t.Fatalf("results: got %+v, want one snapshot of prod", r.Results)
			}
			key := r.Results[0].SnapshotKey
			if latest, _, err := state.GetJSON[string](t.Context(), fx.store, state.Key{PK: "cluster#prod", SK: "snap#latest"}); err != nil || latest != key {
				t.Errorf("latest snapshot: got %q, %v, want %q", latest, err, key)
			}
			var ingested []bus.StatsIngested
			for _, ev := range fx.events.Events() {
				if ev.DetailType == bus.TypeStatsIngested {
					var d bus.StatsIngested
					if err := json.Unmarshal(ev.Detail, &d); err != nil {
						t.Fatal(err)
					}
					ingested = append(ingested, d)
				}
			}
			if len(ingested) != 1 || ingested[0].SnapshotKey != key || ingested[0].Nodes != 3 || ingested[0].Copies != 6 {
				t.Errorf("Stats Ingested: got %+v, want one for %s with 3 nodes and 6 copies", ingested, key)
			}
			_, err := fx.store.Get(t.Context(), state.Key{PK: "cluster#prod", SK: "plan#" + key})
			if planned := err == nil; planned != tc.detected || (r.Results[0].PlanKey != "") != tc.detected {
				t.Errorf("planned: stored %v, plan key %q, want %v", planned, r.Results[0].PlanKey, tc.detected)
			}
		})
	}
}

// TestIngestServesSampleWebhooks runs the sample Function URL events through Ingest, as Lambda
// does: each gets an HTTP answer, never a Lambda error.
func TestIngestServesSampleWebhooks(t *testing.T) {
	tests := []struct {
		file   string
		status int
	}{
		// The sample's node IDs are not the simulator's: refused, as stats of another cluster.
		{file: "webhook-nodes-stats.json", status: http.StatusUnprocessableEntity},
		{file: "webhook-alertmanager.json", status: http.StatusOK},
		{file: "webhook-alarm.json", status: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			fx := newWebhookFixture(t)
			raw, err := os.ReadFile(filepath.Join("..", "..", "events", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			out, err := fx.f.Ingest(t.Context(), raw)
			if err != nil {
				t.Fatalf("Ingest: %v", err)
			}
			resp, ok := out.(events.LambdaFunctionURLResponse)
			if !ok {
				t.Fatalf("Ingest returned %T, want a Function URL response", out)
			}
			if resp.StatusCode != tc.status {
				t.Errorf("status: got %d, want %d: %s", resp.StatusCode, tc.status, resp.Body)
			}
		})
	}
}

// FuzzIngestEvent feeds arbitrary payloads to the ingest handler, as Lambda would: a Function URL
// request always gets a JSON HTTP answer and never a Lambda error; nothing panics. The clusters
// are unreachable, so an accepted request ends in 502 and nothing is stored.
func FuzzIngestEvent(f *testing.F) {
	for _, name := range []string{"webhook-nodes-stats.json", "webhook-alertmanager.json", "webhook-alarm.json", "schedule.json", "invoke.json"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	for _, s := range []string{`{}`, `null`, `{"requestContext":{},"rawPath":"/alarm"}`,
		`{"requestContext":{"http":{"method":"POST"},"authorizer":{"iam":{}}},"rawPath":"/nodes/stats","headers":{"content-type":"application/json"},"body":"{}"}`} {
		f.Add([]byte(s))
	}
	cfg := config.Default()
	cfg.Clusters = []config.Cluster{{Name: "prod", URLs: []string{"http://127.0.0.1:1"}, Auth: string(opensearch.AuthNone)}}
	store := state.NewMemory(nil)
	fn := &Function{Name: "ingest", WebhookSecret: webhook.StaticSecret(webhookSecret), Engine: &engine.Engine{
		Store:   store,
		Bus:     &bus.Memory{},
		Cluster: func(name string) (engine.ClusterAPI, error) { return nil, errors.New("unreachable") },
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config:  cfg,
	}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		kind, err := classify(raw)
		out, ierr := fn.Ingest(t.Context(), raw)
		if err != nil || kind != kindFunctionURL {
			return
		}
		resp, ok := out.(events.LambdaFunctionURLResponse)
		if !ok || ierr != nil {
			t.Fatalf("Function URL request answered with %T, %v", out, ierr)
		}
		if resp.StatusCode < 200 || !json.Valid([]byte(resp.Body)) {
			t.Fatalf("answer %d %q", resp.StatusCode, resp.Body)
		}
		if items, err := store.Query(t.Context(), "cluster#prod", ""); err != nil || len(items) != 0 {
			t.Fatalf("stored %d items (%v) for an unreachable cluster", len(items), err)
		}
	})
}
