package opensearch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseAPIError(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		wantType   string
		wantReason string
		wantMsg    string
	}{
		{
			name:   "OpenSearch error object",
			status: 403,
			body: `{"error":{"root_cause":[{"type":"security_exception","reason":"no permissions for [cluster:monitor/state] and User [name=shardwise, backend_roles=[], requestedTenant=null]"}],` +
				`"type":"security_exception","reason":"no permissions for [cluster:monitor/state] and User [name=shardwise, backend_roles=[], requestedTenant=null]"},"status":403}`,
			wantType:   "security_exception",
			wantReason: "no permissions for [cluster:monitor/state] and User [name=shardwise, backend_roles=[], requestedTenant=null]",
			wantMsg:    "opensearch returned 403 Forbidden: security_exception: no permissions for [cluster:monitor/state]",
		},
		{
			name:       "reason only in root_cause",
			status:     429,
			body:       `{"error":{"root_cause":[{"type":"rejected_execution_exception","reason":"rejected execution of coordinating operation"}],"type":"rejected_execution_exception"},"status":429}`,
			wantType:   "rejected_execution_exception",
			wantReason: "rejected execution of coordinating operation",
			wantMsg:    "opensearch returned 429 Too Many Requests: rejected_execution_exception: rejected execution",
		},
		{
			name:       "OpenSearch string error",
			status:     405,
			body:       `{"error":"Incorrect HTTP method for uri [/_cluster/reroute] and method [GET], allowed: [POST]","status":405}`,
			wantReason: "Incorrect HTTP method for uri [/_cluster/reroute] and method [GET], allowed: [POST]",
			wantMsg:    "opensearch returned 405 Method Not Allowed: Incorrect HTTP method",
		},
		{
			name:       "Amazon Message",
			status:     403,
			body:       `{"Message":"User: arn:aws:sts::123456789012:assumed-role/shardwise-ingest/fn is not authorized to perform: es:ESHttpGet with an explicit deny in a resource-based policy"}`,
			wantReason: "User: arn:aws:sts::123456789012:assumed-role/shardwise-ingest/fn is not authorized to perform: es:ESHttpGet with an explicit deny in a resource-based policy",
			wantMsg:    "opensearch returned 403 Forbidden: User: arn:aws:sts::123456789012",
		},
		{
			name:       "Amazon lower-case message",
			status:     403,
			body:       `{"message":"The security token included in the request is invalid."}`,
			wantReason: "The security token included in the request is invalid.",
			wantMsg:    "opensearch returned 403 Forbidden: The security token included in the request is invalid.",
		},
		{
			name:    "non-JSON body",
			status:  401,
			body:    "Unauthorized",
			wantMsg: "opensearch returned 401 Unauthorized: Unauthorized",
		},
		{
			name:    "HTML from a proxy",
			status:  502,
			body:    "<html><body><h1>502 Bad Gateway</h1></body></html>",
			wantMsg: "opensearch returned 502 Bad Gateway: <html>",
		},
		{
			name:    "empty body",
			status:  503,
			body:    "",
			wantMsg: "opensearch returned 503 Service Unavailable",
		},
		{
			name:    "JSON without an error",
			status:  500,
			body:    `{"acknowledged":false}`,
			wantMsg: `opensearch returned 500 Internal Server Error: {"acknowledged":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := parseAPIError(tt.status, []byte(tt.body))
			if e.Status != tt.status || e.Type != tt.wantType || e.Reason != tt.wantReason || e.Body != tt.body {
				t.Errorf("got %+v, want status %d type %q reason %q body %q", *e, tt.status, tt.wantType, tt.wantReason, tt.body)
			}
			if !strings.HasPrefix(e.Error(), tt.wantMsg) {
				t.Errorf("Error(): got %q, want prefix %q", e.Error(), tt.wantMsg)
			}
		})
	}
}

func TestAPIErrorBodyIsBounded(t *testing.T) {
	body := strings.Repeat("x", 3*maxErrorBody)
	if got := len(parseAPIError(500, []byte(body)).Body); got != maxErrorBody {
		t.Errorf("body kept: got %d bytes, want %d", got, maxErrorBody)
	}
}

// timeoutError is a net.Error that timed out, as net/http returns.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestErrorHelpers(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("nodes stats: %w", err) }
	tests := []struct {
		name                           string
		err                            error
		forbidden, notFound, retryable bool
	}{
		{"nil", nil, false, false, false},
		{"401", wrap(&APIError{Status: 401}), true, false, false},
		{"403", wrap(&APIError{Status: 403, Type: "security_exception"}), true, false, false},
		{"404", wrap(&APIError{Status: 404, Type: "index_not_found_exception"}), false, true, false},
		{"task not found inside a 200", wrap(&APIError{Status: 200, Type: "resource_not_found_exception"}), false, true, false},
		{"400", wrap(&APIError{Status: 400, Type: "illegal_argument_exception"}), false, false, false},
		{"429", wrap(&APIError{Status: 429}), false, false, true},
		{"502", wrap(&APIError{Status: 502}), false, false, true},
		{"503", wrap(&APIError{Status: 503}), false, false, true},
		{"504", wrap(&APIError{Status: 504}), false, false, true},
		{"500", wrap(&APIError{Status: 500}), false, false, false},
		{"network timeout", wrap(timeoutError{}), false, false, true},
		{"deadline exceeded", wrap(context.DeadlineExceeded), false, false, true},
		{"connection dropped", wrap(io.ErrUnexpectedEOF), false, false, true},
		{"caller canceled", wrap(context.Canceled), false, false, false},
		{"plain error", wrap(errors.New("decode: bad json")), false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsForbidden(tt.err); got != tt.forbidden {
				t.Errorf("IsForbidden: got %t, want %t", got, tt.forbidden)
			}
			if got := IsNotFound(tt.err); got != tt.notFound {
				t.Errorf("IsNotFound: got %t, want %t", got, tt.notFound)
			}
			if got := IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable: got %t, want %t", got, tt.retryable)
			}
		})
	}
}

// TestServerErrorsAreTyped checks that a refused call comes back as an *APIError named after the
// call, whichever endpoint refused it.
func TestServerErrorsAreTyped(t *testing.T) {
	forbidden := `{"error":{"root_cause":[{"type":"security_exception","reason":"no permissions for [cluster:monitor/nodes/stats]"}],"type":"security_exception","reason":"no permissions for [cluster:monitor/nodes/stats]"},"status":403}`
	srv := newStaticServer(t, http.StatusForbidden, forbidden)
	c := newTestClient(t, testConfig(srv))
	tests := []struct {
		name     string
		call     func(context.Context) error
		wantName string
	}{
		{"nodes stats", func(ctx context.Context) error { _, err := c.NodesStats(ctx); return err }, "nodes stats: "},
		{"shard stats", func(ctx context.Context) error { _, err := c.ShardStats(ctx); return err }, "shard stats: "},
		{"cluster state", func(ctx context.Context) error { _, err := c.ClusterState(ctx); return err }, "cluster state: "},
		{"reroute", func(ctx context.Context) error {
			_, err := c.Reroute(ctx, []RerouteCommand{Move("a", 0, "x", "y")}, RerouteOptions{})
			return err
		}, "reroute: "},
		{"cancel task", func(ctx context.Context) error { return c.CancelTask(ctx, "n:1") }, "cancel task n:1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(context.Background())
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Type != "security_exception" || !IsForbidden(err) {
				t.Fatalf("got %v, want a 403 security_exception *APIError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantName) {
				t.Errorf("error %q does not start with %q", err, tt.wantName)
			}
		})
	}
}

func newStaticServer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
