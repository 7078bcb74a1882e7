package alloc_test

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// Three zones, two nodes each, awareness on zone; x[0]'s copies in zones a and b.
const awarenessScenario = `{
  "name": "awareness", "seed": 3, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false, "awareness_attributes": ["zone"]},
  "nodes": [{"name": "a1", "zone": "a"}, {"name": "a2", "zone": "a"}, {"name": "b1", "zone": "b"},
            {"name": "b2", "zone": "b"}, {"name": "c1", "zone": "c"}, {"name": "c2", "zone": "c"}],
  "indices": [
    {"name": "x", "primaries": 1, "replicas": 1, "shard_bytes": 1048576, "placement": [["a1", "b1"]]},
    {"name": "y", "primaries": 6, "replicas": 1, "shard_bytes": 1048576}
  ]
}`

func TestAwareness(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		wantStatus int
		wantReason string
	}{
		{"within its zone", simtest.Commands(simtest.Move("x", 0, "a1", "a2")), 200, ""},
		{"to the zone holding no copy", simtest.Commands(simtest.Move("x", 0, "a1", "c1")), 200, ""},
		{"into the zone of its other copy", simtest.Commands(simtest.Move("x", 0, "a1", "b2")), 400,
			"NO(there are too many copies of the shard allocated to nodes with attribute [zone]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, awarenessScenario)
			code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", tc.body)
			if code != tc.wantStatus {
				t.Fatalf("status: got %d want %d: %s", code, tc.wantStatus, body)
			}
			if !strings.Contains(body, tc.wantReason) {
				t.Errorf("body %s lacks %q", body, tc.wantReason)
			}
		})
	}
	t.Run("the allocator places every shard's copies in two zones", func(t *testing.T) {
		s := simtest.MustSim(t, awarenessScenario)
		simtest.StepN(s, 2)
		s.Mu.RLock()
		defer s.Mu.RUnlock()
		for _, sh := range s.ByIndex["y"].Shards {
			zones := map[string]int{}
			for _, c := range sh.Copies {
				if c.Node == nil {
					t.Fatalf("%s: a copy unassigned", sh)
				}
				zones[c.Node.Zone]++
			}
			if len(zones) != 2 {
				t.Errorf("%s: copies in zones %v, want two zones", sh, zones)
			}
		}
	})
	t.Run("the setting is reported as the cluster's", func(t *testing.T) {
		s := simtest.MustSim(t, awarenessScenario)
		_, body := simtest.Call(t, s, "GET", "/_cluster/settings?flat_settings=true", "")
		if !strings.Contains(body, `"cluster.routing.allocation.awareness.attributes"`) || !strings.Contains(body, "zone") {
			t.Errorf("settings %s lack the awareness attribute", body)
		}
	})
	t.Run("a built-in filter attribute is refused", func(t *testing.T) {
		_, err := scenario.ParseScenario([]byte(strings.Replace(awarenessScenario, `["zone"]`, `["_name"]`, 1)))
		if err == nil || !strings.Contains(err.Error(), "cluster.awareness_attributes[0]") {
			t.Errorf("ParseScenario: got %v, want an error naming cluster.awareness_attributes[0]", err)
		}
	})
}
