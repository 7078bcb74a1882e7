package opensearch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// Calls that change the cluster are sent once: a 503 or a connection dropped before the answer
// does not say whether the request landed. Reads, and a reroute's dry run, are retried as
// configured.
func TestWritesAreSentOnce(t *testing.T) {
	move := []RerouteCommand{Move("logs-a", 1, "node-0", "node-2")}
	tests := []struct {
		name         string
		call         func(context.Context, *Client) error
		drop         bool // the server reads the request and closes the connection unanswered
		wantAttempts int32
	}{
		{name: "reroute", call: func(ctx context.Context, c *Client) error {
			_, err := c.Reroute(ctx, move, RerouteOptions{Explain: true})
			return err
		}, wantAttempts: 1},
		{name: "reroute whose answer is lost", drop: true, call: func(ctx context.Context, c *Client) error {
			_, err := c.Reroute(ctx, move, RerouteOptions{})
			return err
		}, wantAttempts: 1},
		{name: "put index settings", call: func(ctx context.Context, c *Client) error {
			return c.PutIndexSettings(ctx, "logs-a", map[string]any{"index.number_of_replicas": 2})
		}, wantAttempts: 1},
		{name: "put index settings whose answer is lost", drop: true, call: func(ctx context.Context, c *Client) error {
			return c.PutIndexSettings(ctx, "logs-a", map[string]any{"index.number_of_replicas": 2})
		}, wantAttempts: 1},
		{name: "reroute dry run", call: func(ctx context.Context, c *Client) error {
			_, err := c.Reroute(ctx, move, RerouteOptions{DryRun: true})
			return err
		}, wantAttempts: 1 + DefaultMaxRetries},
		{name: "a read", call: func(ctx context.Context, c *Client) error {
			_, err := c.Health(ctx)
			return err
		}, wantAttempts: 1 + DefaultMaxRetries},
		{name: "a read whose answer is lost", drop: true, call: func(ctx context.Context, c *Client) error {
			_, err := c.Health(ctx)
			return err
		}, wantAttempts: 1 + DefaultMaxRetries},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				if tc.drop {
					_, _ = io.Copy(io.Discard, r.Body)
					conn, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Errorf("hijack: %v", err)
						return
					}
					_ = conn.Close()
					return
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"error":{"type":"test_exception","reason":"busy"},"status":503}`)
			}))
			t.Cleanup(srv.Close)
			cfg := testConfig(srv.URL)
			if err := tc.call(t.Context(), newTestClient(t, cfg)); err == nil {
				t.Fatal("got nil error, want the failure")
			}
			if got := attempts.Load(); got != tc.wantAttempts {
				t.Errorf("attempts: got %d, want %d", got, tc.wantAttempts)
			}
		})
	}
}

// A response over MaxResponseBytes is refused with ErrResponseTooLarge, naming the call, with or
// without a Content-Length.
func TestResponseSizeCap(t *testing.T) {
	const limit = 64 << 10
	padded := func(n int) []byte {
		body := []byte(`{"_shards":{"total":1,"successful":1},"pad":"`)
		body = append(body, bytes.Repeat([]byte("p"), n-len(body)-2)...)
		return append(body, `"}`...)
	}
	tests := []struct {
		name    string
		body    []byte
		chunked bool
		wantCap bool
	}{
		{name: "at the cap", body: padded(limit)},
		{name: "at the cap, chunked", body: padded(limit), chunked: true},
		{name: "over the cap", body: padded(limit + 1), wantCap: true},
		{name: "over the cap, chunked", body: padded(limit + 1), chunked: true, wantCap: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				}
				_, _ = w.Write(tc.body[:len(tc.body)/2])
				if tc.chunked {
					w.(http.Flusher).Flush()
				}
				_, _ = w.Write(tc.body[len(tc.body)/2:])
			}))
			t.Cleanup(srv.Close)
			cfg := testConfig(srv.URL)
			cfg.MaxResponseBytes = limit
			_, err := newTestClient(t, cfg).ShardStats(t.Context())
			if !tc.wantCap {
				if err != nil {
					t.Fatalf("ShardStats: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrResponseTooLarge) || !strings.HasPrefix(err.Error(), "shard stats: ") {
				t.Errorf("got %v, want ErrResponseTooLarge naming shard stats", err)
			}
		})
	}
}

// A client allowed to send credentials insecurely says so in the log when it is built.
func TestInsecureCredentialsWarn(t *testing.T) {
	var logged bytes.Buffer
	cfg := Config{URLs: []string{"http://search.internal:9200"}, Auth: AuthBasic, Username: "u", Password: "pw-Secret-9",
		AllowInsecureCredentials: true, Log: slog.New(slog.NewTextHandler(&logged, nil))}
	newTestClient(t, cfg)
	if out := logged.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "clear text") || strings.Contains(out, "pw-Secret-9") {
		t.Errorf("log: got %q, want a warning about clear text without the password", out)
	}
}
