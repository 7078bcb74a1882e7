package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

func TestRelocationTiming(t *testing.T) {
	// Three single-copy shards move to d. Each recovery runs at recovery_bytes_per_second;
	// node_concurrent_recoveries lets only some run into d at once, the rest queue. The copies are
	// searched, not written, so their files are the whole recovery (a written copy's translog
	// replay is TestHotCopyRecovery's).
	tests := []struct {
		name        string
		shardBytes  int64
		rate        float64
		concurrent  int
		wantStarted []int // tick after which each of shards 0, 1, 2 is STARTED on d
	}{
		// d's 40 MiB/s is shared by the recoveries into it (indices.recovery.max_bytes_per_sec is
		// a node's total): three of 5 GiB together take 384 s, thirteen 30 s ticks.
		{"three of 5 GiB at once share the target's 40 MiB/s: 384 s", 5 << 30, 40 << 20, 3, []int{13, 13, 13}},
		{"two at a time share it (256 s), the third then has it alone (128 s)", 5 << 30, 40 << 20, 2, []int{9, 9, 14}},
		{"one at a time: 128 s each, five 30 s ticks", 5 << 30, 40 << 20, 1, []int{5, 10, 15}},
		{"small shards finish in one tick", 1 << 20, 40 << 20, 3, []int{1, 1, 1}},
		{"one tick of transfer each, three sharing: three ticks", 30 * (40 << 20), 40 << 20, 3, []int{3, 3, 3}},
		{"just over one tick each, three sharing: four ticks", 30*(40<<20) + 1, 40 << 20, 3, []int{4, 4, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"name": "reloc", "seed": 1, "tick_seconds": 30, "duration_seconds": 3000,
			  "cluster": {"builtin_balancer": false, "recovery_bytes_per_second": %v, "node_concurrent_recoveries": %d},
			  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
			  "indices": [{"name": "big", "primaries": 3, "replicas": 0, "shard_bytes": %d,
			    "search_load": {"kind": "constant", "value": 3}, "placement": [["a"], ["b"], ["c"]]}]}`,
				tc.rate, tc.concurrent, tc.shardBytes)
			s := simtest.MustSim(t, doc)
			code, body := simtest.Call(t, s, "POST", "/_cluster/reroute",
				simtest.Commands(simtest.Move("big", 0, "a", "d"), simtest.Move("big", 1, "b", "d"), simtest.Move("big", 2, "c", "d")))
			if code != 200 {
				t.Fatalf("reroute: %d %s", code, body)
			}
			got := make([]int, 3)
			for tick := 1; tick <= 20; tick++ {
				rep := s.Step()
				for sh := range 3 {
					if got[sh] == 0 && simtest.CopyOn(s, "big", sh, "d") == "STARTED" {
						got[sh] = tick
					}
				}
				// Until a relocation ends its load stays on the source.
				for _, n := range rep.Nodes {
					if n.Name == "d" && got[0] == 0 && got[1] == 0 && got[2] == 0 && n.SearchUtil != 0 {
						t.Fatalf("tick %d: d carries search load %v before any relocation finished", tick, n.SearchUtil)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.wantStarted) {
				t.Errorf("ticks to STARTED on d: got %v, want %v", got, tc.wantStarted)
			}
		})
	}
}

func TestRelocatedCopyCountersRestart(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	simtest.StepN(s, 2)
	before := shardIndexTotal(t, s, "x", 0, "a")
	if before <= 0 {
		t.Fatalf("x[0] on a: index_total %v after two ticks of load, want > 0", before)
	}
	if code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("x", 0, "a", "c"))); code != 200 {
		t.Fatalf("reroute: %d %s", code, body)
	}
	s.Step() // 1 MiB moves within a tick
	if got := shardIndexTotal(t, s, "x", 0, "c"); got != 0 {
		t.Errorf("x[0] on c right after the move: index_total %v, want 0 (a new copy starts its counters at 0)", got)
	}
	s.Step()
	if got := shardIndexTotal(t, s, "x", 0, "c"); got <= 0 {
		t.Errorf("x[0] on c one tick later: index_total %v, want > 0", got)
	}
}

// shardIndexTotal reads a copy's indexing.index_total from GET {index}/_stats?level=shards.
func shardIndexTotal(t *testing.T, s *sim.Sim, index string, shard int, nodeName string) float64 {
	t.Helper()
	id := simtest.NodeID(t, s, nodeName)
	code, body := simtest.CallJSON(t, s, "GET", "/"+index+"/_stats?level=shards", "")
	if code != 200 {
		t.Fatalf("stats: %d", code)
	}
	entries, _ := simtest.Dig(body, "indices", index, "shards", fmt.Sprint(shard)).([]any)
	for _, e := range entries {
		if simtest.Dig(e, "routing", "node") == id {
			v, _ := simtest.Dig(e, "indexing", "index_total").(float64)
			return v
		}
	}
	t.Fatalf("no copy of %s[%d] on %s in %v", index, shard, nodeName, entries)
	return 0
}

func TestNodeLeaveAndJoin(t *testing.T) {
	doc := `{"name": "churn", "seed": 9, "tick_seconds": 30, "duration_seconds": 3000,
	  "cluster": {"builtin_balancer": true, "recovery_bytes_per_second": 1048576},
	  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
	  "indices": [{"name": "x", "primaries": 3, "replicas": 1, "shard_bytes": 1048576,
	    "write_load": {"kind": "constant", "value": 2}, "placement": [["a", "b"], ["b", "c"], ["c", "a"]]}],
	  "events": [{"at_seconds": 30, "kind": "node_leave", "node": "a"},
	             {"at_seconds": 600, "kind": "node_join", "node": {"name": "d", "zone": "z1"}}]}`
	s := simtest.MustSim(t, doc)
	s.Step()
	rep := s.Step() // node a leaves at 30 s; the clock now reads 60 s
	if rep.Health != "yellow" || rep.Unassigned != 2 {
		t.Errorf("after a leaves: health %s with %d unassigned, want yellow with 2", rep.Health, rep.Unassigned)
	}
	_, h := simtest.CallJSON(t, s, "GET", "/_cluster/health", "")
	if h["delayed_unassigned_shards"] != float64(2) || h["number_of_data_nodes"] != float64(2) {
		t.Errorf("health after a leaves: got %v, want 2 delayed unassigned replicas and 2 data nodes", h)
	}
	s.Mu.RLock()
	promoted := s.ByIndex["x"].Shards[0].Primary().Node.Name
	term := s.ByIndex["x"].Shards[0].Term
	s.Mu.RUnlock()
	if promoted != "b" || term != 2 {
		t.Errorf("x[0] primary: got %s term %d, want the replica on b promoted at term 2", promoted, term)
	}
	// Replicas wait index.unassigned.node_left.delayed_timeout (1m) before reallocating: not at 60 s...
	if got := simtest.CopyOn(s, "x", 0, "c"); got != "" {
		t.Errorf("x[0] on c 30 s after a left: got %q, want nothing yet", got)
	}
	// ...but at 90 s, recovering from the new primary.
	s.Step()
	if got := simtest.CopyOn(s, "x", 0, "c"); got != "INITIALIZING" {
		t.Errorf("x[0] on c 60 s after a left: got %q, want INITIALIZING", got)
	}
	simtest.StepN(s, 2)
	if got := simtest.CopyOn(s, "x", 0, "c"); got != "STARTED" {
		t.Errorf("x[0] on c after its 1 MiB recovered at 1 MiB/s: got %q, want STARTED", got)
	}
	simtest.StepN(s, 25) // past 600 s: d joins and the built-in balancer moves copies onto it
	d := simtest.NodeID(t, s, "d")
	_, nodes := simtest.CallJSON(t, s, "GET", "/_nodes/d/stats/indices", "")
	if simtest.Dig(nodes, "nodes", d, "attributes", "zone") != "z1" {
		t.Errorf("d attributes: got %v, want zone z1", simtest.Dig(nodes, "nodes", d, "attributes"))
	}
	_, state := simtest.CallJSON(t, s, "GET", "/_cluster/state/routing_nodes", "")
	if held, _ := simtest.Dig(state, "routing_nodes", "nodes", d).([]any); len(held) != 2 {
		t.Errorf("node d holds %d copies after joining, want 2 (6 copies over 3 nodes)", len(held))
	}
	if _, h = simtest.CallJSON(t, s, "GET", "/_cluster/health", ""); h["status"] != "green" {
		t.Errorf("health at the end: %v", h["status"])
	}
}

func TestLostPrimary(t *testing.T) {
	doc := `{"name": "lost", "seed": 9, "tick_seconds": 30, "duration_seconds": 3000,
	  "cluster": {"builtin_balancer": true},
	  "nodes": [{"name": "a"}, {"name": "b"}],
	  "indices": [{"name": "solo", "primaries": 1, "replicas": 0, "shard_bytes": 1048576, "placement": [["a"]]}],
	  "events": [{"at_seconds": 0, "kind": "node_leave", "node": "a"}]}`
	s := simtest.MustSim(t, doc)
	if rep := s.Step(); rep.Health != "red" {
		t.Errorf("after the only copy's node left: health %s, want red", rep.Health)
	}
	_, ex := simtest.CallJSON(t, s, "GET", "/_cluster/allocation/explain", "")
	if ex["can_allocate"] != "no_valid_shard_copy" || ex["current_state"] != "unassigned" {
		t.Errorf("explain: got can_allocate %v state %v, want no_valid_shard_copy of an unassigned shard", ex["can_allocate"], ex["current_state"])
	}
	code, body := simtest.CallJSON(t, s, "POST", "/_cluster/reroute", `{"commands":[{"allocate_empty_primary":{"index":"solo","shard":0,"node":"b"}}]}`)
	if code != 400 || !strings.Contains(fmt.Sprint(simtest.Dig(body, "error", "reason")), "accept_data_loss") {
		t.Errorf("allocate_empty_primary without accept_data_loss: got %d %v", code, body)
	}
	simtest.MustReroute(t, s, `{"commands":[{"allocate_empty_primary":{"index":"solo","shard":0,"node":"b","accept_data_loss":true}}]}`)
	if rep := s.Step(); rep.Health != "green" {
		t.Errorf("after allocate_empty_primary and a tick: health %s, want green", rep.Health)
	}
}

func TestReplicaChanges(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index":{"number_of_replicas":2}}`)
	if code != 200 || !strings.Contains(body, `"acknowledged":true`) {
		t.Fatalf("raise replicas: %d %s", code, body)
	}
	_, h := simtest.CallJSON(t, s, "GET", "/_cluster/health", "")
	if h["status"] != "yellow" || h["initializing_shards"] != float64(2) {
		t.Errorf("after raising replicas: got %v, want yellow with 2 initializing", h)
	}
	s.Step()
	_, h = simtest.CallJSON(t, s, "GET", "/_cluster/health", "")
	if h["status"] != "green" || h["active_shards"] != float64(7) {
		t.Errorf("one tick later (1 MiB recovers within a tick): got %v, want green with 7 active", h)
	}
	if code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"number_of_replicas":0}`); code != 200 {
		t.Fatalf("lower replicas: %d %s", code, body)
	}
	_, h = simtest.CallJSON(t, s, "GET", "/_cluster/health", "")
	if h["active_shards"] != float64(3) {
		t.Errorf("after lowering replicas to 0: active_shards %v, want 3", h["active_shards"])
	}
	if code, _ := simtest.Call(t, s, "PUT", "/x/_settings", `{"number_of_replicas":0}`); code != 200 {
		t.Fatalf("repeat setting")
	}
	s.Step()
	r := s.Result()
	if r.ReplicaChanges != 2 {
		t.Errorf("replica_changes: got %d, want 2 (the repeated value changes nothing)", r.ReplicaChanges)
	}
	// Tick 1 carried 4 replica copies (x with 2 replicas), tick 2 none: 4 × 30 s = 1/30 h.
	if math.Abs(r.ReplicaNodeHours-4*30.0/3600) > 1e-9 {
		t.Errorf("replica_node_hours: got %v, want %v", r.ReplicaNodeHours, 4*30.0/3600)
	}
}

func TestLoadEvents(t *testing.T) {
	doc := `{"name": "loads", "seed": 4, "tick_seconds": 30, "duration_seconds": 600,
	  "cluster": {"builtin_balancer": false},
	  "nodes": [{"name": "a", "write_threads": 100}],
	  "indices": [{"name": "solo", "primaries": 1, "replicas": 0, "shard_bytes": 1, "write_load": {"kind": "constant", "value": 1}}],
	  "index_groups": [{"name_prefix": "g-", "count": 3, "primaries": 1, "replicas": 0, "shard_bytes": 1,
	    "write_load": {"kind": "constant", "value": 11}, "skew": {"kind": "zipf", "s": 1}}],
	  "events": [{"at_seconds": 60, "kind": "set_write_load", "index": "solo", "load": {"kind": "constant", "value": 5}},
	             {"at_seconds": 60, "kind": "set_write_load", "group": "g-", "load": {"kind": "constant", "value": 22}},
	             {"at_seconds": 90, "kind": "set_write_load", "index": "g-2", "load": {"kind": "constant", "value": 0}}]}`
	tests := []struct {
		ticks int
		want  map[string]float64
	}{
		{1, map[string]float64{"solo": 1, "g-0": 6, "g-1": 3, "g-2": 2}},
		{3, map[string]float64{"solo": 5, "g-0": 12, "g-1": 6, "g-2": 4}},
		{4, map[string]float64{"solo": 5, "g-0": 12, "g-1": 6, "g-2": 0}},
	}
	s := simtest.MustSim(t, doc)
	done := 0
	for _, tc := range tests {
		t.Run(fmt.Sprintf("tick %d", tc.ticks), func(t *testing.T) {
			simtest.StepN(s, tc.ticks-done)
			done = tc.ticks
			s.Mu.RLock()
			defer s.Mu.RUnlock()
			for name, want := range tc.want {
				got := s.ByIndex[name].Shards[0].Copies[0].WriteDemand
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("%s write load: got %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestAPIFaults(t *testing.T) {
	doc := strings.Replace(simtest.Minimal, `"events": []`, `"events": [
	  {"at_seconds": 30, "kind": "api_errors", "rate": 1, "until_seconds": 60},
	  {"at_seconds": 60, "kind": "api_latency", "ms": 40, "until_seconds": 90}]`, 1)
	s := simtest.MustSim(t, doc)
	if code, _ := simtest.Call(t, s, "GET", "/_cluster/health", ""); code != 200 {
		t.Fatalf("at 0 s, before any fault: %d", code)
	}
	s.Step() // the clock reads 30 s: inside api_errors
	code, body := simtest.CallJSON(t, s, "GET", "/_cluster/health", "")
	if code != 503 || simtest.Dig(body, "error", "type") != "cluster_block_exception" || simtest.Dig(body, "status") != float64(503) {
		t.Errorf("at 30 s, api_errors at rate 1: got %d %v, want 503 cluster_block_exception", code, body)
	}
	s.Step() // 60 s: errors over, latency on
	start := time.Now()
	if code, _ := simtest.Call(t, s, "GET", "/", ""); code != 200 {
		t.Errorf("at 60 s, api_latency: status %d, want 200", code)
	}
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Errorf("at 60 s, api_latency of 40 ms: the request took %v, want at least 40 ms of real delay", took)
	}
	s.Step() // 90 s: all clear
	if code, _ := simtest.Call(t, s, "GET", "/", ""); code != 200 {
		t.Errorf("at 90 s: status %d, want 200", code)
	}
	if rate, latency, _ := s.REST.FaultsAt(90); rate != 0 || latency != 0 {
		t.Errorf("faults at 90 s: rate %v latency %v, want none", rate, latency)
	}
}

func TestAPIErrorRateIsSeeded(t *testing.T) {
	doc := strings.Replace(simtest.Minimal, `"events": []`, `"events": [{"at_seconds": 0, "kind": "api_errors", "rate": 0.5, "until_seconds": 300}]`, 1)
	pattern := func() string {
		s := simtest.MustSim(t, doc)
		var b strings.Builder
		for range 64 {
			code, _ := simtest.Call(t, s, "GET", "/", "")
			b.WriteString(map[bool]string{true: "x", false: "."}[code == 503])
		}
		return b.String()
	}
	a, b := pattern(), pattern()
	if a != b {
		t.Errorf("same seed, different failure pattern:\n%s\n%s", a, b)
	}
	if n := strings.Count(a, "x"); n < 16 || n > 48 {
		t.Errorf("rate 0.5 failed %d of 64 requests", n)
	}
}

func TestBuiltinBalancerUndoesCountUnbalancingMove(t *testing.T) {
	doc := `{"name": "undo", "seed": 2, "tick_seconds": 30, "duration_seconds": 3000,
	  "cluster": {"builtin_balancer": true},
	  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
	  "indices": [{"name": "x", "primaries": 8, "replicas": 0, "shard_bytes": 1048576,
	    "placement": [["a"], ["a"], ["b"], ["b"], ["c"], ["c"], ["d"], ["d"]]}]}`
	tests := []struct {
		name        string
		cmd         string
		wantUndone  int
		wantOnStart string // where x[7] ends
	}{
		{"a move that unbalances counts is undone", simtest.Move("x", 7, "d", "a"), 1, "d"},
		{"a swap keeps counts even and stays", simtest.Commands(simtest.Move("x", 7, "d", "a"), simtest.Move("x", 0, "a", "d")), 0, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, doc)
			s.Step()
			body := tc.cmd
			if !strings.HasPrefix(body, `{"commands"`) {
				body = simtest.Commands(body)
			}
			if code, resp := simtest.Call(t, s, "POST", "/_cluster/reroute", body); code != 200 {
				t.Fatalf("reroute: %d %s", code, resp)
			}
			simtest.StepN(s, 6)
			r := s.Result()
			if r.MovesUndoneByBuiltin != tc.wantUndone {
				t.Errorf("moves_undone_by_builtin: got %d, want %d", r.MovesUndoneByBuiltin, tc.wantUndone)
			}
			if got := simtest.CopyOn(s, "x", 7, tc.wantOnStart); got != "STARTED" {
				t.Errorf("x[7] on %s: got %q, want STARTED", tc.wantOnStart, got)
			}
		})
	}
}

func TestSafetyViolations(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *sim.Sim)
		want  []string
	}{
		{"a clean move is no violation", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
		}, nil},
		{"a move while an earlier reroute move relocates", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("y", 0, "a", "b")))
		}, []string{"move [y][0] a -> b accepted while an earlier reroute move from or to a or b was still relocating",
			"reroute call 2 of this cycle started 1 relocations: two movers acting on the cluster at once"}},

		{"a young index's empty copy leaving a node an earlier reroute move relocates from", func(t *testing.T, s *sim.Sim) {
			slowRecoveries(t, s)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
			s.Step()
			youngEmpty(s, "y")
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("y", 0, "a", "b")))
		}, nil},
		{"a young index's empty copy going to a node an earlier reroute move relocates to", func(t *testing.T, s *sim.Sim) {
			slowRecoveries(t, s)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
			s.Step()
			youngEmpty(s, "y")
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("y", 0, "a", "c")))
		}, []string{"move [y][0] a -> c accepted while an earlier reroute move from or to a or c was still relocating"}},
		{"a swap completed in a second call, its return the other way while the first relocates", func(t *testing.T, s *sim.Sim) {
			slowRecoveries(t, s)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("y", 0, "a", "c")))
			s.Step()
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 1, "c", "a")))
		}, nil},
		{"a second call that is not the other way between the same nodes", func(t *testing.T, s *sim.Sim) {
			slowRecoveries(t, s)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("y", 0, "a", "c")))
			s.Step()
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "b", "c")))
		}, []string{"move [x][0] b -> c accepted while an earlier reroute move from or to b or c was still relocating"}},
		{"two moves in one call within the node recovery limits", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("y", 0, "a", "c")))
		}, nil},
		{"a move taking its source over node_concurrent_outgoing_recoveries", func(t *testing.T, s *sim.Sim) {
			if code, _ := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"transient":{"cluster.routing.allocation.node_concurrent_outgoing_recoveries":1}}`); code != 200 {
				t.Fatal("set node_concurrent_outgoing_recoveries")
			}
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("y", 0, "a", "b")))
		}, []string{"move [y][0] a -> b takes a to 2 outgoing recoveries, over node_concurrent_outgoing_recoveries 1"}},
		{"a move while the cluster is yellow", func(t *testing.T, s *sim.Sim) {
			if code, _ := simtest.Call(t, s, "PUT", "/y/_settings", `{"number_of_replicas":3}`); code != 200 {
				t.Fatal("raise replicas")
			}
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
		}, []string{"move [x][0] a -> c accepted while cluster health was yellow"}},
		{"the same move twice with nothing in between", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
			simtest.MustReroute(t, s, `{"commands":[{"cancel":{"index":"x","shard":0,"node":"c"}}]}`)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
		}, []string{"move [x][0] a -> c issued twice with no other movement of the shard in between",
			"reroute call 2 of this cycle started 1 relocations: two movers acting on the cluster at once"}},
		{"a reroute leaves a shard with no active copy", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, `{"commands":[{"cancel":{"index":"y","shard":0,"node":"a","allow_primary":true}}]}`)
		}, []string{"shard [y][0] left with no active copy by a reroute"}},
		{"two copies of a shard on one node, reported once", func(t *testing.T, s *sim.Sim) {
			s.Mu.Lock()
			sh := s.ByIndex["x"].Shards[0]
			sh.Copies[1].Node = sh.Copies[0].Node // corrupt the routing the way a bug would
			s.Mu.Unlock()
			simtest.StepN(s, 3)
		}, []string{"two copies of shard [x][0] on node a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.RerouteScenario)
			tc.setup(t, s)
			r := s.Result()
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.What)
			}
			if !reflect.DeepEqual(got, tc.want) || r.SafetyViolations != len(tc.want) {
				t.Errorf("violations: got %d %q, want %q", r.SafetyViolations, got, tc.want)
			}
		})
	}
}

