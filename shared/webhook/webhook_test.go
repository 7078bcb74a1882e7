package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardwise/shardwise/shared/state"
)

// countingSecret is a SecretSource that counts reads and can fail.
type countingSecret struct {
	reads int
	err   error
}

func (s *countingSecret) Secret(context.Context) ([]byte, error) {
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	return testSecret, nil
}

// unsigned strips a sample request's IAM authorizer: what the public (AuthType NONE) URL delivers.
func unsigned(req events.LambdaFunctionURLRequest) events.LambdaFunctionURLRequest {
	req.RequestContext.Authorizer = nil
	h := make(map[string]string, len(req.Headers))
	for k, v := range req.Headers {
		if k != "authorization" && !strings.HasPrefix(k, "x-amz-") {
			h[k] = v
		}
	}
	req.Headers = h
	return req
}

// signed signs req with HMAC at t.
func signed(req events.LambdaFunctionURLRequest, t time.Time) events.LambdaFunctionURLRequest {
	req = unsigned(req)
	ts, sig := Sign(testSecret, Message{Method: req.RequestContext.HTTP.Method, Path: req.RawPath, Cluster: header(req.Headers, HeaderCluster), Body: []byte(req.Body)}, t)
	req.Headers[HeaderTimestamp], req.Headers[HeaderSignature] = ts, sig
	return req
}

