package opensearch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

const healthBody = `{"cluster_name":"c","status":"green","number_of_nodes":1,"number_of_data_nodes":1}`

// statusSequence answers GET /_cluster/health with statuses in order, then 200; it counts attempts.
type statusSequence struct {
	statuses []int
	attempts atomic.Int32
}

func (s *statusSequence) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/_cluster/health" {
		http.NotFound(w, r)
		return
	}
	n := int(s.attempts.Add(1))
	if n <= len(s.statuses) {
		w.WriteHeader(s.statuses[n-1])
		_, _ = fmt.Fprintf(w, `{"error":{"type":"test_exception","reason":"attempt %d"},"status":%d}`, n, s.statuses[n-1])
		return
	}
	_, _ = io.WriteString(w, healthBody)
}

func TestRetries(t *testing.T) {
	always503 := []int{503, 503, 503, 503, 503, 503, 503, 503}
	tests := []struct {
		name         string
		statuses     []int
		maxRetries   int
		wantAttempts int32
		wantStatus   int // 0: success
		wantRetry    bool
	}{
		{"429 then success", []int{429}, 0, 2, 0, false},
		{"503 twice then success", []int{503, 503}, 0, 3, 0, false},
		{"502 and 504 then success", []int{502, 504}, 0, 3, 0, false},
		{"no retry on 400", []int{400}, 0, 1, 400, false},
		{"no retry on 403", []int{403}, 0, 1, 403, false},
		{"gives up after the default 3 retries", always503, 0, 4, 503, true},
		{"gives up after MaxRetries", always503, 1, 2, 503, true},
		{"negative MaxRetries turns retries off", []int{503}, -1, 1, 503, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := &statusSequence{statuses: tt.statuses}
			srv := httptest.NewServer(seq)
			t.Cleanup(srv.Close)
			cfg := testConfig(srv.URL)
			cfg.MaxRetries = tt.maxRetries
			c := newTestClient(t, cfg)

			h, err := c.Health(context.Background())
			if got := seq.attempts.Load(); got != tt.wantAttempts {
				t.Errorf("attempts: got %d, want %d", got, tt.wantAttempts)
			}
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				if h.Status != "green" {
					t.Errorf("status: got %q, want green", h.Status)
				}
				return
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Status != tt.wantStatus {
				t.Fatalf("got %v, want an *APIError with status %d", err, tt.wantStatus)
			}
			if got := IsRetryable(err); got != tt.wantRetry {
				t.Errorf("IsRetryable: got %t, want %t", got, tt.wantRetry)
			}
			if !strings.HasPrefix(err.Error(), "cluster health: ") {
				t.Errorf("error %q does not name the call", err)
			}
		})
	}
}

// TestRetryOnTimeout: an attempt that outlives the per-attempt timeout is abandoned and retried.
// The timeout is a second, not less: under the race detector on a loaded 2-core machine, even the
// answering attempt took over 100 ms, timed out too, and made a third attempt.
func TestRetryOnTimeout(t *testing.T) {
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			<-r.Context().Done() // hang until the client's per-attempt timeout gives up
			return
		}
		_, _ = io.WriteString(w, healthBody)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Timeout = time.Second
	c := newTestClient(t, cfg)

	if _, err := c.Health(context.Background()); err != nil {
		t.Fatalf("got %v, want success on the retry", err)
	}
	if got := attempts.Load(); got < 2 {
		t.Errorf("attempts: got %d, want the hung one retried", got)
	}
}

// lastRequest keeps the headers and body of the last request a test server saw. The server's
// handler runs on a goroutine of its own, and a client may send again (a retry, a poll of its
// own) while the test reads, so both sides go through the lock.
type lastRequest struct {
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func (l *lastRequest) record(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.header, l.body = r.Header.Clone(), body
}

func (l *lastRequest) get() (http.Header, []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.header.Clone(), slices.Clone(l.body)
}

func TestAuthHeaders(t *testing.T) {
	var last lastRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last.record(r)
		_, _ = io.WriteString(w, healthBody)
	}))
	t.Cleanup(srv.Close)

	tests := []struct {
		name     string
		cfg      func(Config) Config
		wantAuth string
	}{
		{"none", func(c Config) Config { return c }, ""},
		{"basic", func(c Config) Config {
			c.Auth, c.Username, c.Password = AuthBasic, "shardwise", "s3cret"
			c.AllowInsecureCredentials = true // the test server speaks plain HTTP
			return c
		}, "Basic c2hhcmR3aXNlOnMzY3JldA=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, tt.cfg(testConfig(srv.URL)))
			if _, err := c.Health(context.Background()); err != nil {
				t.Fatal(err)
			}
			got, _ := last.get()
			if a := got.Get("Authorization"); a != tt.wantAuth {
				t.Errorf("Authorization: got %q, want %q", a, tt.wantAuth)
			}
		})
	}
}