// youngEmpty makes an index as a rollover leaves it: created now, its shards empty.
func youngEmpty(s *sim.Sim, index string) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	ix := s.ByIndex[index]
	ix.Created, ix.ShardBytes = s.NowLocked(), 0
}

// slowRecoveries has a 1 MiB copy relocate over several ticks.
func slowRecoveries(t *testing.T, s *sim.Sim) {
	t.Helper()
	if code, resp := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"transient":{"indices.recovery.max_bytes_per_sec":"4kb"}}`); code != 200 {
		t.Fatalf("set indices.recovery.max_bytes_per_sec: %d %s", code, resp)
	}
}

// shardwise never has two copies of a shard in flight at once: a move of one while another
// relocates or initializes, or two in one call, is a violation.
func TestTwoCopiesInFlight(t *testing.T) {
	const sc = `{
  "name": "in-flight", "seed": 5, "tick_seconds": 30, "duration_seconds": 3000,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
  "indices": [
    {"name": "x", "primaries": 2, "replicas": 1, "shard_bytes": 10737418240,
     "write_load": {"kind": "constant", "value": 1}, "placement": [["a", "b"], ["c", "d"]]}
  ]
}`
	tests := []struct {
		name  string
		setup func(t *testing.T, s *sim.Sim)
		want  []string
	}{
		{"the other copy moves once the first has landed", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
			simtest.StepN(s, 60)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "b", "d")))
		}, nil},
		{"a move while another copy of the shard relocates", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c")))
			simtest.StepN(s, 1)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "b", "d")))
		}, []string{"move [x][0] b -> d accepted while another copy of the shard was still recovering: two copies of a shard in flight at once"}},
		{"two copies of a shard in one call", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("x", 0, "b", "d")))
		}, []string{"move [x][0] b -> d accepted in the same call as a move of another copy of the shard: two copies of a shard in flight at once"}},
		{"copies of two shards in one call", func(t *testing.T, s *sim.Sim) {
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("x", 1, "c", "b")))
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, sc)
			tc.setup(t, s)
			var got []string
			for _, v := range s.Result().Violations {
				got = append(got, v.What)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("violations: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	run := func(sc *scenario.Scenario) (model.Result, string) {
		s, err := sim.New(sc, sim.Options{})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		for i := 0; !s.Done(); i++ {
			s.Step()
			if i == 20 {
				simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("clicks", 5, "node-4", "node-2")))
			}
		}
		_, state := simtest.Call(t, s, "GET", "/_cluster/state", "")
		return s.Result(), state
	}
	sc := simtest.LoadShared(t, "write-hotspot-placement")
	r1, st1 := run(sc)
	r2, st2 := run(simtest.LoadShared(t, "write-hotspot-placement"))
	if !reflect.DeepEqual(r1, r2) {
		a, _ := json.Marshal(r1)
		b, _ := json.Marshal(r2)
		t.Errorf("same seed, different results:\n%s\n%s", a, b)
	}
	if st1 != st2 {
		t.Errorf("same seed, different final cluster state")
	}
	other := simtest.LoadShared(t, "write-hotspot-placement")
	other.Seed++
	_, st3 := run(other)
	if st3 == st1 {
		t.Errorf("a different seed gave the same cluster state (ids and placement should change)")
	}
}

func TestWriteHotspotScenario(t *testing.T) {
	// The original write-hotspot example (scenarios/write-hotspot-placement.json) places most of clicks' copies on node-0 and node-1. With the
	// built-in balancer off they saturate after the step at 600 s; with it on, OpenSearch's index
	// balance (weight 0.55) spreads clicks' copies before the step and no node gets hot.
	tests := []struct {
		name        string
		builtin     bool
		wantHot     bool
		wantHotNode []string
	}{
		{"without the built-in balancer node-0 and node-1 get hot", false, true, []string{"node-0", "node-1"}},
		{"with the built-in balancer nothing gets hot", true, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := simtest.LoadShared(t, "write-hotspot-placement")
			sc.Cluster.BuiltinBalancer = &tc.builtin
			s, err := sim.New(sc, sim.Options{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			hotBefore := false
			hotAfter := map[string]bool{}
			for !s.Done() {
				rep := s.Step()
				for _, n := range rep.Nodes {
					if !n.Hot {
						continue
					}
					if rep.At.Sub(s.Start) <= 600*time.Second {
						hotBefore = true
					} else {
						hotAfter[n.Name] = true
					}
				}
			}
			if hotBefore {
				t.Errorf("a node was hot before the step at 600 s")
			}
			var names []string
			for _, n := range []string{"node-0", "node-1", "node-2", "node-3", "node-4", "node-5"} {
				if hotAfter[n] {
					names = append(names, n)
				}
			}
			if !reflect.DeepEqual(names, tc.wantHotNode) {
				t.Errorf("hot nodes after 600 s: got %v, want %v", names, tc.wantHotNode)
			}
			if r := s.Result(); (r.HotNodeSeconds > 0) != tc.wantHot {
				t.Errorf("hot_node_seconds: got %v, want hot=%v", r.HotNodeSeconds, tc.wantHot)
			}
		})
	}
}

func TestClusterExcludeMovesCopiesOff(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"transient":{"cluster.routing.allocation.exclude._name":"a"}}`)
	if code != 200 || !strings.Contains(body, `"exclude":{"_name":"a"}`) {
		t.Fatalf("put settings: %d %s", code, body)
	}
	simtest.StepN(s, 3)
	for _, sh := range []struct {
		index string
		num   int
	}{{"x", 0}, {"y", 0}} {
		if got := simtest.CopyOn(s, sh.index, sh.num, "a"); got != "" {
			t.Errorf("%s[%d] still on excluded node a: %s", sh.index, sh.num, got)
		}
	}
	r := s.Result()
	if r.AllocatorRelocations != 2 || r.Moves != 0 {
		t.Errorf("allocator relocations %d moves %d, want 2 and 0", r.AllocatorRelocations, r.Moves)
	}
}

