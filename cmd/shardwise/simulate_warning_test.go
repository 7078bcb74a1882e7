package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

func TestSandboxWarning(t *testing.T) {
	withTenants := &sim.Scenario{Name: "noisy", Tenants: make([]sim.TenantSpec, 2)}
	withSandboxes := config.Default()
	withSandboxes.Sandbox.Definitions = json.RawMessage(`{"sandboxes":[]}`)
	scenario := filepath.Join("scenarios", "noisy.json")
	beside := filepath.Join("scenarios", "configs", "noisy.json")
	tests := []struct {
		name   string
		sc     *sim.Scenario
		cfg    config.Config
		exists bool
		want   []string // substrings; none: no warning
	}{
		{name: "tenants, no sandboxes, a config beside the scenario", sc: withTenants, cfg: config.Default(), exists: true,
			want: []string{"scenario noisy has 2 tenants", "no sandboxes", "--config " + beside}},
		{name: "tenants, no sandboxes, no config beside", sc: withTenants, cfg: config.Default(),
			want: []string{"no sandboxes", "pass --config with sandbox.definitions"}},
		{name: "tenants and sandboxes", sc: withTenants, cfg: withSandboxes, exists: true},
		{name: "no tenants", sc: &sim.Scenario{Name: "steady"}, cfg: config.Default(), exists: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sandboxWarning(tc.sc, tc.cfg, scenario, func(p string) bool { return tc.exists && p == beside })
			if len(tc.want) == 0 {
				if got != "" {
					t.Errorf("got warning %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to contain %q", got, w)
				}
			}
		})
	}
}
