package safety

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
)

// healthy is a reading every check passes with the default limits: OpenSearch's own balancer
// has its two relocations in flight, and shardwise none.
func healthy() Inputs {
	return Inputs{Health: "green", SearchLatencyMs: 40, LatencyKnown: true, StatsAge: 20 * time.Second,
		Relocating: 2, OwnKnown: true, Recoveries: rebalancing(2, 0)}
}

// rebalancing is n relocations between distinct pairs of nodes, own of them shardwise's.
func rebalancing(n, own int) Recoveries {
	r := Recoveries{Relocating: n, Own: own, PerNode: true, Incoming: map[string]int{}, Outgoing: map[string]int{}}
	for i := range n {
		r.Outgoing[fmt.Sprintf("old-%d", i)]++
		r.Incoming[fmt.Sprintf("new-%d", i)]++
	}
	return r
}

func TestEvaluate(t *testing.T) {
	yellowOK := DefaultConfig()
	yellowOK.RequiredHealth = "yellow"
	twoInFlight := DefaultConfig()
	twoInFlight.MaxRelocating, twoInFlight.MaxInitializing = 2, 2
	settled := DefaultConfig()
	settled.MaxRelocating, settled.MaxInitializing, settled.MaxOwnMovesInFlight = 0, 0, 0
	ownZero := DefaultConfig()
	ownZero.MaxOwnMovesInFlight = 0

	cases := []struct {
		name   string
		edit   func(*Inputs)
		cfg    Config
		failed []string
		// values and limits the failing (or named) checks must report, check name → value, limit.
		values map[string][2]string
	}{
		{
			name:   "every check passes",
			edit:   func(*Inputs) {},
			values: map[string][2]string{"health": {"green", "green"}, "own_moves_in_flight": {"0", "4"}, "search_latency": {"40.0ms", "200ms"}, "stats_fresh": {"20s", "1m0s"}},
		},
		{
			name:   "unreachable fails reachability and every check that needs an answer",
			edit:   func(in *Inputs) { in.Reachable = errors.New("dial tcp: connection refused") },
			failed: []string{"reachable", "health", "relocating", "initializing", "own_moves_in_flight", "cluster_rebalance", "node_recoveries"},
			values: map[string][2]string{"reachable": {"unreachable", "reachable"}},
		},
		{
			name:   "yellow health under a green requirement",
			edit:   func(in *Inputs) { in.Health = "yellow" },
			failed: []string{"health"},
			values: map[string][2]string{"health": {"yellow", "green"}},
		},
		{
			name: "yellow health allowed when yellow is required",
			edit: func(in *Inputs) { in.Health = "yellow" },
			cfg:  yellowOK,
		},
		{
			name:   "red health under a yellow requirement",
			edit:   func(in *Inputs) { in.Health = "red" },
			cfg:    yellowOK,
			failed: []string{"health"},
			values: map[string][2]string{"health": {"red", "yellow"}},
		},
		{
			name:   "unknown health string is not green",
			edit:   func(in *Inputs) { in.Health = "unavailable" },
			failed: []string{"health"},
			values: map[string][2]string{"health": {"unavailable", "green"}},
		},
		{
			name:   "OpenSearch's balancer at its own limit does not stop shardwise",
			edit:   func(*Inputs) {},
			values: map[string][2]string{"relocating": {"2", "none"}, "cluster_rebalance": {"2", "2"}, "node_recoveries": {"new-0: 1 in, 0 out", "2 in, 2 out"}},
		},
		{
			name:   "a fixed cap of 0 acts only on a settled cluster",
			edit:   func(in *Inputs) { in.Relocating = 1 },
			cfg:    settled,
			failed: []string{"relocating"},
			values: map[string][2]string{"relocating": {"1", "0"}},
		},
		{
			name:   "a fixed cap on initializing copies",
			edit:   func(in *Inputs) { in.Relocating, in.Initializing, in.Recoveries = 0, 3, rebalancing(0, 0) },
			cfg:    settled,
			failed: []string{"initializing"},
			values: map[string][2]string{"initializing": {"3", "0"}},
		},
		{
			name: "copies in flight within raised fixed caps",
			edit: func(in *Inputs) { in.Relocating, in.Initializing = 2, 2 },
			cfg:  twoInFlight,
		},
		{
			name:   "shardwise's moves in flight over the limit",
			edit:   func(in *Inputs) { in.OwnInFlight, in.Recoveries = 5, rebalancing(7, 5) },
			failed: []string{"own_moves_in_flight"},
			values: map[string][2]string{"own_moves_in_flight": {"5", "4"}, "cluster_rebalance": {"2", "2"}},
		},
		{
			name:   "shardwise's moves in flight within the limit",
			edit:   func(in *Inputs) { in.OwnInFlight, in.Recoveries = 4, rebalancing(6, 4) },
			values: map[string][2]string{"own_moves_in_flight": {"4", "4"}, "cluster_rebalance": {"2", "2"}},
		},
		{
			name:   "a limit of 0 waits for every move to land",
			edit:   func(in *Inputs) { in.OwnInFlight, in.Recoveries = 1, rebalancing(3, 1) },
			cfg:    ownZero,
			failed: []string{"own_moves_in_flight"},
			values: map[string][2]string{"own_moves_in_flight": {"1", "0"}},
		},
		{
			name:   "own moves not read where no shard moves",
			edit:   func(in *Inputs) { in.OwnKnown, in.OwnInFlight = false, 5 },
			values: map[string][2]string{"own_moves_in_flight": {"not read", "4"}},
		},
		{
			name:   "relocations besides shardwise's own over cluster_concurrent_rebalance",
			edit:   func(in *Inputs) { in.Recoveries = rebalancing(3, 0) },
			failed: []string{"cluster_rebalance"},
			values: map[string][2]string{"cluster_rebalance": {"3", "2"}},
		},
		{
			name: "cluster_concurrent_rebalance read from the cluster",
			edit: func(in *Inputs) {
				in.Recoveries = rebalancing(5, 0)
				in.Recoveries.Limits = cluster.RecoveryLimits{NodeIncoming: 4, NodeOutgoing: 4, ClusterRebalance: 6, Known: true}
			},
			values: map[string][2]string{"cluster_rebalance": {"5", "6"}, "node_recoveries": {"new-0: 1 in, 0 out", "4 in, 4 out"}},
		},
		{
			name: "cluster_concurrent_rebalance -1 is unlimited",
			edit: func(in *Inputs) {
				in.Recoveries = rebalancing(40, 0)
				in.Recoveries.Limits = cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: -1, Known: true}
			},
			values: map[string][2]string{"cluster_rebalance": {"40", "unlimited"}},
		},
		{
			name: "a node over its incoming recoveries",
			edit: func(in *Inputs) {
				in.Recoveries.Incoming["new-1"] = 3
			},
			failed: []string{"node_recoveries"},
			values: map[string][2]string{"node_recoveries": {"new-1: 3 in, 0 out", "2 in, 2 out"}},
		},
		{
			name: "a node over its outgoing recoveries, named over a busier node within its limits",
			edit: func(in *Inputs) {
				in.Recoveries.Outgoing["old-0"] = 3
				in.Recoveries.Incoming["new-1"], in.Recoveries.Outgoing["new-1"] = 2, 2
			},
			failed: []string{"node_recoveries"},
			values: map[string][2]string{"node_recoveries": {"old-0: 0 in, 3 out", "2 in, 2 out"}},
		},
		{
			name:   "per-node recoveries not read",
			edit:   func(in *Inputs) { in.Recoveries.PerNode = false },
			values: map[string][2]string{"node_recoveries": {"not read", "2 in, 2 out"}},
		},
		{
			name:   "nothing recovering",
			edit:   func(in *Inputs) { in.Relocating, in.Recoveries = 0, rebalancing(0, 0) },
			values: map[string][2]string{"node_recoveries": {"none", "2 in, 2 out"}, "cluster_rebalance": {"0", "2"}},
		},
		{
			name:   "search latency at the limit",
			edit:   func(in *Inputs) { in.SearchLatencyMs = 200 },
			failed: []string{"search_latency"},
			values: map[string][2]string{"search_latency": {"200.0ms", "200ms"}},
		},
		{
			name:   "search latency unknown fails closed",
			edit:   func(in *Inputs) { in.SearchLatencyMs, in.LatencyKnown = 900, false },
			failed: []string{"search_latency"},
			values: map[string][2]string{"search_latency": {"unknown", "200ms"}},
		},
		{
			name:   "search latency exempt passes, however slow",
			edit:   func(in *Inputs) { in.SearchLatencyMs, in.LatencyExempt = 900, true },
			values: map[string][2]string{"search_latency": {"exempt", "200ms"}},
		},
		{
			name:   "stats older than the limit",
			edit:   func(in *Inputs) { in.StatsAge = 2 * time.Minute },
			failed: []string{"stats_fresh"},
			values: map[string][2]string{"stats_fresh": {"2m0s", "1m0s"}},
		},
		{
			name:   "stats from the future (clock skew) are not fresh",
			edit:   func(in *Inputs) { in.StatsAge = -5 * time.Second },
			failed: []string{"stats_fresh"},
		},
		{
			name: "every answerable check failing together",
			edit: func(in *Inputs) {
				in.Health, in.Relocating, in.Initializing, in.SearchLatencyMs, in.StatsAge = "red", 4, 2, 950, time.Hour
				in.OwnInFlight, in.Recoveries = 1, rebalancing(4, 1)
				in.Recoveries.Incoming["new-0"] = 3
			},
			cfg:    settled,
			failed: []string{"health", "relocating", "initializing", "own_moves_in_flight", "cluster_rebalance", "node_recoveries", "search_latency", "stats_fresh"},
		},
		{
			name: "unreachable with slow searches and stale stats",
			edit: func(in *Inputs) {
				in.Reachable, in.SearchLatencyMs, in.StatsAge = errors.New("timeout"), 300, 5*time.Minute
			},
			failed: []string{"reachable", "health", "relocating", "initializing", "own_moves_in_flight", "cluster_rebalance", "node_recoveries", "search_latency", "stats_fresh"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == (Config{}) {
				cfg = DefaultConfig()
			}
			in := healthy()
			tc.edit(&in)
			v := Evaluate(in, cfg)

			var names []string
			for _, c := range v.Checks {
				names = append(names, c.Name)
			}
			wantNames := []string{"reachable", "health", "relocating", "initializing", "own_moves_in_flight", "cluster_rebalance", "node_recoveries", "search_latency", "stats_fresh"}
			if !slices.Equal(names, wantNames) {
				t.Fatalf("checks: got %v want %v (every check runs, never short-circuits)", names, wantNames)
			}
			var failed []string
			for _, c := range v.Failed() {
				failed = append(failed, c.Name)
			}
			if !slices.Equal(failed, tc.failed) {
				t.Errorf("failed checks: got %v want %v", failed, tc.failed)
			}
			if v.Closed != (len(tc.failed) == 0) {
				t.Errorf("closed: got %v want %v", v.Closed, len(tc.failed) == 0)
			}
			for _, c := range v.Checks {
				if c.Value == "" || c.Limit == "" || c.Reason == "" {
					t.Errorf("check %s: value %q, limit %q, reason %q: every check logs its value, limit and reason", c.Name, c.Value, c.Limit, c.Reason)
				}
				if want, ok := tc.values[c.Name]; ok && (c.Value != want[0] || c.Limit != want[1]) {
					t.Errorf("check %s: got value %q limit %q, want %q and %q", c.Name, c.Value, c.Limit, want[0], want[1])
				}
			}

			reason := v.Reason()
			if len(tc.failed) == 0 {
				if reason != "circuit breaker closed: every check passed" {
					t.Errorf("reason: got %q, want the closed sentence", reason)
				}
				return
			}
			if !strings.HasPrefix(reason, "circuit breaker open:") {
				t.Errorf("reason: got %q, want it to start with %q", reason, "circuit breaker open:")
			}
			for _, c := range v.Failed() {
				if !strings.Contains(reason, c.Reason) {
					t.Errorf("reason %q does not name failing check %s (%q)", reason, c.Name, c.Reason)
				}
			}
			for _, c := range v.Checks {
				if c.OK && strings.Contains(reason, c.Reason) {
					t.Errorf("reason %q names passing check %s", reason, c.Name)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(*Config)
		fields []string
	}{
		{name: "defaults are valid", edit: func(*Config) {}},
		{name: "yellow is an allowed requirement", edit: func(c *Config) { c.RequiredHealth = "yellow" }},
		{name: "red is not a requirement", edit: func(c *Config) { c.RequiredHealth = "red" }, fields: []string{"safety.required_health"}},
		{name: "unknown health", edit: func(c *Config) { c.RequiredHealth = "blue" }, fields: []string{"safety.required_health"}},
		{name: "fixed caps off by default", edit: func(c *Config) { c.MaxRelocating, c.MaxInitializing = -1, -1 }},
		{name: "a fixed cap of 0 is valid (the old default)", edit: func(c *Config) { c.MaxRelocating, c.MaxInitializing = 0, 0 }},
		{name: "relocating below -1", edit: func(c *Config) { c.MaxRelocating = -2 }, fields: []string{"safety.max_relocating"}},
		{name: "initializing below -1", edit: func(c *Config) { c.MaxInitializing = -3 }, fields: []string{"safety.max_initializing"}},
		{name: "negative own moves in flight", edit: func(c *Config) { c.MaxOwnMovesInFlight = -1 }, fields: []string{"safety.max_own_moves_in_flight"}},
		{name: "zero search latency", edit: func(c *Config) { c.MaxSearchLatency = 0 }, fields: []string{"safety.max_search_latency"}},
		{name: "zero stats age", edit: func(c *Config) { c.MaxStatsAge = 0 }, fields: []string{"safety.max_stats_age"}},
		{name: "zero moves per node", edit: func(c *Config) { c.MaxMovesPerNode = 0 }, fields: []string{"safety.max_moves_per_node"}},
		{name: "zero moves per cycle", edit: func(c *Config) { c.MaxMovesPerCycle = 0 }, fields: []string{"max_moves_per_cycle"}},
		{name: "zero bytes per cycle", edit: func(c *Config) { c.MaxBytesPerCycle = 0 }, fields: []string{"safety.max_bytes_per_cycle"}},
		{
			name: "several bad fields are all named",
			edit: func(c *Config) {
				c.RequiredHealth, c.MaxStatsAge, c.MaxBytesPerCycle = "red", duration.Duration(-time.Second), -1
			},
			fields: []string{"safety.required_health", "safety.max_stats_age", "safety.max_bytes_per_cycle"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate: got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: got nil, want an error naming %v", tc.fields)
			}
			for _, f := range tc.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Validate: got %q, want it to name %s", err, f)
				}
			}
		})
	}
}

func TestDefaultConfigIsDryRun(t *testing.T) {
	if !DefaultConfig().DryRun {
		t.Fatal("DefaultConfig().DryRun: got false, want true (dry-run unless explicitly turned off)")
	}
}

// TestCompletionsOnly: staged returns completing a swap under way still go when the breaker is
// open only on shardwise's own moves in flight, never on any other failing check.
func TestCompletionsOnly(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Inputs)
		want bool
	}{
		{"closed: not a completions-only cycle", func(*Inputs) {}, false},
		{"own moves in flight over the limit", func(in *Inputs) { in.OwnInFlight = 5 }, true},
		{"over the limit and the cluster yellow", func(in *Inputs) { in.OwnInFlight, in.Health = 5, "yellow" }, false},
		{"own moves not read", func(in *Inputs) { in.OwnKnown = false }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := healthy()
			tc.edit(&in)
			v := Evaluate(in, DefaultConfig())
			if got := v.CompletionsOnly(); got != tc.want {
				t.Errorf("got %v, want %v (failing %+v)", got, tc.want, v.Failed())
			}
		})
	}
}
