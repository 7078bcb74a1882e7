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