// TestIndexExcludeMovesAreMoves: an index's allocation filter is only ever set through the
// settings API, by shardwise's allocation-filter strategy, so the relocations the allocator makes
// to honour it are counted as shardwise's moves.
func TestIndexExcludeMovesAreMoves(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	if code, body := simtest.Call(t, s, "PUT", "/y/_settings", `{"index.routing.allocation.exclude._name":"a"}`); code != 200 {
		t.Fatalf("put settings: %d %s", code, body)
	}
	simtest.StepN(s, 3)
	if got := simtest.CopyOn(s, "y", 0, "a"); got != "" {
		t.Errorf("y[0] still on excluded node a: %s", got)
	}
	r := s.Result()
	if r.AllocatorRelocations != 1 || r.Moves != 1 || r.BytesMoved != 1048576 {
		t.Errorf("allocator relocations %d, moves %d, bytes %d; want 1, 1 and 1 MiB", r.AllocatorRelocations, r.Moves, r.BytesMoved)
	}
}

func TestRunRealtime(t *testing.T) {
	tests := []struct {
		name    string
		speed   float64
		cancel  bool
		wantErr string
	}{
		{"runs to the end", 1e5, false, ""},
		{"stops when the context ends", 1e-3, true, "context canceled"},
		{"refuses a zero speed", 0, false, "speed must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.Minimal)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			} else {
				defer cancel()
			}
			err := s.RunRealtime(ctx, tc.speed)
			if tc.wantErr == "" {
				if err != nil || !s.Done() {
					t.Errorf("RunRealtime: err %v done %v, want nil and done", err, s.Done())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("RunRealtime: got %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.cancel && !errors.Is(err, context.Canceled) {
				t.Errorf("RunRealtime: got %v, want it to wrap context.Canceled", err)
			}
		})
	}
}

