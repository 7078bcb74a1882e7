package opensearch

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNoBackgroundNodeStatsPolling: a client sends only the calls shardwise makes. opensearch-go
// polls GET /_nodes/_local/stats in the background unless told not to; such a poll adds load to a
// stressed cluster and can land after the client is closed.
func TestNoBackgroundNodeStatsPolling(t *testing.T) {
	// This test checks the default, with the variable unset. t.Setenv puts back the operator's value,
	// or its absence, afterwards: the client under test sets it when it is unset.
	t.Setenv(nodeStatsIntervalEnv, "")
	_ = os.Unsetenv(nodeStatsIntervalEnv)
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"cluster_name":"c","status":"green","number_of_nodes":1}`))
	}))
	defer srv.Close()
	c, err := New(t.Context(), Config{URLs: []string{srv.URL}, Auth: AuthNone})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	// opensearch-go's shortest polling interval is 5 s.
	time.Sleep(6 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if strings.HasPrefix(p, "/_nodes/_local") {
			t.Fatalf("the client polled %s in the background; requests: %v", p, paths)
		}
	}
}
