package alloc_test

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// Unassigned copies are allocated in OpenSearch's order: index.priority highest first, then the
// newest index, then the name in reverse. With one incoming recovery allowed, only the first
// replica starts recovering; the others are throttled.
func TestUnassignedOrder(t *testing.T) {
	const doc = `{"name": "order", "seed": 8, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false, "node_concurrent_recoveries": 1},
  "nodes": [{"name": "a"}, {"name": "b"}],
  "indices": [{"name": "alpha", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "placement": [["a"]] %s},
              {"name": "beta", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "placement": [["a"]]},
              {"name": "gamma", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "placement": [["a"]]}],
  "events": [%s]}`
	tests := []struct {
		name     string
		priority string
		events   string
		want     string
	}{
		{"same priority and age: name in reverse", "", "", "gamma"},
		{"index.priority first", `, "priority": 5`, "", "alpha"},
		{"the newest index next", "", `{"at_seconds": 30, "kind": "create_index", "spec": {"name": "aardvark", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "allocation": {"require": {"_name": "a"}}}}`, "aardvark"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(doc, "%s", tc.priority, 1)
			s := simtest.MustSim(t, strings.Replace(doc, "%s", tc.events, 1))
			simtest.StepN(s, 2)
			if code, body := simtest.Call(t, s, "PUT", "/_settings", `{"index": {"number_of_replicas": 1, "routing.allocation.require._name": null}}`); code != 200 {
				t.Fatalf("PUT _settings: %d %s", code, body)
			}
			var initializing []string
			for _, ix := range []string{"alpha", "beta", "gamma", "aardvark"} {
				if s.ByIndex[ix] != nil && simtest.CopyOn(s, ix, 0, "b") == "INITIALIZING" {
					initializing = append(initializing, ix)
				}
			}
			if len(initializing) != 1 || initializing[0] != tc.want {
				t.Errorf("replicas initializing on b: got %v, want [%s]", initializing, tc.want)
			}
		})
	}
}

// indices.recovery.max_bytes_per_sec is one limit per node: two recoveries into one node share it
// and each takes twice as long as one alone.
func TestRecoveriesShareNodeRate(t *testing.T) {
	// 2.4 GiB at 40 MiB/s is 61.44 s alone: 3 ticks of 30 s; shared, 122.88 s: 5 ticks.
	const doc = `{"name": "share", "seed": 9, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false, "node_concurrent_recoveries": 2},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 1, "replicas": 0, "shard_bytes": 2576980378, "placement": [["a"]]},
              {"name": "y", "primaries": 1, "replicas": 0, "shard_bytes": 2576980378, "placement": [["c"]]}]}`
	tests := []struct {
		name      string
		indices   string
		wantTicks int
	}{
		{"one recovery alone", "x", 3},
		{"two into one node", "x,y", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, doc)
			if code, body := simtest.Call(t, s, "PUT", "/"+tc.indices+"/_settings", `{"index": {"number_of_replicas": 1, "routing.allocation.exclude._name": "a,c"}}`); code != 200 {
				t.Fatalf("PUT _settings: %d %s", code, body)
			}
			if got := simtest.CopyOn(s, "x", 0, "b"); got != "INITIALIZING" {
				t.Fatalf("x's replica on b: got %q, want INITIALIZING", got)
			}
			simtest.StepN(s, tc.wantTicks-1)
			if got := simtest.CopyOn(s, "x", 0, "b"); got != "INITIALIZING" {
				t.Errorf("x's replica after %d ticks: got %q, want still INITIALIZING", tc.wantTicks-1, got)
			}
			simtest.StepN(s, 1)
			if got := simtest.CopyOn(s, "x", 0, "b"); got != "STARTED" {
				t.Errorf("x's replica after %d ticks: got %q, want STARTED", tc.wantTicks, got)
			}
		})
	}
}

// When the source of a replica's relocation leaves, OpenSearch keeps the target, initializing, and
// recovers it from the primary; a primary's relocation target goes with its source.
func TestRelocationSourceLeaves(t *testing.T) {
	const doc = `{"name": "source-leaves", "seed": 10, "tick_seconds": 30, "duration_seconds": 1200,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 1, "replicas": 1, "shard_bytes": 10737418240, "placement": [["a", "b"]]}],
  "events": [{"at_seconds": 60, "kind": "node_leave", "node": "%s"}]}`
	tests := []struct {
		name, moveFrom string
		wantOnC        string
	}{
		{"a replica's target recovers from the primary", "b", "INITIALIZING"},
		{"a primary's target is dropped", "a", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, strings.Replace(doc, "%s", tc.moveFrom, 1))
			simtest.StepN(s, 1)
			if code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("x", 0, tc.moveFrom, "c"))); code != 200 {
				t.Fatalf("reroute: %d %s", code, body)
			}
			simtest.StepN(s, 2) // the leave applies at the start of tick 3
			if got := simtest.CopyOn(s, "x", 0, "c"); got != tc.wantOnC {
				t.Errorf("copy on c after its source left: got %q, want %q", got, tc.wantOnC)
			}
			if r := s.Result(); r.SafetyViolations != 0 {
				t.Errorf("safety violations: %v", r.Violations)
			}
		})
	}
}
