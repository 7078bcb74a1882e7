package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// PutClusterSettings applies cluster.routing.allocation.exclude._name to the world, as OpenSearch
// does; clusterPuts records each call.
func (f *fakeAPI) PutClusterSettings(_ context.Context, settings map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusterPuts = append(f.clusterPuts, settings)
	v, ok := settings[clusterExcludeSetting]
	if !ok {
		return fmt.Errorf("unexpected settings %v", settings)
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.clusterExclude = ""
	if v != nil {
		f.w.clusterExclude = fmt.Sprint(v)
	}
	return nil
}

// TestExcludedNodesDrainThroughCluster: allocation.excluded_nodes become the cluster's own
// exclusions, so OpenSearch drains them too (and never moves the copies back); an operator's
// entries stay, the value before comes back exactly when the node is no longer excluded, and
// dry-run changes nothing.
func TestExcludedNodesDrainThroughCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dryRun   bool
		operator string // the cluster's value before
		want     string // after the first ingest
	}{
		{name: "no prior value", want: "b"},
		{name: "operator's entries kept", operator: "x, y", want: "x, y,b"},
		{name: "already excluded by the operator", operator: "b", want: "b"},
		{name: "dry-run changes nothing", dryRun: true, operator: "x", want: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := hotWorld()
			w.clusterExclude = tc.operator
			cfg := liveConfig("reroute")
			cfg.Safety.DryRun = tc.dryRun
			cfg.Allocation.ExcludedNodes = []string{"b"}
			r := newRig(t, cfg, map[string]*world{"prod": w})
			r.ingest(t, "prod")
			if w.clusterExclude != tc.want {
				t.Fatalf("cluster exclusion: got %q, want %q", w.clusterExclude, tc.want)
			}
			puts := slices.Clone(r.apis["prod"].clusterPuts)
			if (tc.dryRun || tc.operator == "b") && len(puts) != 0 {
				t.Fatalf("settings sent: %v, want none", puts)
			}
			// Nothing more on the next cycle: the list already names the node.
			w.tick(30e9)
			r.ingest(t, "prod")
			if got := len(r.apis["prod"].clusterPuts); got != len(puts) {
				t.Fatalf("second cycle sent settings again: %v", r.apis["prod"].clusterPuts)
			}
			// The node is no longer excluded: the value before comes back.
			r.e.Config.Allocation.ExcludedNodes = nil
			w.tick(30e9)
			r.ingest(t, "prod")
			if want := tc.operator; w.clusterExclude != want {
				t.Fatalf("after the node left excluded_nodes: got %q, want %q", w.clusterExclude, want)
			}
		})
	}
}