func TestSigV4(t *testing.T) {
	staticAWS := aws.Config{
		Region:      "eu-central-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
	}
	tests := []struct {
		name      string
		service   string
		region    string
		wantScope string
		withBody  bool
	}{
		{"es is the default service", "", "", "/eu-central-1/es/aws4_request", false},
		{"Region overrides the AWS config", ServiceES, "us-west-2", "/us-west-2/es/aws4_request", false},
		{"body is hashed into the signature", ServiceES, "", "/eu-central-1/es/aws4_request", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var last lastRequest
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				last.record(r)
				_, _ = io.WriteString(w, `{"acknowledged":true}`)
			}))
			t.Cleanup(srv.Close)
			cfg := testConfig(srv.URL)
			cfg.Auth, cfg.Service, cfg.Region, cfg.AWS = AuthSigV4, tt.service, tt.region, &staticAWS
			c := newTestClient(t, cfg)

			var err error
			if tt.withBody {
				err = c.PutIndexSettings(context.Background(), "logs-a", map[string]any{"index.number_of_replicas": 2})
			} else {
				_, err = c.Health(context.Background())
			}
			if err != nil {
				t.Fatal(err)
			}
			header, body := last.get()
			auth := header.Get("Authorization")
			if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, tt.wantScope) {
				t.Errorf("Authorization %q: want AWS4-HMAC-SHA256 with scope %s", auth, tt.wantScope)
			}
			if !strings.Contains(auth, "Signature=") || header.Get("X-Amz-Date") == "" {
				t.Errorf("missing signature or X-Amz-Date: %v", header)
			}
			sum := sha256.Sum256(body)
			if got, want := header.Get("X-Amz-Content-Sha256"), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("X-Amz-Content-Sha256: got %s, want %s", got, want)
			}
		})
	}
}

func TestSigV4NeedsRegion(t *testing.T) {
	cfg := Config{URLs: []string{"https://search.example.com"}, Auth: AuthSigV4,
		AWS: &aws.Config{Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}}
	_, err := New(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "Region") {
		t.Errorf("got %v, want an error naming Region", err)
	}
}

