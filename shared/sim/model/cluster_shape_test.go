package model_test

import (
	"math"

	"github.com/shardwise/shardwise/shared/sim/model"

	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// Each bad value of the cluster-shape fields and events is refused with an error naming its field.
func TestParseClusterShape(t *testing.T) {
	ev := func(e string) [2]string { return [2]string{`"events": []`, `"events": [` + e + `]`} }
	tests := []struct {
		name    string
		edit    [2]string // from → to in minimal
		wantErr string    // substring; empty means valid
	}{
		{"node attributes", [2]string{`{"name": "b"}`, `{"name": "b", "attributes": {"rack": "r1"}}`}, ""},
		{"zone as an attribute", [2]string{`{"name": "b"}`, `{"name": "b", "attributes": {"zone": "a"}}`}, "nodes[1].attributes.zone"},
		{"attribute value with a comma", [2]string{`{"name": "b"}`, `{"name": "b", "attributes": {"rack": "r1,r2"}}`}, "nodes[1].attributes.rack"},
		{"attribute named like a built-in", [2]string{`{"name": "b"}`, `{"name": "b", "attributes": {"_name": "x"}}`}, "nodes[1].attributes"},
		{"awareness on a custom attribute", [2]string{`"builtin_balancer": true`, `"builtin_balancer": true, "awareness_attributes": ["rack"]`}, ""},
		{"forced awareness", [2]string{`"builtin_balancer": true`, `"builtin_balancer": true, "awareness_force": {"zone": ["a", "b", "c"]}`}, ""},
		{"forced awareness without values", [2]string{`"builtin_balancer": true`, `"builtin_balancer": true, "awareness_force": {"zone": []}`}, "cluster.awareness_force.zone: at least one value"},
		{"forced value twice", [2]string{`"builtin_balancer": true`, `"builtin_balancer": true, "awareness_force": {"zone": ["a", "a"]}`}, "cluster.awareness_force.zone[1]"},
		{"index allocation filters", [2]string{`"shard_bytes": 1024,`, `"shard_bytes": 1024, "allocation": {"exclude": {"_name": "c"}, "require": {"rack": "r*"}}, "total_shards_per_node": 2, "delayed_timeout_seconds": 300, "priority": 10,`}, ""},
		{"empty filter", [2]string{`"shard_bytes": 1024,`, `"shard_bytes": 1024, "allocation": {"include": {"_name": " , "}},`}, "indices[0].allocation.include._name"},
		{"negative total_shards_per_node", [2]string{`"shard_bytes": 1024,`, `"shard_bytes": 1024, "total_shards_per_node": -1,`}, "indices[0].total_shards_per_node"},
		{"negative delayed timeout", [2]string{`"shard_bytes": 1024,`, `"shard_bytes": 1024, "delayed_timeout_seconds": -5,`}, "indices[0].delayed_timeout_seconds"},
		{"negative priority", [2]string{`"shard_bytes": 1024,`, `"shard_bytes": 1024, "priority": -1,`}, "indices[0].priority"},
		{"rollover", ev(`{"at_seconds": 60, "kind": "create_index", "rollover_from": "x", "spec": {"name": "x-2", "primaries": 1, "replicas": 1, "shard_bytes": 0}},
			{"at_seconds": 120, "kind": "set_search_load", "index": "x-2", "load": {"kind": "constant", "value": 1}},
			{"at_seconds": 180, "kind": "delete_index", "index": "x"}`), ""},
		{"create without a spec", ev(`{"at_seconds": 60, "kind": "create_index"}`), "events[0].spec: required"},
		{"create an existing index", ev(`{"at_seconds": 60, "kind": "create_index", "spec": {"name": "x", "primaries": 1, "replicas": 0, "shard_bytes": 0}}`), `events[0].spec.name: duplicate index name "x"`},
		{"rollover from an unknown index", ev(`{"at_seconds": 60, "kind": "create_index", "rollover_from": "q", "spec": {"name": "y", "primaries": 1, "replicas": 0, "shard_bytes": 0}}`), `events[0].rollover_from: unknown index "q"`},
		{"rollover with its own write load", ev(`{"at_seconds": 60, "kind": "create_index", "rollover_from": "x", "spec": {"name": "y", "primaries": 1, "replicas": 0, "shard_bytes": 0, "write_load": {"kind": "constant", "value": 1}}}`), "events[0].spec.write_load"},
		{"create with a placement", ev(`{"at_seconds": 60, "kind": "create_index", "spec": {"name": "y", "primaries": 1, "replicas": 0, "shard_bytes": 0, "placement": [["a"]]}}`), "events[0].spec.placement"},
		{"load on an index after its delete", ev(`{"at_seconds": 60, "kind": "delete_index", "index": "x"}, {"at_seconds": 90, "kind": "set_write_load", "index": "x", "load": {"kind": "constant", "value": 1}}`), `events[1].index: unknown index "x"`},
		{"delete an unknown index", ev(`{"at_seconds": 60, "kind": "delete_index", "index": "q"}`), `events[0].index: unknown index "q"`},
		{"restart", ev(`{"at_seconds": 60, "kind": "node_restart", "node": "b", "down_seconds": 120}`), ""},
		{"restart without down_seconds", ev(`{"at_seconds": 60, "kind": "node_restart", "node": "b"}`), "events[0].down_seconds"},
		{"restart of an unknown node", ev(`{"at_seconds": 60, "kind": "node_restart", "node": "q", "down_seconds": 10}`), `events[0].node: node "q" is not in the cluster`},
		{"restart during a restart", ev(`{"at_seconds": 60, "kind": "node_restart", "node": "b", "down_seconds": 120}, {"at_seconds": 90, "kind": "node_restart", "node": "b", "down_seconds": 10}`), "events[1].node: node \"b\" is still restarting"},
		{"rolling restart waiting for green", ev(`{"at_seconds": 60, "kind": "node_restart", "node": "b", "down_seconds": 120}, {"at_seconds": 90, "kind": "node_restart", "node": "b", "down_seconds": 10, "wait_for_green": true}`), ""},
		{"leave during a restart", ev(`{"at_seconds": 60, "kind": "node_restart", "node": "b", "down_seconds": 120}, {"at_seconds": 90, "kind": "node_leave", "node": "b"}`), `events[1].node: node "b" is restarting`},
		{"wait_for_green on another kind", ev(`{"at_seconds": 60, "kind": "node_leave", "node": "b", "wait_for_green": true}`), `events[0].wait_for_green: not a field of kind "node_leave"`},
		{"set index settings", ev(`{"at_seconds": 60, "kind": "set_index_settings", "index": "x", "settings": {"index.number_of_replicas": 2, "index": {"routing": {"allocation": {"exclude": {"_name": "c"}}}}}}`), ""},
		{"set a bad replica count", ev(`{"at_seconds": 60, "kind": "set_index_settings", "index": "x", "settings": {"number_of_replicas": -1}}`), "events[0].settings.index.number_of_replicas"},
		{"set an unknown setting", ev(`{"at_seconds": 60, "kind": "set_index_settings", "index": "x", "settings": {"index.colour": "red"}}`), "events[0].settings.index.colour: unknown setting"},
		{"set a final setting", ev(`{"at_seconds": 60, "kind": "set_index_settings", "index": "x", "settings": {"index.number_of_shards": 4}}`), "events[0].settings.index.number_of_shards: final index setting"},
		{"set settings without settings", ev(`{"at_seconds": 60, "kind": "set_index_settings", "index": "x"}`), "events[0].settings: required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The minimal scenario is the string searched and the edit's old text the one sought: the
			// order is right, gocritic only sees a constant first.
			if !strings.Contains(simtest.Minimal, tc.edit[0]) { //nolint:gocritic // argOrder: Minimal is the haystack here, see above
				t.Fatalf("test setup: %q not in the minimal scenario", tc.edit[0])
			}
			_, err := scenario.ParseScenario([]byte(strings.Replace(simtest.Minimal, tc.edit[0], tc.edit[1], 1)))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseScenario: got error %v, want none", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("ParseScenario: got no error, want one containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("ParseScenario error: got %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// copiesPerNode counts the copies (relocation targets in place of their sources) of index on each
// node, and the unassigned ones under "".
func copiesPerNode(s *sim.Sim, index string) map[string]int {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	out := map[string]int{}
	for _, sh := range s.ByIndex[index].Shards {
		for _, c := range sh.Copies {
			switch {
			case c.Target != nil:
				out[c.Target.Name]++
			case c.Node != nil:
				out[c.Node.Name]++
			default:
				out[""]++
			}
		}
	}
	return out
}

// A rollover's new index is placed by the allocator's weights: with a node just joined and empty,
// all its primaries land there, and the old index's write load moves to it. Deleting an index
// makes the REST API forget it.
func TestRolloverLandsOnEmptiestNode(t *testing.T) {
	const doc = `{"name": "rollover", "seed": 2, "tick_seconds": 30, "duration_seconds": 900,
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "logs-1", "primaries": 3, "replicas": 1, "shard_bytes": 1048576, "write_load": {"kind": "constant", "value": 6}},
              {"name": "other", "primaries": 6, "replicas": 1, "shard_bytes": 1048576}],
  "events": [{"at_seconds": 60, "kind": "node_join", "node": {"name": "d"}},
             {"at_seconds": 60, "kind": "create_index", "rollover_from": "logs-1",
              "spec": {"name": "logs-2", "primaries": 3, "replicas": 1, "shard_bytes": 0}},
             {"at_seconds": 120, "kind": "delete_index", "index": "other"}]}`
	s := simtest.MustSim(t, doc)
	simtest.StepN(s, 3) // the events at 60 s apply at the start of tick 3
	s.Mu.RLock()
	primariesOnD := 0
	for _, sh := range s.ByIndex["logs-2"].Shards {
		if p := sh.Primary(); p.Node != nil && p.Node.Name == "d" && p.Active() {
			primariesOnD++
		}
	}
	oldLoad, _ := s.ByIndex["logs-1"].Loads(90)
	newLoad, _ := s.ByIndex["logs-2"].Loads(90)
	s.Mu.RUnlock()
	if primariesOnD != 3 {
		t.Errorf("logs-2 primaries started on the new node d: got %d, want 3 (copies per node %v)", primariesOnD, copiesPerNode(s, "logs-2"))
	}
	if oldLoad != 0 || newLoad != 6 {
		t.Errorf("write load after the rollover: logs-1 %v, logs-2 %v; want 0 and 6", oldLoad, newLoad)
	}
	for _, path := range []string{"/_cat/indices?h=index", "/_cluster/state/metadata", "/_stats", "/logs-2/_settings"} {
		if code, body := simtest.Call(t, s, "GET", path, ""); code != 200 || !strings.Contains(body, "logs-2") {
			t.Errorf("GET %s: got %d without logs-2: %.300s", path, code, body)
		}
	}
	simtest.StepN(s, 2)
	for _, path := range []string{"/_cat/indices?h=index", "/_cat/shards", "/_cluster/state/metadata,routing_table", "/_stats", "/_nodes/stats/indices?level=shards"} {
		if code, body := simtest.Call(t, s, "GET", path, ""); code != 200 || strings.Contains(body, `other`) {
			t.Errorf("GET %s after delete_index: got %d, still naming the index: %.300s", path, code, body)
		}
	}
	if code, _ := simtest.Call(t, s, "GET", "/other/_settings", ""); code != 404 {
		t.Errorf("GET other/_settings after delete_index: got %d, want 404", code)
	}
	simtest.StepN(s, 20)
	if r := s.Result(); r.SafetyViolations != 0 {
		t.Errorf("safety violations: %v", r.Violations)
	}
}

// Forced awareness counts a zone with no node: with zones a and b present and a, b, c forced, a
// shard's third copy stays unassigned instead of doubling up in a or b. Without forcing it is
// allocated. Node attributes other than zone work the same way and show in _nodes.
func TestForcedAwareness(t *testing.T) {
	const doc = `{"name": "force", "seed": 4, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"awareness_attributes": ["zone"] %s},
  "nodes": [{"name": "a1", "zone": "a", "attributes": {"rack": "r1"}}, {"name": "a2", "zone": "a", "attributes": {"rack": "r2"}},
            {"name": "b1", "zone": "b", "attributes": {"rack": "r1"}}, {"name": "b2", "zone": "b", "attributes": {"rack": "r2"}}],
  "indices": [{"name": "x", "primaries": 2, "replicas": 2, "shard_bytes": 1048576}]}`
	tests := []struct {
		name           string
		force          string
		wantUnassigned int
	}{
		{"no forced values: copies double up in a zone", "", 0},
		{"zone c forced but absent: its copies wait", `, "awareness_force": {"zone": ["a", "b", "c"]}`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, strings.Replace(doc, "%s", tc.force, 1))
			simtest.StepN(s, 4)
			if got := copiesPerNode(s, "x")[""]; got != tc.wantUnassigned {
				t.Errorf("unassigned copies of x: got %d, want %d (%v)", got, tc.wantUnassigned, copiesPerNode(s, "x"))
			}
		})
	}
	s := simtest.MustSim(t, strings.Replace(doc, "%s", `, "awareness_force": {"zone": ["a", "b", "c"]}`, 1))
	_, body := simtest.Call(t, s, "GET", "/_nodes/a1", "")
	if !strings.Contains(body, `"attributes":{"rack":"r1","zone":"a"}`) {
		t.Errorf("_nodes/a1 attributes: got %.600s", body)
	}
	_, body = simtest.Call(t, s, "GET", "/_cluster/settings", "")
	if !strings.Contains(body, `"force":{"zone":{"values":"a,b,c"}}`) {
		t.Errorf("_cluster/settings lacks the forced values: %s", body)
	}
}

// Index settings from the spec and from set_index_settings: an index's allocation filter and
// total_shards_per_node hold its copies, GET _settings shows them, and the event changes them.
func TestIndexSettingsFromScenario(t *testing.T) {
	const doc = `{"name": "isettings", "seed": 5, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a", "attributes": {"tier": "hot"}}, {"name": "b", "attributes": {"tier": "hot"}}, {"name": "c", "attributes": {"tier": "warm"}}],
  "indices": [{"name": "x", "primaries": 4, "replicas": 0, "shard_bytes": 1048576,
               "allocation": {"require": {"tier": "hot"}}, "total_shards_per_node": 2, "delayed_timeout_seconds": 300, "priority": 7}],
  "events": [{"at_seconds": 60, "kind": "set_index_settings", "index": "x",
              "settings": {"index.routing.allocation.require.tier": null, "index.routing.allocation.exclude._name": "a",
                           "index.routing.allocation.total_shards_per_node": 4, "number_of_replicas": 0}}]}`
	s := simtest.MustSim(t, doc)
	if got := copiesPerNode(s, "x"); got["a"] != 2 || got["b"] != 2 || got["c"] != 0 {
		t.Errorf("x at the start: got %v, want 2 on a, 2 on b (require tier hot, 2 per node)", got)
	}
	_, body := simtest.Call(t, s, "GET", "/x/_settings?flat_settings=true", "")
	for _, want := range []string{`"index.routing.allocation.require.tier":"hot"`, `"index.routing.allocation.total_shards_per_node":"2"`,
		`"index.unassigned.node_left.delayed_timeout":"300s"`, `"index.priority":"7"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET x/_settings lacks %s: %s", want, body)
		}
	}
	simtest.StepN(s, 8)
	if got := copiesPerNode(s, "x"); got["a"] != 0 {
		t.Errorf("x after set_index_settings excluded a: got %v, want none on a", got)
	}
	_, body = simtest.Call(t, s, "GET", "/x/_settings?flat_settings=true", "")
	if strings.Contains(body, "require.tier") || !strings.Contains(body, `"index.routing.allocation.exclude._name":"a"`) {
		t.Errorf("GET x/_settings after the event: %s", body)
	}
}

// A total_shards_per_node lowered under what a node holds: OpenSearch's allocator moves the copies
// over the limit away (ShardsLimitAllocationDecider.canRemain: held > limit), down to the limit and
// no further.
func TestLoweredShardLimitMovesCopies(t *testing.T) {
	const doc = `{"name": "lowered", "seed": 5, "tick_seconds": 30, "duration_seconds": 900,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 4, "replicas": 0, "shard_bytes": 1048576, "placement": [["a"], ["a"], ["a"], ["b"]]}],
  "events": [{"at_seconds": 60, "kind": "set_index_settings", "index": "x",
              "settings": {"index.routing.allocation.total_shards_per_node": 2}}]}`
	s := simtest.MustSim(t, doc)
	if got := copiesPerNode(s, "x"); got["a"] != 3 {
		t.Fatalf("x at the start: got %v, want 3 on a", got)
	}
	simtest.StepN(s, 10)
	if got := copiesPerNode(s, "x"); got["a"] != 2 || got["b"]+got["c"] != 2 {
		t.Errorf("x after the limit fell to 2: got %v, want 2 on a and the other 2 on b and c", got)
	}
}

const restartDoc = `{"name": "restart", "seed": 6, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 1, "replicas": 1, "shard_bytes": 10737418240,
               "write_load": {"kind": "constant", "value": 1}, "placement": [["a", "b"]]}],
  "events": [{"at_seconds": 60, "kind": "node_restart", "node": "b", "down_seconds": %s}]}`

// A restarted node keeps its name, id and data: a copy it held comes back to it when it returns
// within index.unassigned.node_left.delayed_timeout (no files copied), and is recovered elsewhere
// (a full copy) when it does not.
func TestNodeRestart(t *testing.T) {
	tests := []struct {
		name       string
		down       string
		wantNode   string
		wantStated int // ticks after the restart by which the replica is started again
	}{
		{"back within the 60 s timeout", "30", "b", 3},
		{"back after it", "300", "c", 14}, // 10 GiB at 40 MiB/s is 256 s
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, strings.Replace(restartDoc, "%s", tc.down, 1))
			id := simtest.NodeID(t, s, "b")
			simtest.StepN(s, 3)
			if got := simtest.CopyOn(s, "x", 0, "b"); got != "" {
				t.Fatalf("copy on b while it restarts: %s", got)
			}
			simtest.StepN(s, tc.wantStated)
			if got := simtest.CopyOn(s, "x", 0, tc.wantNode); got != "STARTED" {
				t.Errorf("replica on %s %d ticks after the restart: got %q, want STARTED", tc.wantNode, tc.wantStated, got)
			}
			if got := simtest.NodeID(t, s, "b"); got != id {
				t.Errorf("b's id after its restart: got %s, want %s", got, id)
			}
			if code, body := simtest.Call(t, s, "GET", "/_cat/nodes?h=name", ""); code != 200 || !strings.Contains(body, "b") {
				t.Errorf("_cat/nodes after the restart: %d %s", code, body)
			}
		})
	}
}

// A wait_for_green event waits, with the events after it, until the cluster is green and no
// restarted node is away: a rolling restart takes one node at a time.
func TestRollingRestartWaitsForGreen(t *testing.T) {
	const doc = `{"name": "rolling", "seed": 7, "tick_seconds": 30, "duration_seconds": 3600,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 3, "replicas": 1, "shard_bytes": 1048576, "write_load": {"kind": "constant", "value": 1}}],
  "events": [{"at_seconds": 30, "kind": "node_restart", "node": "a", "down_seconds": 120},
             {"at_seconds": 60, "kind": "node_restart", "node": "b", "down_seconds": 120 %s},
             {"at_seconds": 90, "kind": "node_restart", "node": "c", "down_seconds": 120 %s}]}`
	tests := []struct {
		name     string
		wait     string
		wantDown int // the most nodes away at once
	}{
		{"without waiting, restarts overlap", "", 3},
		{"waiting for green, one at a time", `, "wait_for_green": true`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, strings.ReplaceAll(doc, "%s", tc.wait))
			most, restarted := 0, map[string]bool{}
			for range 60 {
				rep := s.Step()
				for _, e := range rep.Events {
					if strings.HasPrefix(e, "node_restart") && !strings.HasSuffix(e, "back") {
						restarted[strings.Fields(e)[1]] = true
					}
				}
				most = max(most, 3-len(rep.Nodes))
			}
			if most != tc.wantDown {
				t.Errorf("most nodes away at once: got %d, want %d", most, tc.wantDown)
			}
			if len(restarted) != 3 {
				t.Errorf("nodes restarted: got %v, want all three", restarted)
			}
			if r := s.Result(); r.SafetyViolations != 0 {
				t.Errorf("safety violations: %v", r.Violations)
			}
		})
	}
}

// An index_groups entry gives every index of the group the per-index fields an indices entry
// takes: allocation filters, total_shards_per_node, priority, shard_weights, replication_type and
// shard growth.
func TestIndexGroupOptions(t *testing.T) {
	const doc = `{"name": "group-options", "seed": 5, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a", "attributes": {"tier": "hot"}}, {"name": "b", "attributes": {"tier": "hot"}}, {"name": "c", "attributes": {"tier": "warm"}}],
  "index_groups": [{"name_prefix": "g", "count": 2, "primaries": 2, "replicas": 1, "shard_bytes": 1048576,
    "write_load": {"kind": "constant", "value": 4},
    "allocation": {"require": {"tier": "hot"}}, "total_shards_per_node": 2, "priority": 3,
    "shard_weights": [3, 1], "replication_type": "segment", "shard_bytes_growth_per_hour": 3600}]}`
	s := simtest.MustSim(t, doc)
	for _, name := range []string{"g0", "g1"} {
		if got := copiesPerNode(s, name); got["a"] != 2 || got["b"] != 2 || got["c"] != 0 {
			t.Errorf("%s: got %v, want 2 on a and 2 on b (require tier hot, 2 per node)", name, got)
		}
		_, body := simtest.Call(t, s, "GET", "/"+name+"/_settings?flat_settings=true", "")
		for _, want := range []string{`"index.priority":"3"`, `"index.routing.allocation.total_shards_per_node":"2"`, `"index.routing.allocation.require.tier":"hot"`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s/_settings lacks %s: %s", name, want, body)
			}
		}
	}
	rep := s.Step()
	// Each index writes 2 threads, 1.5 on shard 0 and 0.5 on shard 1; under segment replication a
	// replica bears DefaultSegmentReplicaShare of its shard's.
	offered := 0.0
	for _, n := range rep.Nodes {
		offered += n.WriteLoad
	}
	if want := 4 * (1 + model.DefaultSegmentReplicaShare); math.Abs(offered-want) > 1e-9 {
		t.Errorf("offered write load: got %v threads, want %v (segment replication)", offered, want)
	}
	if rep.MaxCopyWriteLoad != 1.5 {
		t.Errorf("heaviest copy: got %v threads, want 1.5 (shard_weights 3:1 of 2)", rep.MaxCopyWriteLoad)
	}
	simtest.StepN(s, 9)
	s.Mu.RLock()
	grown := s.ByIndex["g1"].ShardBytes
	s.Mu.RUnlock()
	if grown != 1048576+300 {
		t.Errorf("g1's shard_bytes after 300 s: got %d, want %d (1 byte a second)", grown, 1048576+300)
	}
}

// An index exclusion the scenario sets is the operator's: OpenSearch's relocations for it are not
// a client's moves, nor "reroute moves" that the safety invariants hold a client's next move to.
// The same exclusion written through the settings API is the client's (shardwise's
// allocation-filter strategy): its relocations count as moves.
func TestOperatorExclusionIsNotAClientsMove(t *testing.T) {
	const doc = `{"name": "opfilter", "seed": 9, "tick_seconds": 30, "duration_seconds": 600,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 2, "replicas": 0, "shard_bytes": 1073741824, "placement": [["a"], ["b"]]},
              {"name": "y", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "placement": [["c"]]}]%s}`
	for _, tc := range []struct {
		name      string
		events    string
		api       bool
		wantMoves int
	}{
		{"set by the scenario", `, "events": [{"at_seconds": 30, "kind": "set_index_settings", "index": "x", "settings": {"index.routing.allocation.exclude._name": "a"}}]`, false, 0},
		{"set through the settings API", "", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, strings.Replace(doc, "%s", tc.events, 1))
			simtest.StepN(s, 1)
			if tc.api {
				if code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index.routing.allocation.exclude._name": "a"}`); code != 200 {
					t.Fatalf("PUT x/_settings: %d %s", code, body)
				}
			}
			simtest.StepN(s, 1)
			// A reroute of y from c to b while x's copy is still relocating from a (1 GiB at the
			// default rate takes about 26 s of a 30 s tick, so move it at once).
			code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", `{"commands": [{"move": {"index": "y", "shard": 0, "from_node": "c", "to_node": "b"}}]}`)
			if code != 200 {
				t.Fatalf("reroute: %d %s", code, body)
			}
			simtest.StepN(s, 4)
			if got := copiesPerNode(s, "x"); got["a"] != 0 {
				t.Fatalf("x after the exclusion: %v, want none on a", got)
			}
			res := s.Result()
			if res.Moves != tc.wantMoves+1 {
				t.Errorf("moves: got %d, want %d (the exclusion's) + 1 (the reroute)", res.Moves, tc.wantMoves)
			}
			if !tc.api && res.SafetyViolations != 0 {
				t.Errorf("the operator's relocation held a client's reroute to its invariants: %+v", res.Violations)
			}
		})
	}
}
