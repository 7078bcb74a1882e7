package collect

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// TestShardLimitsFromTheSimulator: the shard-count limits the shards_limit decider reads reach the
// snapshot through the production client, from the index settings a scenario sets and those set
// later through PUT _settings and PUT _cluster/settings; limits left unset read as 0 (unlimited).
func TestShardLimitsFromTheSimulator(t *testing.T) {
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", "write-hotspot-constrained.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{srv.URL}, Auth: opensearch.AuthNone})
	if err != nil {
		t.Fatal(err)
	}
	api := New(client, s.Now)
	read := func() (clusterTotal, clusterPrimary, clicksTotal, clicksPrimary, ordersTotal int, clicksRequire string) {
		t.Helper()
		sample, err := api.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		snap := sample.Snapshot
		for _, ix := range snap.Indices {
			switch ix.Name {
			case "clicks":
				clicksTotal, clicksPrimary, clicksRequire = ix.TotalShardsPerNode, ix.TotalPrimaryShardsPerNode, ix.Filters.Require["box"]
			case "orders":
				ordersTotal = ix.TotalShardsPerNode
			}
		}
		return snap.Settings.TotalShardsPerNode, snap.Settings.TotalPrimaryShardsPerNode, clicksTotal, clicksPrimary, ordersTotal, clicksRequire
	}
	ct, cp, it, ip, ot, req := read()
	if ct != 0 || cp != 0 || it != 3 || ip != 0 || ot != 0 || req != "ingest" {
		t.Errorf("as the scenario sets them: got cluster %d, cluster primaries %d, clicks %d, clicks primaries %d, orders %d, clicks require box=%q; "+
			"want 0, 0, 3, 0, 0, ingest", ct, cp, it, ip, ot, req)
	}
	put := func(path, body string) {
		t.Helper()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), "PUT", path, strings.NewReader(body)))
		if rec.Code != 200 {
			t.Fatalf("PUT %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	put("/clicks/_settings", `{"index.routing.allocation.total_primary_shards_per_node": 2}`)
	put("/_cluster/settings", `{"persistent": {"cluster.routing.allocation.total_shards_per_node": 9, "cluster.routing.allocation.total_primary_shards_per_node": 4}}`)
	ct, cp, it, ip, ot, _ = read()
	if ct != 9 || cp != 4 || it != 3 || ip != 2 || ot != 0 {
		t.Errorf("after the PUTs: got cluster %d, cluster primaries %d, clicks %d, clicks primaries %d, orders %d; want 9, 4, 3, 2, 0", ct, cp, it, ip, ot)
	}
}