func TestTLSVerification(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, healthBody)
	}))
	// The refused handshake is the expected outcome; keep the server from logging it.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		cfg     func(Config) Config
		wantErr bool
	}{
		{"self-signed refused by default", func(c Config) Config { return c }, true},
		{"accepted with InsecureSkipVerify", func(c Config) Config { c.InsecureSkipVerify = true; return c }, false},
		{"accepted with its CA in CACertFile", func(c Config) Config { c.CACertFile = caFile; return c }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg(testConfig(srv.URL))
			cfg.MaxRetries = -1
			c := newTestClient(t, cfg)
			_, err := c.Health(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %t", err, tt.wantErr)
			}
			if tt.wantErr && !strings.Contains(err.Error(), "certificate") {
				t.Errorf("got %v, want a certificate error", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{URLs: []string{"https://search.example.com:443"}}
	tests := []struct {
		name      string
		mutate    func(*Config)
		wantField string // "" means valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"basic", func(c *Config) { c.Auth, c.Username, c.Password = AuthBasic, "u", "p" }, ""},
		{"sigv4 es", func(c *Config) { c.Auth, c.Service = AuthSigV4, ServiceES }, ""},
		{"sigv4 aoss: serverless is refused", func(c *Config) { c.Auth, c.Service = AuthSigV4, "aoss" }, "Service"},
		{"no URLs", func(c *Config) { c.URLs = nil }, "URLs"},
		{"bad scheme", func(c *Config) { c.URLs = []string{"ftp://x"} }, "URLs[0]"},
		{"no host", func(c *Config) { c.URLs = []string{"http://"} }, "URLs[0]"},
		{"credentials in URL", func(c *Config) { c.URLs = []string{"https://u:p@x"} }, "URLs[0]"},
		{"unknown auth", func(c *Config) { c.Auth = "oauth" }, "Auth"},
		{"basic without username", func(c *Config) { c.Auth, c.Password = AuthBasic, "pw-Secret-9" }, "Username"},
		{"basic without password", func(c *Config) { c.Auth, c.Username = AuthBasic, "u" }, "Password"},
		{"password without basic", func(c *Config) { c.Password = "pw-Secret-9" }, "Username/Password"},
		{"unknown service", func(c *Config) { c.Auth, c.Service = AuthSigV4, "s3" }, "Service"},
		{"insecure and CA file", func(c *Config) { c.InsecureSkipVerify, c.CACertFile = true, "/ca.pem" }, "CACertFile"},
		{"basic over http", func(c *Config) {
			c.URLs, c.Auth, c.Username, c.Password = []string{"https://a", "http://b:9200"}, AuthBasic, "u", "pw-Secret-9"
		}, "AllowInsecureCredentials"},
		{"basic over http, allowed", func(c *Config) {
			c.URLs, c.Auth, c.Username, c.Password, c.AllowInsecureCredentials = []string{"http://b:9200"}, AuthBasic, "u", "pw-Secret-9", true
		}, ""},
		{"none over http", func(c *Config) { c.URLs = []string{"http://b:9200"} }, ""},
		{"sigv4 over http", func(c *Config) { c.URLs, c.Auth = []string{"http://b:9200"}, AuthSigV4 }, ""},
		{"insecure TLS with basic", func(c *Config) {
			c.InsecureSkipVerify, c.Auth, c.Username, c.Password = true, AuthBasic, "u", "pw-Secret-9"
		}, "AllowInsecureCredentials"},
		{"insecure TLS with sigv4", func(c *Config) { c.InsecureSkipVerify, c.Auth = true, AuthSigV4 }, "AllowInsecureCredentials"},
		{"insecure TLS with sigv4, allowed", func(c *Config) { c.InsecureSkipVerify, c.Auth, c.AllowInsecureCredentials = true, AuthSigV4, true }, ""},
		{"insecure TLS without credentials", func(c *Config) { c.InsecureSkipVerify = true }, ""},
		{"negative response cap", func(c *Config) { c.MaxResponseBytes = -1 }, "MaxResponseBytes"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"negative backoff", func(c *Config) { c.RetryBackoff = -time.Second }, "RetryBackoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantField+":") {
				t.Errorf("got %v, want an error naming %s", err, tt.wantField)
			}
			if err != nil && strings.Contains(err.Error(), cfg.Password) && cfg.Password != "" {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestConfigNeverPrintsPassword(t *testing.T) {
	cfg := Config{URLs: []string{"https://x"}, Auth: AuthBasic, Username: "u", Password: "hunter2-secret"}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg)
	outputs := map[string]string{
		"%v":     fmt.Sprintf("%v", cfg),
		"%+v":    fmt.Sprintf("%+v", cfg),
		"%#v":    fmt.Sprintf("%#v", cfg),
		"String": cfg.String(),
		"slog":   logged.String(),
	}
	for verb, out := range outputs {
		if strings.Contains(out, "hunter2-secret") {
			t.Errorf("%s prints the password: %s", verb, out)
		}
		if !strings.Contains(out, "u") {
			t.Errorf("%s lost the username: %s", verb, out)
		}
	}
}

func TestBackoff(t *testing.T) {
	backoff := exponentialBackoff(200 * time.Millisecond)
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{2, 200 * time.Millisecond, 400 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{40, maxRetryBackoff / 2, maxRetryBackoff},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("attempt %d", tt.attempt), func(t *testing.T) {
			for range 100 {
				if d := backoff(tt.attempt); d < tt.min || d > tt.max {
					t.Fatalf("got %s, want within [%s, %s]", d, tt.min, tt.max)
				}
			}
		})
	}
}