func TestReceive(t *testing.T) {
	push := sampleRequest(t, "webhook-nodes-stats.json")
	am := sampleRequest(t, "webhook-alertmanager.json")
	alarm := sampleRequest(t, "webhook-alarm.json")
	with := func(req events.LambdaFunctionURLRequest, change func(*events.LambdaFunctionURLRequest)) events.LambdaFunctionURLRequest {
		h := make(map[string]string, len(req.Headers))
		for k, v := range req.Headers {
			h[k] = v
		}
		req.Headers = h
		change(&req)
		return req
	}
	tests := []struct {
		name       string
		req        events.LambdaFunctionURLRequest
		secret     SecretSource // replaces the working secret when set
		noSecret   bool         // no secret configured
		replays    ReplayGuard  // replaces the working guard when set
		noReplays  bool         // no replay guard configured
		want       Action
		wantStatus int // 0 for accepted
		wantErr    string
	}{
		{name: "pushed nodes stats, SigV4", req: push, want: Action{Kind: KindNodesStats, Auth: AuthSigV4, Clusters: []string{"prod"}}},
		{name: "pushed nodes stats, HMAC", req: signed(push, testNow), want: Action{Kind: KindNodesStats, Auth: AuthHMAC, Clusters: []string{"prod"}}},
		{name: "cluster from cluster_name when it is configured", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			delete(r.Headers, HeaderCluster)
		}), want: Action{Kind: KindNodesStats, Auth: AuthSigV4, Clusters: []string{"prod"}}},
		{name: "alertmanager, SigV4", req: am, want: Action{Kind: KindAlertmanager, Auth: AuthSigV4, Clusters: []string{"prod"}, Nodes: []string{"node-3"}, Detect: true}},
		{name: "alertmanager, header wins over labels", req: with(am, func(r *events.LambdaFunctionURLRequest) { r.Headers[HeaderCluster] = "staging" }),
			want: Action{Kind: KindAlertmanager, Auth: AuthSigV4, Clusters: []string{"staging"}, Nodes: []string{"node-3"}, Detect: true}},
		{name: "alertmanager, all resolved", req: with(am, func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.ReplaceAll(r.Body, `"firing"`, `"resolved"`)
		}), want: Action{Kind: KindAlertmanager, Auth: AuthSigV4, Ignored: "no firing alerts"}},
		{name: "alarm, cluster from its dimension", req: alarm, want: Action{Kind: KindAlarm, Auth: AuthSigV4, Clusters: []string{"prod"}, Nodes: []string{"node-3"}, Detect: true}},
		{name: "alarm back to OK", req: with(alarm, func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.Replace(r.Body, `"value":"ALARM"`, `"value":"OK"`, 1)
		}), want: Action{Kind: KindAlarm, Auth: AuthSigV4, Ignored: "alarm shardwise-prod-node-3-write-queue is not in ALARM"}},
		{name: "base64 body", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(r.Body)), true
		}), want: Action{Kind: KindNodesStats, Auth: AuthSigV4, Clusters: []string{"prod"}}},
		{name: "trailing slash and charset", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			r.RawPath += "/"
			r.Headers["content-type"] = "application/json; charset=UTF-8"
		}), want: Action{Kind: KindNodesStats, Auth: AuthSigV4, Clusters: []string{"prod"}}},
		{name: "header names in any case", req: with(signed(push, testNow), func(r *events.LambdaFunctionURLRequest) {
			r.Headers["X-Shardwise-Signature"] = r.Headers[HeaderSignature]
			delete(r.Headers, HeaderSignature)
		}), want: Action{Kind: KindNodesStats, Auth: AuthHMAC, Clusters: []string{"prod"}}},

		{name: "body over 1 MiB", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			r.Body = `{"nodes":{"a":{"name":"` + strings.Repeat("x", MaxBodyBytes) + `"}}}`
		}), wantStatus: http.StatusRequestEntityTooLarge, wantErr: "limit 1048576"},
		{name: "base64 body over 1 MiB", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString(make([]byte, MaxBodyBytes+1)), true
		}), wantStatus: http.StatusRequestEntityTooLarge},
		{name: "body over 1 MiB is refused before authentication", req: with(unsigned(push), func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.Repeat(" ", MaxBodyBytes+1)
		}), wantStatus: http.StatusRequestEntityTooLarge},
		{name: "unsigned", req: unsigned(push), wantStatus: http.StatusUnauthorized, wantErr: "not signed"},
		{name: "HMAC signature of another body", req: with(signed(push, testNow), func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.Replace(r.Body, `"queue":212`, `"queue":0`, 1)
		}), wantStatus: http.StatusUnauthorized, wantErr: "does not match"},
		{name: "HMAC signature for another cluster", req: with(signed(push, testNow), func(r *events.LambdaFunctionURLRequest) {
			r.Headers[HeaderCluster] = "staging"
		}), wantStatus: http.StatusUnauthorized, wantErr: "does not match"},
		{name: "HMAC signature for another path", req: with(signed(alarm, testNow), func(r *events.LambdaFunctionURLRequest) {
			r.RawPath = PathAlertmanager
		}), wantStatus: http.StatusUnauthorized, wantErr: "does not match"},
		{name: "HMAC signature for another method", req: with(signed(push, testNow), func(r *events.LambdaFunctionURLRequest) {
			r.RequestContext.HTTP.Method = http.MethodPut
		}), wantStatus: http.StatusUnauthorized, wantErr: "does not match"},
		{name: "HMAC without a replay guard", req: signed(push, testNow), noReplays: true, wantStatus: http.StatusUnauthorized, wantErr: "no replay guard"},
		{name: "signature not recordable", req: signed(push, testNow), replays: failingReplays{}, wantStatus: http.StatusServiceUnavailable, wantErr: "replay check"},
		{name: "stale HMAC timestamp", req: signed(push, testNow.Add(-MaxClockSkew-time.Second)), wantStatus: http.StatusUnauthorized, wantErr: "replay"},
		{name: "HMAC without a configured secret", req: signed(push, testNow), noSecret: true, wantStatus: http.StatusUnauthorized, wantErr: "no secret is configured"},
		{name: "secret unreadable", req: signed(push, testNow), secret: &countingSecret{err: errors.New("ssm down")}, wantStatus: http.StatusServiceUnavailable, wantErr: "ssm down"},
		{name: "GET", req: with(push, func(r *events.LambdaFunctionURLRequest) { r.RequestContext.HTTP.Method = http.MethodGet }),
			wantStatus: http.StatusMethodNotAllowed},
		{name: "unknown path", req: with(push, func(r *events.LambdaFunctionURLRequest) { r.RawPath = "/metrics" }), wantStatus: http.StatusNotFound, wantErr: "no such webhook"},
		{name: "form content type", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			r.Headers["content-type"] = "application/x-www-form-urlencoded"
		}), wantStatus: http.StatusBadRequest, wantErr: "unsupported content type"},
		{name: "no content type", req: with(push, func(r *events.LambdaFunctionURLRequest) { delete(r.Headers, "content-type") }),
			wantStatus: http.StatusBadRequest, wantErr: "no content-type"},
		{name: "JSON in Latin-1", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			r.Headers["content-type"] = "application/json; charset=iso-8859-1"
		}),
			wantStatus: http.StatusBadRequest, wantErr: "charset"},
		{name: "malformed JSON", req: with(push, func(r *events.LambdaFunctionURLRequest) { r.Body = r.Body[:100] }),
			wantStatus: http.StatusBadRequest, wantErr: "malformed body"},
		{name: "bad base64", req: with(push, func(r *events.LambdaFunctionURLRequest) { r.Body, r.IsBase64Encoded = "!!!", true }),
			wantStatus: http.StatusBadRequest, wantErr: "base64"},
		{name: "an alarm posted to the nodes stats path", req: with(alarm, func(r *events.LambdaFunctionURLRequest) { r.RawPath = PathNodesStats }),
			wantStatus: http.StatusBadRequest, wantErr: "lists no nodes"},
		{name: "push naming no cluster", req: with(push, func(r *events.LambdaFunctionURLRequest) {
			delete(r.Headers, HeaderCluster)
			r.Body = strings.Replace(r.Body, `"cluster_name":"prod"`, `"cluster_name":"123456789012:prod"`, 1)
		}), wantStatus: http.StatusBadRequest, wantErr: "set x-shardwise-cluster"},
		{name: "push for an unknown cluster", req: with(push, func(r *events.LambdaFunctionURLRequest) { r.Headers[HeaderCluster] = "dev" }),
			wantStatus: http.StatusNotFound, wantErr: `unknown cluster "dev"`},
		{name: "alert about an unknown cluster", req: with(am, func(r *events.LambdaFunctionURLRequest) {
			delete(r.Headers, HeaderCluster)
			r.Body = strings.ReplaceAll(r.Body, `"cluster":"prod"`, `"cluster":"dev"`)
		}), wantStatus: http.StatusNotFound, wantErr: `unknown cluster "dev"`},
		{name: "alert naming no cluster", req: with(am, func(r *events.LambdaFunctionURLRequest) {
			delete(r.Headers, HeaderCluster)
			r.Body = strings.ReplaceAll(r.Body, `"cluster":"prod",`, ``)
		}), wantStatus: http.StatusBadRequest, wantErr: "label"},
		{name: "alarm about an unknown cluster", req: with(alarm, func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.Replace(r.Body, `"Cluster":"prod"`, `"Cluster":"dev"`, 1)
		}), wantStatus: http.StatusNotFound, wantErr: `unknown cluster "dev"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secret := &countingSecret{}
			r := &Receiver{Clusters: []string{"prod", "staging"}, Secret: secret, Replays: memoryReplays(), Clock: func() time.Time { return testNow }}
			switch {
			case tc.noSecret:
				r.Secret = nil
			case tc.secret != nil:
				r.Secret = tc.secret
			}
			switch {
			case tc.noReplays:
				r.Replays = nil
			case tc.replays != nil:
				r.Replays = tc.replays
			}
			got, err := r.Receive(t.Context(), tc.req)
			if tc.wantStatus != 0 {
				status, code := Status(err)
				if err == nil || status != tc.wantStatus {
					t.Fatalf("got %+v, %v (status %d %s), want status %d", got, err, status, code, tc.wantStatus)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			if got.Kind != tc.want.Kind || got.Auth != tc.want.Auth || !slices.Equal(got.Clusters, tc.want.Clusters) ||
				!slices.Equal(got.Nodes, tc.want.Nodes) || got.Detect != tc.want.Detect || got.Ignored != tc.want.Ignored {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if (got.NodesStats != nil) != (tc.want.Kind == KindNodesStats) {
				t.Errorf("node stats carried: got %v, want %v", got.NodesStats != nil, tc.want.Kind == KindNodesStats)
			}
			// The secret is read for HMAC requests only: SigV4 ones never wait on SSM.
			if wantReads := map[Auth]int{AuthSigV4: 0, AuthHMAC: 1}[got.Auth]; secret.reads != wantReads {
				t.Errorf("secret reads: got %d, want %d", secret.reads, wantReads)
			}
		})
	}
}

// memoryReplays is a replay guard over a Memory store whose clock stands at testNow.
func memoryReplays() StoreReplays {
	return StoreReplays{Store: state.NewMemory(func() time.Time { return testNow })}
}

// failingReplays cannot record a signature, as a throttled or unreachable table.
type failingReplays struct{}

func (failingReplays) Claim(context.Context, []byte, time.Time) error {
	return fmt.Errorf("%w: operation error DynamoDB: PutItem, arn:aws:dynamodb:eu-west-1:123456789012:table/shardwise", errReplayCheck)
}

// An HMAC-signed request is carried out once: the same request again, with its signature spelled
// either way, is a replay until its timestamp goes stale. Requests that ask for nothing are not
// recorded.
func TestReceiveRefusesReplays(t *testing.T) {
	push := signed(sampleRequest(t, "webhook-nodes-stats.json"), testNow)
	upper := make(map[string]string, len(push.Headers))
	for k, v := range push.Headers {
		upper[k] = v
	}
	upper[HeaderSignature] = "sha256=" + strings.ToUpper(strings.TrimPrefix(upper[HeaderSignature], "sha256="))
	pushUpper := push
	pushUpper.Headers = upper
	resolved := sampleRequest(t, "webhook-alertmanager.json")
	resolved.Body = strings.ReplaceAll(resolved.Body, `"firing"`, `"resolved"`)
	resolved = signed(resolved, testNow)
	tests := []struct {
		name       string
		first      events.LambdaFunctionURLRequest
		again      events.LambdaFunctionURLRequest
		after      time.Duration
		wantStatus int // of the second request; 0 accepts it
		wantErr    string
	}{
		{name: "same request again", first: push, again: push, wantStatus: http.StatusConflict, wantErr: "already used"},
		{name: "signature in upper-case hex", first: push, again: pushUpper, wantStatus: http.StatusConflict, wantErr: "already used"},
		{name: "at the end of the window", first: push, again: push, after: MaxClockSkew, wantStatus: http.StatusConflict, wantErr: "already used"},
		{name: "after the window the timestamp is stale", first: push, again: push, after: MaxClockSkew + time.Second, wantStatus: http.StatusUnauthorized, wantErr: "a replay or a wrong clock"},
		{name: "a request that asks for nothing is not recorded", first: resolved, again: resolved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := testNow
			clock := func() time.Time { return now }
			r := &Receiver{Clusters: []string{"prod"}, Secret: StaticSecret(testSecret), Replays: StoreReplays{Store: state.NewMemory(clock)}, Clock: clock}
			if _, err := r.Receive(t.Context(), tc.first); err != nil {
				t.Fatalf("first request: %v", err)
			}
			now = now.Add(tc.after)
			_, err := r.Receive(t.Context(), tc.again)
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("second request: got %v, want accepted", err)
				}
				return
			}
			if status, _ := Status(err); status != tc.wantStatus || !strings.Contains(fmt.Sprint(err), tc.wantErr) {
				t.Errorf("second request: got %v (status %d), want status %d saying %q", err, status, tc.wantStatus, tc.wantErr)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{name: "wrapped sentinel", err: errors.Join(errors.New("context"), errTooLarge), wantStatus: 413, wantCode: "body_too_large"},
		{name: "unauthenticated", err: errUnauthenticated, wantStatus: 401, wantCode: "unauthenticated"},
		{name: "anything else", err: errors.New("boom"), wantStatus: 500, wantCode: "internal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if s, c := Status(tc.err); s != tc.wantStatus || c != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", s, c, tc.wantStatus, tc.wantCode)
			}
		})
	}
}

func TestErrorResponse(t *testing.T) {
	ssm := fmt.Errorf("%w: ssm parameter /shardwise/secret: operation error SSM: GetParameter, https response error StatusCode: 400, "+
		"AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/ingest is not authorized", ErrSecretUnavailable)
	tests := []struct {
		name   string
		status int
		code   string
		err    error
		want   string
	}{
		{name: "a refusal says what was wrong", status: http.StatusMethodNotAllowed, code: "method_not_allowed", err: errors.New("method not allowed: GET"),
			want: `{"status":405,"error":"method_not_allowed","message":"method not allowed: GET","request_id":"req-1"}`},
		{name: "a failure says only where to look", status: http.StatusServiceUnavailable, code: "secret_unavailable", err: ssm,
			want: `{"status":503,"error":"secret_unavailable","message":"service unavailable; the log of request req-1 says why","request_id":"req-1"}`},
		{name: "an internal error likewise", status: http.StatusInternalServerError, code: "internal", err: errors.New("dial tcp 10.0.0.7:443: i/o timeout"),
			want: `{"status":500,"error":"internal","message":"internal server error; the log of request req-1 says why","request_id":"req-1"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ErrorResponse(tc.status, tc.code, tc.err, "req-1")
			if r.StatusCode != tc.status || r.Headers["content-type"] != "application/json" {
				t.Errorf("got %d with headers %v, want %d with JSON", r.StatusCode, r.Headers, tc.status)
			}
			if (r.Headers["allow"] == "POST") != (tc.status == http.StatusMethodNotAllowed) {
				t.Errorf("allow header: got %q", r.Headers["allow"])
			}
			if r.Body != tc.want {
				t.Errorf("body: got %s, want %s", r.Body, tc.want)
			}
		})
	}
}
