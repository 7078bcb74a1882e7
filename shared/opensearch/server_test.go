package opensearch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request the fake cluster received.
type recorded struct {
	Method string
	Path   string
	Query  map[string][]string
	Header http.Header
	Body   string
	// RequestLine is "METHOD /path?query HTTP/1.1", what OpenSearch's line-length limit applies to.
	RequestLine string
}

// fakeCluster serves testdata fixtures the way OpenSearch would: it applies the request's
// filter_path to the full response body, so a decoder that needs a field the filter drops fails.
type fakeCluster struct {
	t      *testing.T
	routes map[string]route // "GET /_nodes" → route

	mu       sync.Mutex
	requests []recorded
}

type route struct {
	status  int
	fixture string // file under testdata
}

func newFakeCluster(t *testing.T, routes map[string]route) (*fakeCluster, *httptest.Server) {
	t.Helper()
	fc := &fakeCluster{t: t, routes: routes}
	srv := httptest.NewServer(fc)
	t.Cleanup(srv.Close)
	return fc, srv
}

func (fc *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fc.mu.Lock()
	fc.requests = append(fc.requests, recorded{
		Method:      r.Method,
		Path:        r.URL.Path,
		Query:       r.URL.Query(),
		Header:      r.Header.Clone(),
		Body:        string(body),
		RequestLine: r.Method + " " + r.URL.RequestURI() + " HTTP/1.1",
	})
	fc.mu.Unlock()

	rt, ok := fc.routes[r.Method+" "+r.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"type":"fake_cluster","reason":"no route ` + r.Method + " " + r.URL.Path + `"},"status":404}`))
		return
	}
	raw, err := os.ReadFile(filepath.Join("testdata", rt.fixture))
	if err != nil {
		fc.t.Errorf("read fixture %s: %v", rt.fixture, err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	out := raw
	if fp := r.URL.Query().Get("filter_path"); fp != "" {
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			fc.t.Errorf("fixture %s: %v", rt.fixture, err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		filtered, ok := filterPath(doc, compileFilterPath(fp))
		if !ok {
			filtered = map[string]any{}
		}
		if out, err = json.Marshal(filtered); err != nil {
			fc.t.Errorf("encode filtered %s: %v", rt.fixture, err)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	status := rt.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func (fc *fakeCluster) received() []recorded {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]recorded(nil), fc.requests...)
}

// compileFilterPath splits filter_path as OpenSearch's FilterPath does: comma-separated
// filters, each a dot-separated list of segments.
func compileFilterPath(fp string) [][]string {
	var out [][]string
	for f := range strings.SplitSeq(fp, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, strings.Split(f, "."))
		}
	}
	return out
}

// filterPath keeps what the filters select, as OpenSearch's FilterPathBasedFilter does: each
// segment matches one field name (with * globs), a filter that ran out of segments keeps the whole
// value, arrays are transparent, and objects or arrays left empty are dropped.
func filterPath(v any, filters [][]string) (any, bool) {
	for _, f := range filters {
		if len(f) == 0 {
			return v, true
		}
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any)
		for k, child := range t {
			var next [][]string
			for _, f := range filters {
				if globMatch(f[0], k) {
					next = append(next, f[1:])
				}
			}
			if len(next) == 0 {
				continue
			}
			if kept, ok := filterPath(child, next); ok {
				out[k] = kept
			}
		}
		return out, len(out) > 0
	case []any:
		var out []any
		for _, e := range t {
			if kept, ok := filterPath(e, filters); ok {
				out = append(out, kept)
			}
		}
		return out, len(out) > 0
	default:
		// A scalar with segments still to match is not selected.
		return nil, false
	}
}

// globMatch matches s against a pattern whose only wildcard is *, like OpenSearch's Glob.
func globMatch(pattern, s string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == s
	}
	if !strings.HasPrefix(s, pattern[:star]) {
		return false
	}
	rest := pattern[star+1:]
	s = s[star:]
	if rest == "" {
		return true
	}
	for i := 0; i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}

// testConfig is a Config for a plain-HTTP test server with fast retries.
func testConfig(url string) Config {
	return Config{URLs: []string{url}, Auth: AuthNone, Timeout: 5 * time.Second, RetryBackoff: time.Millisecond}
}

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func TestFilterPathHelper(t *testing.T) {
	doc := map[string]any{
		"a": map[string]any{"b": 1.0, "c": 2.0},
		"list": []any{
			map[string]any{"x": 1.0, "y": 2.0},
			map[string]any{"y": 3.0},
		},
		"defaults": map[string]any{"cluster.name": "n", "cluster.routing.enable": "all", "node.name": "x"},
	}
	tests := []struct {
		name   string
		filter string
		want   string
	}{
		{"leaf", "a.b", `{"a":{"b":1}}`},
		{"wildcard segment", "a.*", `{"a":{"b":1,"c":2}}`},
		{"arrays are transparent", "list.x", `{"list":[{"x":1}]}`},
		{"glob segment matches dotted keys", "defaults.cluster*", `{"defaults":{"cluster.name":"n","cluster.routing.enable":"all"}}`},
		{"dotted filter does not walk dotted keys", "defaults.cluster.name", `{}`},
		{"several filters", "a.c,list.y", `{"a":{"c":2},"list":[{"y":2},{"y":3}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := filterPath(doc, compileFilterPath(tt.filter))
			if !ok {
				got = map[string]any{}
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("filter %q: got %s, want %s", tt.filter, b, tt.want)
			}
		})
	}
}
