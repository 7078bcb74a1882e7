package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

// sync against the simulator served over HTTP with the workload-management plugin: dry-run by
// default (drift and the calls it would make, none made), then --dry-run=false creates the groups,
// then nothing is left to do.
func TestSandboxSyncAgainstServedSimulator(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(`{"name":"wlm","seed":1,"tick_seconds":30,"duration_seconds":600,
	  "cluster":{"builtin_balancer":false,"opensearch_version":"3.1.0","plugins":["workload-management"]},
	  "nodes":[{"name":"n0"},{"name":"n1"}],
	  "indices":[{"name":"logs","primaries":1,"replicas":1,"shard_bytes":1048576}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Step()
	}
	var mu sync.Mutex
	var writes []string
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			mu.Lock()
			writes = append(writes, r.Method+" "+r.URL.Path)
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defs := writeFile(t, "defs.json", `[{"name":"analysts","attributes":{"indices_name":"logs*"},"resources":{"cpu":{"allocation":0.3}},"enforcement":"hard"},
	  {"name":"ops","attributes":{"custom_id":"ops-*"},"resources":{"jvm":{"allocation":0.2}},"enforcement":"monitor"}]`)

	out, _, err := execute(t, "sandbox", "sync", "--url", srv.URL, "-f", defs)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Workload management: OpenSearch 3.1.0 serves /_wlm/workload_group and /_rules/workload_group",
		"dry-run: 4 drifts; 4 calls would bring the cluster to the definitions",
		"drift: group shardwise-analysts group: want present, have absent",
		"drift: setting wlm.workload_group.mode value: want enabled, have monitor_only",
		"dry-run: PUT /_wlm/workload_group (create group shardwise-analysts for sandbox analysts)",
		`note: sandbox "ops" gets no rule: custom_id (X-Opaque-Id) is not a rule attribute`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	mu.Lock()
	if len(writes) != 0 {
		t.Errorf("dry run wrote %v", writes)
	}
	mu.Unlock()

	out, _, err = execute(t, "sandbox", "sync", "--url", srv.URL, "-f", defs, "--dry-run=false")
	if err != nil || !strings.Contains(out, "calls made; the cluster matches the definitions") {
		t.Fatalf("sync: %v\n%s", err, out)
	}
	out, _, err = execute(t, "sandbox", "sync", "--url", srv.URL, "-f", defs, "--dry-run=false")
	if err != nil || !strings.Contains(out, "in sync: 2 groups, 1 rules and the wlm settings match the definitions") {
		t.Errorf("second sync: %v\n%s", err, out)
	}
}
