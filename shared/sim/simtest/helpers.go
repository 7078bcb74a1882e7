package simtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// MustSim builds a simulation from scenario JSON.
func MustSim(t testing.TB, doc string) *sim.Sim {
	t.Helper()
	sc, err := scenario.ParseScenario([]byte(doc))
	if err != nil {
		t.Fatalf("parse scenario: %v", err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatalf("new sim: %v", err)
	}
	return s
}

// Call sends one request to the simulator's handler and returns the status and raw body.
func Call(t testing.TB, s *sim.Sim, method, target, body string) (int, string) {
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
	s.REST.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// CallJSON is call with the body decoded.
func CallJSON(t testing.TB, s *sim.Sim, method, target, body string) (int, map[string]any) {
	t.Helper()
	code, raw := Call(t, s, method, target, body)
	var out map[string]any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, target, err, raw)
	}
	return code, out
}

// Dig follows a path of object keys and array indexes (as ints) through decoded JSON.
func Dig(v any, path ...any) any {
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

// NodeID returns the simulator's id for a node name.
func NodeID(t testing.TB, s *sim.Sim, name string) string {
	t.Helper()
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	n, ok := s.ByName[name]
	if !ok {
		t.Fatalf("no node %q", name)
	}
	return n.ID
}

// CopyOn reports the state of index's shard copy on the named node ("" when none is there).
func CopyOn(s *sim.Sim, index string, shard int, nodeName string) string {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	for _, c := range s.ByIndex[index].Shards[shard].Copies {
		if c.Node != nil && c.Node.Name == nodeName {
			return c.State.String()
		}
		if c.Target != nil && c.Target.Name == nodeName {
			return "TARGET"
		}
	}
	return ""
}

// StepN advances n ticks.
func StepN(s *sim.Sim, n int) {
	for range n {
		s.Step()
	}
}

// SharedScenarioDir is the project's scenarios/ directory, found beside the module's go.mod from
// the test's directory. SHARDWISE_SCENARIOS overrides it.
func SharedScenarioDir() string {
	if d := os.Getenv("SHARDWISE_SCENARIOS"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return "scenarios"
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scenarios")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "scenarios"
		}
		dir = parent
	}
}

// LoadShared loads scenarios/<name>.json.
func LoadShared(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadScenario(filepath.Join(SharedScenarioDir(), name+".json"))
	if err != nil {
		t.Fatalf("load shared scenario %s: %v", name, err)
	}
	return sc
}

// Minimal is a valid scenario that test cases edit with one change each.
const Minimal = `{
  "name": "t", "seed": 1, "tick_seconds": 30, "duration_seconds": 300,
  "cluster": {"builtin_balancer": true},
  "node_defaults": {"write_threads": 8},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 2, "replicas": 1, "shard_bytes": 1024,
    "write_load": {"kind": "constant", "value": 1},
    "placement": [["a", "b"], ["b", "c"]]}],
  "events": []
}`

// RerouteScenario has four nodes; d's disk is too small for any shard. Rebalancing is off so only
// the commands move anything.
const RerouteScenario = `{
  "name": "reroute", "seed": 5, "tick_seconds": 30, "duration_seconds": 3000,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d", "disk_bytes": 1000}],
  "indices": [
    {"name": "x", "primaries": 2, "replicas": 1, "shard_bytes": 1048576,
     "write_load": {"kind": "constant", "value": 1}, "placement": [["a", "b"], ["b", "c"]]},
    {"name": "y", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "placement": [["a"]]}
  ]
}`

// Move is a reroute move command.
func Move(index string, shard int, from, to string) string {
	return `{"move":{"index":"` + index + `","shard":` + itoa(shard) + `,"from_node":"` + from + `","to_node":"` + to + `"}}`
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Commands is a reroute body of cmds.
func Commands(cmds ...string) string { return `{"commands":[` + strings.Join(cmds, ",") + `]}` }

// MustReroute posts a reroute body and fails the test unless it is accepted.
func MustReroute(t testing.TB, s *sim.Sim, body string) {
	t.Helper()
	if code, resp := Call(t, s, "POST", "/_cluster/reroute", body); code != 200 {
		t.Fatalf("reroute %s: %d %s", body, code, resp)
	}
}

// WlmScenario is a small cluster answering as version with plugins.
func WlmScenario(version string, plugins ...string) string {
	p, _ := json.Marshal(plugins)
	return fmt.Sprintf(`{
  "name": "wlm", "seed": 5, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false, "opensearch_version": %q, "plugins": %s},
  "nodes": [{"name": "n0"}, {"name": "n1"}],
  "indices": [{"name": "logs", "primaries": 1, "replicas": 1, "shard_bytes": 1048576}]
}`, version, p)
}
