package allocation

import (
	"github.com/shardwise/shardwise/shared/cluster"

	"encoding/json"
	"testing"
)

// TestHeapScreenSamePlan: skipping the home search of copies whose node every other node's heap
// refuses (heapRefusesAll), and taking the remain deciders' answer once per node for copies of
// indices without filters of their own (remainNo), give the plan, notes and memory that running
// every decider for every copy and searching every node give, on clusters where the shortcuts
// skip work and where they must not: nodes over the heap limit, a node drained by the cluster's
// filter, indices with filters of their own.
func TestHeapScreenSamePlan(t *testing.T) {
	shape := benchShape{nodes: 12, indices: 300, copies: 2400, copyLoad: 0.005}
	cases := []struct {
		name string
		// heap is each node's heap use as a share of its maximum.
		heap        func(i int) float64
		wantScreens bool // the screen skips searches
		wantMoves   bool // the plan has moves to compare
		// filter, when set, changes the snapshot's filters.
		filter func(s *cluster.Snapshot)
	}{
		{"old nodes full, new nodes with room for a few copies", func(i int) float64 {
			if i < 4 {
				return 0.99
			}
			return 0.84
		}, true, true, nil},
		{"every node over the limit", func(int) float64 { return 0.95 }, true, false, nil},
		{"one node over the limit, room everywhere else", func(i int) float64 {
			if i == 0 {
				return 0.90
			}
			return 0.30
		}, false, true, nil},
		{"no node over the limit", func(int) float64 { return 0.5 }, false, false, nil},
		{"a node drained by the cluster's filter, another over the limit", func(i int) float64 {
			if i == 1 {
				return 0.90
			}
			return 0.30
		}, false, true, func(s *cluster.Snapshot) {
			s.Settings.Filters.Exclude = map[string]string{"_name": "node-03"}
		}},
		{"indices with filters of their own beside a node over the limit", func(i int) float64 {
			if i == 0 {
				return 0.90
			}
			return 0.30
		}, false, true, func(s *cluster.Snapshot) {
			for i := range s.Indices {
				switch i % 3 {
				case 0:
					s.Indices[i].Filters.Require = map[string]string{"_name": "node-0*"}
				case 1:
					s.Indices[i].Filters.Exclude = map[string]string{"_name": "node-05,node-06"}
				}
			}
		}},
	}
	limits := []struct {
		name string
		lim  cluster.RecoveryLimits
		// screens: whether the case's wantScreens holds; at OpenSearch's limits the outgoing
		// limit may hold every other copy back before the screen is asked.
		screens bool
	}{
		// Wide enough that the copies reach the home search the screen skips.
		{"wide recovery limits", cluster.RecoveryLimits{NodeIncoming: 1000, NodeOutgoing: 1000, ClusterRebalance: -1, Known: true}, true},
		// OpenSearch's 2 in, 2 out: the new nodes' slots fill and the screen counts them as refusing.
		{"default recovery limits", cluster.RecoveryLimits{}, false},
	}
	for _, tc := range cases {
		for _, lim := range limits {
			t.Run(tc.name+"/"+lim.name, func(t *testing.T) {
				s := benchSnapshot(shape, 0)
				for i := range s.Nodes {
					s.Nodes[i].HeapUsedBytes = int64(tc.heap(i) * float64(s.Nodes[i].HeapMaxBytes))
				}
				s.Settings.Recoveries = lim.lim
				if tc.filter != nil {
					tc.filter(s)
				}
				cfg := DefaultConfig()
				screened, mem, n := planCycle(s, Memory{}, cfg, true)
				full, fullMem, _ := planCycle(s, Memory{}, cfg, false)
				if got, want := mustJSON(t, screened), mustJSON(t, full); got != want {
					t.Fatalf("plans differ with the heap screen (%d moves, %d notes) and without (%d moves, %d notes)",
						len(screened.Moves), len(screened.Notes), len(full.Moves), len(full.Notes))
				}
				if got, want := mustJSON(t, mem), mustJSON(t, fullMem); got != want {
					t.Fatalf("memory differs with the heap screen:\n%s\nwithout:\n%s", got, want)
				}
				if lim.screens && (n > 0) != tc.wantScreens {
					t.Errorf("screen skipped %d searches, want skips: %v", n, tc.wantScreens)
				}
				if tc.wantMoves && len(full.Moves) == 0 {
					t.Errorf("no moves, want some")
				}
				t.Logf("%d moves, %d notes, %d searches skipped", len(full.Moves), len(full.Notes), n)
			})
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
