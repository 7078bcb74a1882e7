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
