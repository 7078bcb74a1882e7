package scenario_test

import (
	"github.com/shardwise/shardwise/shared/sim/simtest"

	"github.com/shardwise/shardwise/shared/sim"

	"math"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/scenario"
)

func TestParseScenario(t *testing.T) {
	tests := []struct {
		name    string
		from    string // replaced in minimal
		to      string
		wantErr string // substring; empty means valid
	}{
		{name: "minimal is valid"},
		{name: "unknown top-level field", from: `"seed": 1`, to: `"seed": 1, "sead": 2`, wantErr: "sead: unknown field"},
		{name: "unknown nested field names its path", from: `{"name": "b"}`, to: `{"name": "b", "zonee": "a"}`, wantErr: "nodes[1].zonee: unknown field"},
		{name: "unknown profile kind", from: `"kind": "constant"`, to: `"kind": "stepp"`, wantErr: `indices[0].write_load.kind: unknown kind "stepp"`},
		{name: "profile field of another kind", from: `"value": 1}`, to: `"value": 1, "after": 2}`, wantErr: `indices[0].write_load.after: not a field of kind "constant"`},
		{name: "profile missing required field", from: `{"kind": "constant", "value": 1}`, to: `{"kind": "step", "before": 1, "at_seconds": 5}`, wantErr: "indices[0].write_load.after: required"},
		{name: "negative load", from: `"value": 1`, to: `"value": -1`, wantErr: "indices[0].write_load.value: must be a non-negative load"},
		{name: "zero tick", from: `"tick_seconds": 30`, to: `"tick_seconds": 0`, wantErr: "tick_seconds: must be positive"},
		{name: "duration shorter than a tick", from: `"duration_seconds": 300`, to: `"duration_seconds": 10`, wantErr: "duration_seconds"},
		{name: "no nodes", from: `[{"name": "a"}, {"name": "b"}, {"name": "c"}]`, to: `[]`, wantErr: "nodes: at least one node"},
		{name: "duplicate node", from: `{"name": "c"}`, to: `{"name": "a"}`, wantErr: `nodes[2].name: duplicate node name "a"`},
		{name: "placement names unknown node", from: `["b", "c"]]`, to: `["b", "z"]]`, wantErr: `indices[0].placement[1][1]: unknown node "z"`},
		{name: "two copies on one node", from: `["b", "c"]]`, to: `["b", "b"]]`, wantErr: `indices[0].placement[1][1]: two copies of shard 1 on node "b"`},
		{name: "placement entry too short", from: `["b", "c"]]`, to: `["b"]]`, wantErr: "indices[0].placement[1]: has 1 nodes, want replicas+1 = 2"},
		{name: "placement length", from: `[["a", "b"], ["b", "c"]]`, to: `[["a", "b"]]`, wantErr: "indices[0].placement: has 1 entries for 2 primaries"},
		{name: "shard weights length", from: `"shard_bytes": 1024`, to: `"shard_bytes": 1024, "shard_weights": [1]`, wantErr: "indices[0].shard_weights: has 1 entries for 2 primaries"},
		{name: "uppercase index name", from: `"name": "x"`, to: `"name": "X"`, wantErr: "indices[0].name"},
		{name: "zero primaries", from: `"primaries": 2`, to: `"primaries": 0`, wantErr: "indices[0].primaries"},
		{name: "unknown event kind", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "explode"}]`, wantErr: `events[0].kind: unknown kind "explode"`},
		{name: "event field of another kind", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "node_leave", "node": "a", "rate": 0.5}]`, wantErr: `events[0].rate: not a field of kind "node_leave"`},
		{name: "leave of unknown node", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "node_leave", "node": "q"}]`, wantErr: `events[0].node: node "q" is not in the cluster`},
		{name: "join reusing a name", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "node_join", "node": {"name": "a"}}]`, wantErr: `events[0].node.name: node name "a" was already used`},
		{name: "join then leave is valid", from: `"events": []`, to: `"events": [{"at_seconds": 20, "kind": "node_leave", "node": "d"}, {"at_seconds": 10, "kind": "node_join", "node": {"name": "d"}}]`},
		{name: "set load on unknown index", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "set_write_load", "index": "nope", "load": {"kind": "constant", "value": 1}}]`, wantErr: `events[0].index: unknown index "nope"`},
		{name: "set load without a load", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "set_write_load", "index": "x"}]`, wantErr: "events[0].load: required"},
		{name: "api_errors rate out of range", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "api_errors", "rate": 2, "until_seconds": 20}]`, wantErr: "events[0].rate"},
		{name: "fault window ends before it starts", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "reroute_rejects", "until_seconds": 5}]`, wantErr: "events[0].until_seconds"},
		{name: "event past the end", from: `"events": []`, to: `"events": [{"at_seconds": 900, "kind": "reroute_rejects", "until_seconds": 950}]`, wantErr: "events[0].at_seconds"},
		{name: "group with unknown skew", from: `"events": []`, to: `"index_groups": [{"name_prefix": "g-", "count": 2, "primaries": 1, "replicas": 0, "shard_bytes": 1, "skew": {"kind": "pareto"}}], "events": []`, wantErr: `index_groups[0].skew.kind: unknown kind "pareto"`},
		{name: "group member clashes with an index", from: `"indices": [{"name": "x",`, to: `"index_groups": [{"name_prefix": "g-", "count": 3, "primaries": 1, "replicas": 0, "shard_bytes": 1}], "indices": [{"name": "g-1",`, wantErr: `index_groups[0].name_prefix: index "g-1" already exists`},
		{name: "group event on unknown group", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "set_search_load", "group": "g-", "load": {"kind": "constant", "value": 1}}]`, wantErr: `events[0].group: no index_groups entry has name_prefix "g-"`},
		{name: "series points out of order", from: `{"kind": "constant", "value": 1}`, to: `{"kind": "series", "points": [[10, 1], [5, 2]]}`, wantErr: "indices[0].write_load.points[1]"},
		{name: "series point with three numbers", from: `{"kind": "constant", "value": 1}`, to: `{"kind": "series", "points": [[10, 1, 3]]}`, wantErr: "indices[0].write_load.points[0]: want [seconds, value]"},
		{name: "sine going negative", from: `{"kind": "constant", "value": 1}`, to: `{"kind": "sine", "mean": 1, "amplitude": 2, "period_seconds": 60}`, wantErr: "indices[0].write_load.amplitude"},
		{name: "type mismatch", from: `"seed": 1`, to: `"seed": "one"`, wantErr: "parse scenario"},
		{name: "trailing data", from: `"events": []
}`, to: `"events": []
} {}`, wantErr: "10:3: trailing data after the JSON document"},
		{name: "watermark above one", from: `"builtin_balancer": true`, to: `"builtin_balancer": true, "disk_high_watermark": 1.5`, wantErr: "cluster.disk_high_watermark"},
		{name: "negative replay speed", from: `"builtin_balancer": true`, to: `"builtin_balancer": true, "translog_replay_speed": -0.2`, wantErr: "cluster.translog_replay_speed: must be a positive number of thread-seconds replayed a second, or 0 to turn the replay off"},
		{name: "replay speed 0 turns the replay off and is valid", from: `"builtin_balancer": true`, to: `"builtin_balancer": true, "translog_replay_speed": 0`},
		{name: "replay speed as text", from: `"builtin_balancer": true`, to: `"builtin_balancer": true, "translog_replay_speed": "fast"`, wantErr: "parse scenario"},
		{name: "leave takes a name, not an object", from: `"events": []`, to: `"events": [{"at_seconds": 10, "kind": "node_leave", "node": {"name": "a"}}]`, wantErr: "events[0].node: node_leave takes a node name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := simtest.Minimal
			if tc.from != "" {
				if !strings.Contains(doc, tc.from) {
					t.Fatalf("test setup: %q not in the minimal scenario", tc.from)
				}
				doc = strings.Replace(doc, tc.from, tc.to, 1)
			}
			sc, err := scenario.ParseScenario([]byte(doc))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseScenario: got error %v, want none", err)
				}
				if sc.Name != "t" {
					t.Errorf("name: got %q, want %q", sc.Name, "t")
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseScenario: got no error, want one containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseScenario error: got %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestSharedScenariosParse(t *testing.T) {
	for _, name := range []string{"steady", "write-hotspot", "write-hotspot-placement", "search-spike", "shard-outweighs-node"} {
		t.Run(name, func(t *testing.T) {
			sc := simtest.LoadShared(t, name)
			if sc.Name != name {
				t.Errorf("name: got %q, want %q", sc.Name, name)
			}
			if _, err := sim.New(sc, sim.Options{}); err != nil {
				t.Errorf("New: %v", err)
			}
		})
	}
}

func TestLoadProfileAt(t *testing.T) {
	tests := []struct {
		name string
		p    scenario.LoadProfile
		at   float64
		want float64
	}{
		{"constant", scenario.LoadProfile{Kind: scenario.ProfileConstant, Value: 2.5}, 1e6, 2.5},
		{"step before", scenario.LoadProfile{Kind: scenario.ProfileStep, Before: 1, After: 9, AtSeconds: 600}, 599.9, 1},
		{"step at the instant", scenario.LoadProfile{Kind: scenario.ProfileStep, Before: 1, After: 9, AtSeconds: 600}, 600, 9},
		{"ramp before start", scenario.LoadProfile{Kind: scenario.ProfileRamp, From: 0.1, To: 6, StartSeconds: 900, EndSeconds: 1500}, 0, 0.1},
		{"ramp midway", scenario.LoadProfile{Kind: scenario.ProfileRamp, From: 0, To: 6, StartSeconds: 900, EndSeconds: 1500}, 1200, 3},
		{"ramp after end", scenario.LoadProfile{Kind: scenario.ProfileRamp, From: 0.1, To: 6, StartSeconds: 900, EndSeconds: 1500}, 5000, 6},
		{"sine at zero", scenario.LoadProfile{Kind: scenario.ProfileSine, Mean: 5, Amplitude: 2, PeriodSeconds: 100}, 0, 5},
		{"sine at quarter period", scenario.LoadProfile{Kind: scenario.ProfileSine, Mean: 5, Amplitude: 2, PeriodSeconds: 100}, 25, 7},
		{"sine at three quarters", scenario.LoadProfile{Kind: scenario.ProfileSine, Mean: 5, Amplitude: 2, PeriodSeconds: 100}, 75, 3},
		{"series before first point", scenario.LoadProfile{Kind: scenario.ProfileSeries, Points: [][]float64{{600, 1}, {660, 40}}}, 0, 1},
		{"series interpolates", scenario.LoadProfile{Kind: scenario.ProfileSeries, Points: [][]float64{{600, 1}, {660, 40}}}, 630, 20.5},
		{"series on a point", scenario.LoadProfile{Kind: scenario.ProfileSeries, Points: [][]float64{{0, 1}, {600, 1}, {660, 40}}}, 600, 1},
		{"series after last point", scenario.LoadProfile{Kind: scenario.ProfileSeries, Points: [][]float64{{600, 1}, {660, 40}}}, 9999, 40},
		{"unknown kind is zero", scenario.LoadProfile{Kind: "other", Value: 3}, 10, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.At(tc.at); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("At(%v): got %v, want %v", tc.at, got, tc.want)
			}
		})
	}
}

func TestZipfShares(t *testing.T) {
	tests := []struct {
		name string
		n    int
		s    float64
		want []float64
	}{
		{"even", 4, 0, []float64{0.25, 0.25, 0.25, 0.25}},
		{"zipf s=1 over 3", 3, 1, []float64{6.0 / 11, 3.0 / 11, 2.0 / 11}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := model.ZipfShares(tc.n, tc.s)
			for i := range tc.want {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Errorf("share %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
