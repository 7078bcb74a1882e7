package sim_test

import (
	"github.com/shardwise/shardwise/shared/sim"

	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// bigScenario is the scale target: 37 nodes and 30,000 primaries with a replica each (60,000 shard
// copies of 256 MiB, about 405 GiB a node) in 10,000 indices whose loads follow a zipf skew.
func bigScenario(tb testing.TB) *scenario.Scenario {
	tb.Helper()
	nodes := make([]string, 37)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"name": "node-%d", "zone": "z%d"}`, i, i%3)
	}
	doc := `{"name": "big", "seed": 42, "tick_seconds": 30, "duration_seconds": 86400,
	  "cluster": {"builtin_balancer": true},
	  "nodes": [` + strings.Join(nodes, ",") + `],
	  "indices": [],
	  "index_groups": [{"name_prefix": "logs-", "count": 10000, "primaries": 3, "replicas": 1,
	    "shard_bytes": 268435456,
	    "write_load": {"kind": "sine", "mean": 150, "amplitude": 50, "period_seconds": 3600},
	    "search_load": {"kind": "constant", "value": 200},
	    "skew": {"kind": "zipf", "s": 1.1}}]}`
	sc, err := scenario.ParseScenario([]byte(doc))
	if err != nil {
		tb.Fatalf("parse: %v", err)
	}
	return sc
}

func newBig(tb testing.TB) *sim.Sim {
	tb.Helper()
	s, err := sim.New(bigScenario(tb), sim.Options{})
	if err != nil {
		tb.Fatalf("new: %v", err)
	}
	return s
}

func TestBigClusterServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 60,000-copy cluster")
	}
	s := newBig(t)
	s.Step()
	_, h := simtest.CallJSON(t, s, "GET", "/_cluster/health", "")
	if h["active_shards"] != float64(60000) || h["number_of_data_nodes"] != float64(37) || h["status"] != "green" {
		t.Errorf("health: got %v", h)
	}
	code, body := simtest.Call(t, s, "GET", "/_stats?level=shards&filter_path=indices.*.shards.*.routing.node,indices.*.shards.*.indexing.index_time_in_millis", "")
	if code != 200 || strings.Count(body, `"routing"`) != 60000 {
		t.Errorf("_stats?level=shards with filter_path: status %d, %d routing entries, want 60000", code, strings.Count(body, `"routing"`))
	}
	// Copies spread evenly: the allocator balances counts, 60000/37 ≈ 1621.6 per node.
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	for _, n := range s.Nodes {
		if n.ShardCount < 1621 || n.ShardCount > 1622 {
			t.Errorf("%s holds %d copies, want 1621 or 1622", n.Name, n.ShardCount)
		}
	}
}

func BenchmarkStep(b *testing.B) {
	s := newBig(b)
	b.ResetTimer()
	for range b.N {
		s.Step()
	}
}

func BenchmarkStatsLevelShards(b *testing.B) {
	s := newBig(b)
	s.Step()
	srv := httptest.NewServer(s.REST.Handler())
	defer srv.Close()
	for _, bc := range []struct{ name, query string }{
		{"full", "/_stats?level=shards"},
		{"filter_path", "/_stats?level=shards&filter_path=indices.*.shards.*.routing.node,indices.*.shards.*.indexing.index_time_in_millis"},
		// What the shardwise client asks for each cycle (opensearch.ShardStats).
		{"shardwise", "/_stats?level=shards&expand_wildcards=open,hidden&filter_path=_shards.total,_shards.successful,_shards.failed," +
			"indices.*.shards.*.routing.state,indices.*.shards.*.routing.primary,indices.*.shards.*.routing.node,indices.*.shards.*.routing.relocating_node," +
			"indices.*.shards.*.indexing.index_time_in_millis,indices.*.shards.*.indexing.index_total,indices.*.shards.*.search.query_time_in_millis," +
			"indices.*.shards.*.search.fetch_time_in_millis,indices.*.shards.*.search.query_total,indices.*.shards.*.store.size_in_bytes,indices.*.shards.*.docs.count"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				code, _ := simtest.Call(b, s, "GET", bc.query, "")
				if code != 200 {
					b.Fatalf("status %d", code)
				}
			}
		})
	}
}

func BenchmarkNodesStats(b *testing.B) {
	s := newBig(b)
	s.Step()
	b.ResetTimer()
	for range b.N {
		if code, _ := simtest.Call(b, s, "GET", "/_nodes/stats/thread_pool,indices,jvm,fs", ""); code != 200 {
			b.Fatalf("status %d", code)
		}
	}
}

func BenchmarkNew(b *testing.B) {
	sc := bigScenario(b)
	b.ResetTimer()
	for range b.N {
		if _, err := sim.New(sc, sim.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
