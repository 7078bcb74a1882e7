package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// mustSim builds a simulation from scenario JSON.
func mustSim(t testing.TB, doc string) *Sim {
	t.Helper()
	sc, err := ParseScenario([]byte(doc))
	if err != nil {
		t.Fatalf("parse scenario: %v", err)
	}
	s, err := New(sc, Options{})
	if err != nil {
		t.Fatalf("new sim: %v", err)
	}
	return s
}

// call sends one request to the simulator's handler and returns the status and raw body.
func call(t testing.TB, s *Sim, method, target, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(context.Background(), method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// callJSON is call with the body decoded.
func callJSON(t testing.TB, s *Sim, method, target, body string) (int, map[string]any) {
	t.Helper()
	code, raw := call(t, s, method, target, body)
	var out map[string]any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, target, err, raw)
	}
	return code, out
}

// dig follows a path of object keys and array indexes (as ints) through decoded JSON.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// nodeID returns the simulator's id for a node name.
func nodeID(t testing.TB, s *Sim, name string) string {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.byName[name]
	if !ok {
		t.Fatalf("no node %q", name)
	}
	return n.id
}

// copyOn reports the state of index's shard copy on the named node ("" when none is there).
func copyOn(s *Sim, index string, shard int, nodeName string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, c := range s.byIndex[index].shards[shard].copies {
		if c.node != nil && c.node.name == nodeName {
			return c.state.String()
		}
		if c.target != nil && c.target.name == nodeName {
			return "TARGET"
		}
	}
	return ""
}

// stepN advances n ticks.
func stepN(s *Sim, n int) {
	for range n {
		s.Step()
	}
}
