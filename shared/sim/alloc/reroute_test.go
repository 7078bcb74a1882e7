package alloc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

func TestRerouteRefusals(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, s *sim.Sim)
		body       string
		wantStatus int
		wantType   string
		wantReason string
	}{
		{name: "unknown from node", body: simtest.Commands(simtest.Move("x", 0, "zz", "c")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "failed to resolve [zz], no matching nodes"},
		{name: "unknown to node", body: simtest.Commands(simtest.Move("x", 0, "a", "zz")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "failed to resolve [zz], no matching nodes"},
		{name: "unknown index", body: simtest.Commands(simtest.Move("nope", 0, "a", "c")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "[move_allocation] can't move 0, failed to find it on node {a}"},
		{name: "unknown shard number", body: simtest.Commands(simtest.Move("x", 7, "a", "c")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "[move_allocation] can't move 7, failed to find it on node {a}"},
		{name: "shard not on from_node", body: simtest.Commands(simtest.Move("x", 1, "a", "d")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "failed to find it on node {a}"},
		{name: "same node", body: simtest.Commands(simtest.Move("x", 0, "a", "a")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "NO(this shard is already allocated to this node"},
		{name: "target already holds a copy", body: simtest.Commands(simtest.Move("x", 0, "a", "b")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "NO(a copy of this shard is already allocated to this node"},
		{name: "shard not started", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("x", 0, "a", "c"))); code != 200 {
				t.Fatalf("setup move: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("x", 0, "a", "d")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "[move_allocation] can't move 0, shard is not started (state = RELOCATING]"},
		{name: "target excluded by an index filter", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index.routing.allocation.exclude._name":"c"}`); code != 200 {
				t.Fatalf("setup filter: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("x", 0, "a", "c")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: `NO(node matches index setting [index.routing.allocation.exclude] filters [_name:"c"])`},
		{name: "target at the index's total_shards_per_node", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index.routing.allocation.total_shards_per_node":"1"}`); code != 200 {
				t.Fatalf("setup limit: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("x", 0, "a", "c")),
			wantStatus: 400, wantType: "illegal_argument_exception",
			wantReason: "NO(too many shards [1] allocated to this node for index [x], index setting [index.routing.allocation.total_shards_per_node=1])"},
		{name: "target at the cluster's total_shards_per_node", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"persistent":{"cluster.routing.allocation.total_shards_per_node":2}}`); code != 200 {
				t.Fatalf("setup limit: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("x", 1, "c", "a")),
			wantStatus: 400, wantType: "illegal_argument_exception",
			wantReason: "NO(too many shards [2] allocated to this node, cluster setting [cluster.routing.allocation.total_shards_per_node=2])"},
		{name: "a primary onto a node at the index's total_primary_shards_per_node", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index.routing.allocation.total_primary_shards_per_node":"1"}`); code != 200 {
				t.Fatalf("setup limit: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("x", 1, "b", "a")),
			wantStatus: 400, wantType: "illegal_argument_exception",
			wantReason: "NO(too many primary shards [1] allocated to this node for index [x], index setting [index.routing.allocation.total_primary_shards_per_node=1])"},
		{name: "a move earlier in the request counts on its target: the second onto c passes the cluster's total_shards_per_node", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"persistent":{"cluster.routing.allocation.total_shards_per_node":2}}`); code != 200 {
				t.Fatalf("setup limit: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("y", 0, "a", "c"), simtest.Move("x", 0, "a", "c")),
			wantStatus: 400, wantType: "illegal_argument_exception",
			wantReason: "NO(too many shards [2] allocated to this node, cluster setting [cluster.routing.allocation.total_shards_per_node=2])"},
		{name: "a primary onto a node at the cluster's total_primary_shards_per_node", setup: func(t *testing.T, s *sim.Sim) {
			if code, body := simtest.Call(t, s, "PUT", "/_cluster/settings", `{"persistent":{"cluster.routing.allocation.total_primary_shards_per_node":1}}`); code != 200 {
				t.Fatalf("setup limit: %d %s", code, body)
			}
		}, body: simtest.Commands(simtest.Move("y", 0, "a", "b")),
			wantStatus: 400, wantType: "illegal_argument_exception",
			wantReason: "NO(too many primary shards [1] allocated to this node, cluster setting [cluster.routing.allocation.total_primary_shards_per_node=1])"},
		{name: "target past the disk high watermark", body: simtest.Commands(simtest.Move("y", 0, "a", "d")),
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "will bring the node above the high watermark"},
		{name: "missing parameter", body: `{"commands":[{"move":{"index":"x","shard":0,"from_node":"a"}}]}`,
			wantStatus: 400, wantType: "parse_exception", wantReason: "[move] command missing the to_node parameter"},
		{name: "unsupported field", body: `{"commands":[{"move":{"index":"x","shard":0,"from_node":"a","to_node":"c","speed":1}}]}`,
			wantStatus: 400, wantType: "parse_exception", wantReason: "[move] command does not support field [speed]"},
		{name: "unknown command", body: `{"commands":[{"teleport":{"index":"x"}}]}`,
			wantStatus: 400, wantType: "x_content_parse_exception", wantReason: "unknown allocation command [teleport]"},
		{name: "malformed body", body: `{"commands":[`,
			wantStatus: 400, wantType: "json_parse_exception", wantReason: "failed to parse"},
		{name: "cancel on an unknown index", body: `{"commands":[{"cancel":{"index":"nope","shard":0,"node":"a"}}]}`,
			wantStatus: 404, wantType: "index_not_found_exception", wantReason: "no such index [nope]"},
		{name: "cancel a started primary without allow_primary", body: `{"commands":[{"cancel":{"index":"x","shard":0,"node":"a"}}]}`,
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "[cancel_allocation] can't cancel 0 on node {a}"},
		{name: "allocate_replica when all copies are assigned", body: `{"commands":[{"allocate_replica":{"index":"x","shard":0,"node":"c"}}]}`,
			wantStatus: 400, wantType: "illegal_argument_exception", wantReason: "[allocate_replica] all copies of [x][0] are already assigned"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.RerouteScenario)
			if tc.setup != nil {
				tc.setup(t, s)
			}
			code, body := simtest.CallJSON(t, s, "POST", "/_cluster/reroute", tc.body)
			if code != tc.wantStatus {
				t.Fatalf("status: got %d, want %d; body %v", code, tc.wantStatus, body)
			}
			if got := simtest.Dig(body, "status"); got != float64(tc.wantStatus) {
				t.Errorf("body status: got %v, want %d", got, tc.wantStatus)
			}
			if got := simtest.Dig(body, "error", "type"); got != tc.wantType {
				t.Errorf("error type: got %v, want %s", got, tc.wantType)
			}
			if got := simtest.Dig(body, "error", "root_cause", 0, "type"); got != tc.wantType {
				t.Errorf("root_cause type: got %v, want %s", got, tc.wantType)
			}
			reason, _ := simtest.Dig(body, "error", "reason").(string)
			if !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason: got %q, want it to contain %q", reason, tc.wantReason)
			}
		})
	}
}

func TestRerouteIsAtomic(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	code, _ := simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("x", 1, "b", "c")))
	if code != http.StatusBadRequest {
		t.Fatalf("status: got %d, want 400 (x[1] already has a copy on c)", code)
	}
	if got := simtest.CopyOn(s, "x", 0, "a"); got != "STARTED" {
		t.Errorf("x[0] on a after a failed command list: got %q, want STARTED (nothing applied)", got)
	}
	if r := s.Result(); r.Moves != 0 {
		t.Errorf("moves: got %d, want 0", r.Moves)
	}
}

// moves_refused counts a move command a decider answered NO, in a dry run and in a request
// rolled back, and nothing else: not a malformed or misdirected command, not an accepted move.
func TestRerouteCountsRefusedMoves(t *testing.T) {
	tests := []struct {
		name  string
		query string
		body  string
		want  int
	}{
		{"a decider's NO", "", simtest.Commands(simtest.Move("x", 0, "a", "b")), 1},
		{"a decider's NO in a dry run with explain", "?dry_run=true&explain=true", simtest.Commands(simtest.Move("x", 0, "a", "b")), 1},
		{"an accepted move then a refused one, rolled back together", "", simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("x", 1, "b", "c")), 1},
		{"an accepted move", "", simtest.Commands(simtest.Move("x", 0, "a", "c")), 0},
		{"a shard not on the node named", "", simtest.Commands(simtest.Move("x", 1, "a", "d")), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.RerouteScenario)
			simtest.Call(t, s, "POST", "/_cluster/reroute"+tc.query, tc.body)
			if got := s.Result().MovesRefused; got != tc.want {
				t.Errorf("moves_refused: got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRerouteDryRunAndExplain(t *testing.T) {
	tests := []struct {
		name         string
		query        string
		body         string
		wantStateOnA string
		wantMoves    int
		wantDecision string
	}{
		{"dry run changes nothing", "?dry_run=true", simtest.Commands(simtest.Move("x", 0, "a", "c")), "STARTED", 0, ""},
		{"explain reports the deciders and applies", "?explain=true", simtest.Commands(simtest.Move("x", 0, "a", "c")), "RELOCATING", 1, "YES"},
		{"explain of a refused move is a NO, not an error", "?explain=true", simtest.Commands(simtest.Move("x", 0, "a", "b")), "STARTED", 0, "NO"},
		{"a swap is two moves", "", simtest.Commands(simtest.Move("x", 0, "a", "c"), simtest.Move("y", 0, "a", "b")), "RELOCATING", 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, simtest.RerouteScenario)
			code, body := simtest.CallJSON(t, s, "POST", "/_cluster/reroute"+tc.query, tc.body)
			if code != 200 {
				t.Fatalf("status: got %d, want 200: %v", code, body)
			}
			if simtest.Dig(body, "acknowledged") != true {
				t.Errorf("acknowledged: got %v", simtest.Dig(body, "acknowledged"))
			}
			if simtest.Dig(body, "state", "routing_table", "indices", "x") == nil {
				t.Errorf("state.routing_table missing from the answer")
			}
			if got := simtest.CopyOn(s, "x", 0, "a"); got != tc.wantStateOnA {
				t.Errorf("x[0] on a: got %q, want %q", got, tc.wantStateOnA)
			}
			if got := s.Result().Moves; got != tc.wantMoves {
				t.Errorf("moves: got %d, want %d", got, tc.wantMoves)
			}
			if tc.wantDecision == "" {
				if simtest.Dig(body, "explanations") != nil {
					t.Errorf("explanations present without explain")
				}
				return
			}
			ex := simtest.Dig(body, "explanations", 0)
			if simtest.Dig(ex, "command") != "move" || simtest.Dig(ex, "parameters", "to_node") == nil {
				t.Errorf("explanation: got %v", ex)
			}
			worst := "YES"
			decisions, _ := simtest.Dig(ex, "decisions").([]any)
			for _, d := range decisions {
				if simtest.Dig(d, "decision") == "NO" {
					worst = "NO"
				}
			}
			if len(decisions) == 0 || worst != tc.wantDecision {
				t.Errorf("decisions: got %v, want worst %s", decisions, tc.wantDecision)
			}
		})
	}
}

func TestRerouteFaultsAndMethods(t *testing.T) {
	doc := strings.Replace(simtest.RerouteScenario, `"indices": [`,
		`"events": [{"at_seconds": 0, "kind": "reroute_rejects", "until_seconds": 60}], "indices": [`, 1)
	s := simtest.MustSim(t, doc)
	code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("x", 0, "a", "c")))
	if code != http.StatusForbidden || strings.TrimSpace(body) != `{"Message":"Your request: '/_cluster/reroute' is not allowed."}` {
		t.Errorf("inside reroute_rejects: got %d %s, want 403 and Amazon OpenSearch Service's message", code, body)
	}
	simtest.StepN(s, 2) // the clock reads 60 s, the window's end
	if code, body := simtest.Call(t, s, "POST", "/_cluster/reroute", simtest.Commands(simtest.Move("x", 0, "a", "c"))); code != 200 {
		t.Errorf("after the window: got %d %s, want 200", code, body)
	}
	if code, _ := simtest.Call(t, s, "GET", "/_cluster/reroute", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET reroute: got %d, want 405", code)
	}
}