func TestClockAndResultBasics(t *testing.T) {
	s := simtest.MustSim(t, simtest.Minimal)
	if got := s.Now(); !got.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Now at start: got %v, want 2026-01-01T00:00:00Z", got)
	}
	simtest.StepN(s, 10)
	if !s.Done() || s.Elapsed() != 300*time.Second {
		t.Errorf("after 10 ticks of 30 s: done %v elapsed %v, want done at 5m0s", s.Done(), s.Elapsed())
	}
	start := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	s2, err := sim.New(s.Scenario(), sim.Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	s2.Step()
	if got := s2.Now(); !got.Equal(start.Add(30 * time.Second)) {
		t.Errorf("Now with a custom epoch: got %v", got)
	}
	r := s.Result()
	if r.Ticks != 10 || r.Scenario != "t" {
		t.Errorf("result: ticks %d scenario %q", r.Ticks, r.Scenario)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"scenario", "ticks", "moves", "bytes_moved", "moves_undone_by_builtin", "hot_node_seconds",
		"max_queue_latency_seconds", "p99_queue_latency_seconds", "rejected_writes", "time_to_correct_seconds",
		"replica_changes", "replica_node_hours", "p99_search_latency_ms", "safety_violations"} {
		if !strings.Contains(string(raw), `"`+key+`":`) {
			t.Errorf("result JSON lacks %q: %s", key, raw)
		}
	}
}

