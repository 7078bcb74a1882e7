package opensearch

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestWLMProbe(t *testing.T) {
	tests := []struct {
		status  int
		body    string
		found   bool
		wantErr string
	}{
		{200, `{"query_groups":[]}`, true, ""},
		{404, `{"error":{"type":"resource_not_found_exception","reason":"no"},"status":404}`, false, ""},
		{400, `{"error":"no handler found for uri [/_wlm/workload_group] and method [GET]"}`, false, ""},
		{400, `{"error":{"type":"illegal_argument_exception","reason":"bad"},"status":400}`, false, "illegal_argument_exception"},
		{403, `{"Message":"not allowed"}`, false, "403"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.status, tc.found), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.MaxRetries = -1
			c := newTestClient(t, cfg)
			found, err := c.WLMProbe(t.Context(), "/_wlm/workload_group")
			if found != tc.found || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, %v; want %v, error %q", found, err, tc.found, tc.wantErr)
			}
		})
	}
}

func TestWLMPaths(t *testing.T) {
	for _, p := range []string{"/_wlm/query_group", "/_wlm/workload_group/shardwise-a", "/_rules/workload_group/abc", "/_cluster/settings"} {
		if err := checkWLMPath(p); err != nil {
			t.Errorf("%s refused: %v", p, err)
		}
	}
	for _, p := range []string{"/_wlm/query_group/a/b", "/_wlm/query_group/_all", "/_wlm/query_group/a*", "/_cluster/settings/x", "/_cluster/reroute", "/_wlm/stats", "/_wlm/query_group/"} {
		if err := checkWLMPath(p); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	c := &Client{}
	if _, err := c.WLMSend(t.Context(), "DELETE", "/logs", nil); err == nil || !strings.Contains(err.Error(), "not a workload-management path") {
		t.Errorf("WLMSend to /logs: %v", err)
	}
}

// WLMRules follows search_after pages and stops when the cluster repeats one.
func TestWLMRulesPages(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		after := r.URL.Query().Get("search_after")
		mu.Lock()
		seen = append(seen, after)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch after {
		case "":
			_, _ = io.WriteString(w, `{"rules":[{"id":"a","description":"d","index_pattern":["x"],"workload_group":"g","updated_at":"t"}],"search_after":["a"]}`)
		case "a":
			_, _ = io.WriteString(w, `{"rules":[{"id":"b","description":"d","principal":{"role":["r"]},"workload_group":"g","updated_at":"t"}],"search_after":["b"]}`)
		default:
			_, _ = io.WriteString(w, `{"rules":[],"search_after":["b"]}`)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, testConfig(srv.URL))
	rules, err := c.WLMRules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[1].Principal == nil || rules[1].Principal.Role[0] != "r" {
		t.Errorf("rules got %+v", rules)
	}
	if strings.Join(seen, ",") != ",a,b" {
		t.Errorf("pages asked %q, want \",a,b\"", seen)
	}
	if _, err := c.WLMGroups(t.Context(), "workload_group"); err == nil || !strings.Contains(err.Error(), `no "workload_groups" key`) {
		t.Errorf("groups from a rules answer: %v", err)
	}
}
