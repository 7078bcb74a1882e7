package runner

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
)

// The run result carries the simulator's per-tenant measures under their documented keys, and the
// project's noisy-tenant scenario, run with its sandbox configuration and OpenSearch alone, shows
// the contention a sandbox is for: nothing cancelled, the well-behaved tenant waiting behind the hog.
func TestTenantResultKeys(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("..", "..", "scenarios", "configs", "sandbox-noisy-tenant.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Safety.DryRun = false
	res, err := Run(context.Background(), scenario(t, "sandbox-noisy-tenant"), Options{Balancer: BalancerNone, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Cancelled map[string]int     `json:"tasks_cancelled_by_tenant"`
		P99       map[string]float64 `json:"tenant_p99_search_latency_ms"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reports", "storefront", "analytics"} {
		if n, ok := out.Cancelled[name]; !ok || n != 0 {
			t.Errorf("tasks_cancelled_by_tenant[%s]: %d (present %v), want 0 with OpenSearch alone", name, n, ok)
		}
		if _, ok := out.P99[name]; !ok {
			t.Errorf("tenant_p99_search_latency_ms lacks %s: %s", name, raw)
		}
	}
	if out.P99["storefront"] < 10_000 {
		t.Errorf("storefront's p99 behind the reports tenant: %v ms, want its queries queued for seconds", out.P99["storefront"])
	}
}

// On noisy-neighbor the flood tenant's 20 s queries want 20 search threads per node of 8 from
// 2 min on. Contained, the storefront tenant's p99 stays within twice its p99 with the flood
// absent: by the sandbox function's loop, rejecting the flood's queued requests and cancelling its
// running ones every 2 s, and, on noisy-neighbor-wlm, by the workload-management plugin once
// shardwise has synced the sandboxes to it. The flood's cancellations are counted per tenant, and
// the storefront tenant loses none.
func TestNoisyNeighborContained(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("..", "..", "scenarios", "configs", "noisy-neighbor.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Safety.DryRun = false
	run := func(t *testing.T, name string, flood bool) Result {
		t.Helper()
		sc := scenario(t, name)
		if !flood {
			sc.Tenants[0].SearchLoad.After = 0
		}
		res, err := Run(context.Background(), sc, Options{Balancer: BalancerShardwise, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	quiet := run(t, "noisy-neighbor", false).TenantP99SearchLatencyMs["storefront"]
	if quiet <= 0 {
		t.Fatalf("storefront's p99 without the flood: %v ms", quiet)
	}
	for _, name := range []string{"noisy-neighbor", "noisy-neighbor-wlm"} {
		t.Run(name, func(t *testing.T) {
			res := run(t, name, true)
			p99, ok := res.TenantP99SearchLatencyMs["storefront"]
			if !ok || p99 > 2*quiet {
				t.Errorf("storefront's p99 with the flood: %v ms (completed %v), want at most 2 × %v ms", p99, ok, quiet)
			}
			if res.TasksCancelledByTenant["flood"] == 0 || res.TasksCancelledByTenant["storefront"] != 0 {
				t.Errorf("cancelled by tenant %v: want the flood's, none of storefront's", res.TasksCancelledByTenant)
			}
			if n := res.SearchesCancelledByTenant["flood"]; n == 0 || n > res.TasksCancelledByTenant["flood"] {
				t.Errorf("flood's searches cancelled %d of its tasks cancelled %d: want some, each search once", n, res.TasksCancelledByTenant["flood"])
			}
			t.Logf("storefront p99 %.1f ms (without the flood %.1f ms); searches cancelled %v, rejected %v",
				p99, quiet, res.SearchesCancelledByTenant, res.SearchesRejectedByTenant)
		})
	}
}

// noisy-neighbor-wlm-node is make it-wlm's real case in the simulator: one node of 2 processors
// and 4 search threads, a flood of 8 one-second searches a second. On the real OpenSearch 3.8
// node the workload-management plugin alone let the protected tenant's p99 rise far past twice
// its p99 without the flood, and shardwise's loop beside it held it (docs/sandboxes.md). The
// simulated plugin must show the same shape: alone, it rejects and cancels some of the flood but
// the protected tenant's p99 is more than twice its p99 without the flood.
func TestNoisyNeighborWLMNode(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("..", "..", "scenarios", "configs", "noisy-neighbor-wlm-node.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Safety.DryRun = false
	run := func(t *testing.T, flood, alone bool) Result {
		t.Helper()
		sc := scenario(t, "noisy-neighbor-wlm-node")
		if !flood {
			sc.Tenants[0].SearchLoad.After = 0
		}
		res, err := Run(context.Background(), sc, Options{Balancer: BalancerShardwise, Config: cfg, PluginAlone: alone})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	quiet := run(t, false, false).TenantP99SearchLatencyMs["orders"]
	none, err := Run(context.Background(), scenario(t, "noisy-neighbor-wlm-node"), Options{Balancer: BalancerNone, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	alone, lined := run(t, true, true), run(t, true, false)
	t.Logf("orders p99: no flood %.1f ms; flood uncontained %.1f ms, plugin alone %.1f ms (flood rejected %d, cancelled %d), plugin and second line %.1f ms (flood rejected %d, cancelled %d)",
		quiet, none.TenantP99SearchLatencyMs["orders"], alone.TenantP99SearchLatencyMs["orders"], alone.SearchesRejectedByTenant["flood"],
		alone.SearchesCancelledByTenant["flood"], lined.TenantP99SearchLatencyMs["orders"], lined.SearchesRejectedByTenant["flood"],
		lined.SearchesCancelledByTenant["flood"])
	if quiet <= 0 {
		t.Fatalf("orders' p99 without the flood: %v ms", quiet)
	}
	if p := none.TenantP99SearchLatencyMs["orders"]; p < 10*quiet {
		t.Errorf("uncontained, orders' p99 %.1f ms, want the flood to hold it far over %.1f ms", p, quiet)
	}
	if alone.SearchesRejectedByTenant["flood"]+alone.SearchesCancelledByTenant["flood"] == 0 {
		t.Errorf("the plugin alone stopped none of the flood: rejected %v, cancelled %v", alone.SearchesRejectedByTenant, alone.SearchesCancelledByTenant)
	}
	if p := alone.TenantP99SearchLatencyMs["orders"]; p <= 2*quiet {
		t.Errorf("with the plugin alone, orders' p99 %.1f ms, want over 2 × %.1f ms as on the real node", p, quiet)
	}
	// The simulator steps whole seconds, so a flood search either plugin admits holds a thread
	// for its tick: the second line cannot show its real effect (docs/sandboxes.md), only that it
	// stops more of the flood and leaves the protected tenant no worse off.
	if p, a := lined.TenantP99SearchLatencyMs["orders"], alone.TenantP99SearchLatencyMs["orders"]; p > a {
		t.Errorf("with the second line, orders' p99 %.1f ms, want at most the plugin alone's %.1f ms", p, a)
	}
	if l, a := lined.SearchesRejectedByTenant["flood"]+lined.TasksCancelledByTenant["flood"], alone.SearchesRejectedByTenant["flood"]+alone.TasksCancelledByTenant["flood"]; l == a {
		t.Errorf("the second line changed nothing: %d of the flood's searches and tasks stopped, as by the plugin alone", l)
	}
	if lined.TasksCancelledByTenant["orders"] != 0 || alone.TasksCancelledByTenant["orders"] != 0 {
		t.Errorf("orders lost tasks: %v alone, %v with the second line", alone.TasksCancelledByTenant, lined.TasksCancelledByTenant)
	}
}