func TestHotspotMeasures(t *testing.T) {
	// One node of 8 WRITE threads (160 tasks/s) at load 10 (200 tasks/s) for 3 ticks, then load 6
	// (120 tasks/s): the backlog grows 1200 tasks a tick (7.5 s of wait each), then drains 1200 a tick.
	doc := `{"name": "hot", "seed": 1, "tick_seconds": 30, "duration_seconds": 300,
	  "cluster": {"builtin_balancer": false},
	  "nodes": [{"name": "a"}],
	  "indices": [{"name": "w", "primaries": 1, "replicas": 0, "shard_bytes": 1,
	    "write_load": {"kind": "series", "points": [[0, 10], [89, 10], [90, 6]]}}]}`
	s := simtest.MustSim(t, doc)
	var waits []float64
	for !s.Done() {
		waits = append(waits, s.Step().Nodes[0].QueueLatencySeconds)
	}
	want := []float64{7.5, 15, 22.5, 15, 7.5, 0.008924527146967008}
	for i, w := range want {
		if math.Abs(waits[i]-w) > 1e-6 {
			t.Errorf("tick %d wait: got %v, want %v", i+1, waits[i], w)
		}
	}
	r := s.Result()
	if r.HotNodeSeconds != 150 || r.TimeToCorrectSeconds != 150 || r.MaxQueueLatencySeconds != 22.5 {
		t.Errorf("got hot %v s, time to correct %v s, max %v s; want 150, 150, 22.5", r.HotNodeSeconds, r.TimeToCorrectSeconds, r.MaxQueueLatencySeconds)
	}
	// Ten node-ticks: p99 by nearest rank is the largest.
	if r.P99QueueLatencySeconds != 22.5 {
		t.Errorf("p99: got %v, want 22.5", r.P99QueueLatencySeconds)
	}
	if r.RejectedWrites != 0 {
		t.Errorf("rejected: got %d, want 0", r.RejectedWrites)
	}
}

