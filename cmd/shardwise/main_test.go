package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := newCLI()
	c.root.SetOut(&out)
	c.root.SetErr(&errOut)
	c.root.SetArgs(args)
	err := c.execute(context.Background())
	return out.String(), errOut.String(), err
}

func scenarioPath(name string) string { return filepath.Join("..", "..", "scenarios", name+".json") }

func TestSimulateJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole scenario")
	}
	out, _, err := execute(t, "simulate", "--scenario", scenarioPath("steady"), "--json", "--dry-run=false")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	// Every field of the run result (docs/scenarios.md).
	for _, k := range []string{"scenario", "balancer", "ticks", "moves", "bytes_moved", "moves_undone_by_builtin",
		"hot_node_seconds", "max_queue_latency_seconds", "p99_queue_latency_seconds", "rejected_writes",
		"time_to_correct_seconds", "replica_changes", "replica_node_hours", "p99_search_latency_ms",
		"plan_ms_p50", "plan_ms_max", "safety_violations", "scale_up_signals"} {
		if _, ok := res[k]; !ok {
			t.Errorf("run result lacks %q", k)
		}
	}
	if res["moves"] != float64(0) {
		t.Errorf("steady: got moves %v, want 0", res["moves"])
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing scenario file", []string{"simulate", "--scenario", "nope.json"}, "nope.json"},
		{"unknown balancer", []string{"simulate", "--scenario", scenarioPath("steady"), "--balancer", "magic"}, "balancer"},
		{"no scenario flag", []string{"simulate"}, "scenario"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// plan and explain against the simulator served over HTTP, as against any OpenSearch cluster.
func TestPlanAndExplainAgainstServedSimulator(t *testing.T) {
	sc, err := sim.LoadScenario(scenarioPath("write-hotspot"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 23 { // past the write spike at 600 s
		s.Step()
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	// The simulator's clock stands still between requests, so the nodes' stats timestamps do not
	// advance between samples: no rate can be measured, and plan must say so, not read zeros. The
	// interval is plan's least, 5 s: a shorter one would merge samples, and plan refuses it.
	out, _, err := execute(t, "plan", "--url", srv.URL, "--samples", "2", "--interval", "5s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Plan struct {
			Moves []any `json:"moves"`
		} `json:"plan"`
		Replicas []struct {
			Index string  `json:"index"`
			L     float64 `json:"l"`
			N     int     `json:"n"`
			S     int     `json:"s"`
		} `json:"replicas"`
		ReplicaNodeHours *int `json:"replica_node_hours_per_hour"`
		Copies           []struct {
			Index     string  `json:"index"`
			State     string  `json:"state"`
			NodeName  string  `json:"node_name"`
			WriteLoad float64 `json:"write_load"`
			LoadKnown bool    `json:"load_known"`
		} `json:"copies"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out)
	}
	if len(plan.Copies) == 0 {
		t.Errorf("plan --json lists no copies:\n%s", out)
	}
	for _, c := range plan.Copies {
		if c.State == "STARTED" && (c.NodeName == "" || c.LoadKnown) {
			t.Errorf("copy %+v: want its node's name and an unknown load (the nodes' clocks stood still)", c)
		}
	}
	if plan.ReplicaNodeHours == nil {
		t.Errorf("plan --json lacks replica_node_hours_per_hour:\n%s", out)
	}
	if len(plan.Replicas) == 0 || plan.Replicas[0].N == 0 || plan.Replicas[0].S == 0 {
		t.Errorf("replica decisions without N and S: %+v", plan.Replicas)
	}
	table, _, err := execute(t, "plan", "--url", srv.URL, "--samples", "2", "--interval", "5s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WRITE hotspots", "Planned moves", "Replicas", "replica_node_hours: 15 per hour now, 15 after"} {
		if !strings.Contains(table, want) {
			t.Errorf("plan output lacks %q:\n%s", want, table)
		}
	}
	ex, _, err := execute(t, "explain", "clicks", "0", "--primary", "--url", srv.URL, "--samples", "2", "--interval", "5s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"same_shard", "disk_watermark", "write_load", "index_balance", "node-0 (current"} {
		if !strings.Contains(ex, want) {
			t.Errorf("explain output lacks %q:\n%s", want, ex)
		}
	}
}

// explain names an index the cluster does not have as not found, and a run's output is the
// human tables on stdout only.
func TestExplainUnknownIndex(t *testing.T) {
	sc, err := sim.LoadScenario(scenarioPath("write-hotspot"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	out, _, err := execute(t, "explain", "nosuchindex", "0", "--url", srv.URL, "--samples", "2", "--interval", "5s")
	if err == nil || err.Error() != "index nosuchindex not found" {
		t.Errorf("got %v, want index nosuchindex not found", err)
	}
	if out != "" {
		t.Errorf("stdout holds %q, want nothing", out)
	}
}

// explain prints the shard-limit and filter deciders' answers as data: on
// write-hotspot-constrained, node-3 and node-4 hold clicks's three copies a node and node-6 is
// outside its require box=ingest filter.
func TestExplainShardsLimitAndFilter(t *testing.T) {
	sc, err := sim.LoadScenario(scenarioPath("write-hotspot-constrained"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	out, _, err := execute(t, "explain", "clicks", "0", "--primary", "--json", "--url", srv.URL, "--samples", "2", "--interval", "5s")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []struct {
		NodeName string `json:"node_name"`
		Verdicts []struct {
			Decider  string  `json:"decider"`
			Decision string  `json:"decision"`
			Value    float64 `json:"value"`
			Limit    float64 `json:"limit"`
			Reason   string  `json:"reason"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		t.Fatalf("explain --json: %v\n%s", err, out)
	}
	type answer struct {
		decision     string
		value, limit float64
		reason       string
	}
	want := map[[2]string]answer{
		{"node-4", "shards_limit"}: {"NO", 3, 3, "node-4 holds 3 copies of clicks, at index.routing.allocation.total_shards_per_node=3"},
		{"node-5", "shards_limit"}: {"YES", 2, 3, "node-5 holds 2 copies of clicks, under index.routing.allocation.total_shards_per_node=3"},
		{"node-6", "filter"}:       {"NO", 0, 0, `index clicks: require box="ingest" does not match node-6 ("archive")`},
	}
	for _, n := range nodes {
		for _, vd := range n.Verdicts {
			w, ok := want[[2]string{n.NodeName, vd.Decider}]
			if !ok {
				continue
			}
			delete(want, [2]string{n.NodeName, vd.Decider})
			if got := (answer{vd.Decision, vd.Value, vd.Limit, vd.Reason}); got != w {
				t.Errorf("%s %s: got %+v want %+v", n.NodeName, vd.Decider, got, w)
			}
		}
	}
	for k := range want {
		t.Errorf("explain lacks %s's %s verdict:\n%s", k[0], k[1], out)
	}
}