// A copy an external move placed that OpenSearch's balancer moves on after a node joined or left
// since it landed is re-placed for the new topology, not undone: it counts apart. After the swap
// each node's highest-numbered copy, the one OpenSearch's balancer moves first, is a swapped one.
func TestBuiltinAfterTopologyChangeIsNoUndo(t *testing.T) {
	doc := `{"name": "join", "seed": 2, "tick_seconds": 30, "duration_seconds": 3000,
	  "cluster": {"builtin_balancer": true},
	  "nodes": [{"name": "a"}, {"name": "b"}],
	  "indices": [{"name": "x", "primaries": 4, "replicas": 0, "shard_bytes": 1048576,
	    "placement": [["a"], ["b"], ["b"], ["a"]]}],
	  "events": [%s]}`
	tests := []struct {
		name                 string
		events               string
		wantUndone, wantMore int
	}{
		{"no node joins: the swap stays", "", 0, 0},
		{"c joins after the swap landed: the balancer's move onto c is no undo", `{"at_seconds": 600, "kind": "node_join", "node": {"name": "c"}}`, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, fmt.Sprintf(doc, tc.events))
			s.Step()
			body := simtest.Commands(simtest.Move("x", 3, "a", "b"), simtest.Move("x", 1, "b", "a"))
			if code, resp := simtest.Call(t, s, "POST", "/_cluster/reroute", body); code != 200 {
				t.Fatalf("reroute: %d %s", code, resp)
			}
			simtest.StepN(s, 40)
			r := s.Result()
			if r.MovesUndoneByBuiltin != tc.wantUndone || r.MovesRebalancedAfterTopology != tc.wantMore {
				t.Errorf("undone %d, rebalanced after the topology changed %d (builtin relocations %d); want %d and %d",
					r.MovesUndoneByBuiltin, r.MovesRebalancedAfterTopology, r.BuiltinRelocations, tc.wantUndone, tc.wantMore)
			}
		})
	}
}

// TestIndexExcludeSecondCopyInFlightIsAViolation: a client's exclusion that pushes a copy off its
// node while another copy of the shard is leaving by an exclusion, or recovering, puts two copies
// of a shard in flight at once, as the same reroute move would: a safety violation. One exclusion
// alone is none.
func TestIndexExcludeSecondCopyInFlightIsAViolation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		puts       []string
		violations int
	}{
		{name: "one node excluded", puts: []string{"a"}},
		{name: "the node holding the other copy excluded while it relocates", puts: []string{"a", "a,b"}, violations: 1},
		{name: "both at once", puts: []string{"a,b"}, violations: 1},
		{name: "nodes sharing no shard", puts: []string{"a", "a,c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.RerouteScenario)
			for _, v := range tc.puts {
				if code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index.routing.allocation.exclude._name":"`+v+`"}`); code != 200 {
					t.Fatalf("put settings: %d %s", code, body)
				}
			}
			simtest.StepN(s, 1)
			if r := s.Result(); r.SafetyViolations != tc.violations {
				t.Errorf("violations %d (%+v), want %d", r.SafetyViolations, r.Violations, tc.violations)
			}
		})
	}
}
