package collect

import (
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// simAPI serves the steady scenario's cluster over HTTP and returns the collector on it.
func simAPI(t *testing.T) (*API, *sim.Sim) {
	t.Helper()
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", "steady.json"))
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
	return New(client, s.Now), s
}

// legalAndRefused returns a move every decider allows and one the same-shard decider refuses:
// the second copy of a shard sent to the node holding its first.
func legalAndRefused(t *testing.T, snap cluster.Snapshot) (allocation.Move, allocation.Move) {
	t.Helper()
	holds := map[cluster.ShardID]map[string]bool{} // shard → nodes
	for _, c := range snap.Copies {
		id := c.ID()
		if holds[id] == nil {
			holds[id] = map[string]bool{}
		}
		holds[id][c.Node] = true
	}
	var legal, refused *allocation.Move
	for _, c := range snap.Copies {
		for _, n := range snap.Nodes {
			if refused == nil && n.ID != c.Node && holds[c.ID()][n.ID] {
				refused = &allocation.Move{Index: c.Index, Shard: c.Shard, From: c.Node, To: n.ID, FromName: c.Node, ToName: n.Name}
			}
		}
	}
	for _, c := range snap.Copies {
		for _, n := range snap.Nodes {
			if legal == nil && refused != nil && c.ID() != (cluster.ShardID{Index: refused.Index, Shard: refused.Shard}) && !holds[c.ID()][n.ID] {
				legal = &allocation.Move{Index: c.Index, Shard: c.Shard, From: c.Node, To: n.ID, FromName: c.Node, ToName: n.Name}
			}
		}
	}
	if legal == nil || refused == nil {
		t.Fatalf("steady has no legal and refused move pair: legal %v refused %v", legal, refused)
	}
	return *legal, *refused
}

// TestRerouteRefusalIsNeverHidden: with explain, OpenSearch answers a refused command with a NO
// decision and HTTP 200 instead of an error, and applies the other commands of the call. A dry run
// with a NO is therefore a refusal of the whole call, and the real call is sent without explain,
// so that a NO fails it whole and nothing of it applies.
func TestRerouteRefusalIsNeverHidden(t *testing.T) {
	for _, dryRun := range []bool{true, false} {
		name := map[bool]string{true: "dry run", false: "real call"}[dryRun]
		t.Run(name, func(t *testing.T) {
			api, s := simAPI(t)
			sample, err := api.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			legal, refused := legalAndRefused(t, sample.Snapshot)
			_, err = api.Reroute(t.Context(), []allocation.Move{legal, refused}, dryRun)
			if !errors.Is(err, engine.ErrRerouteRefused) {
				t.Fatalf("got err %v, want ErrRerouteRefused", err)
			}
			if dryRun && !strings.Contains(err.Error(), "same_shard NO") {
				t.Fatalf("got err %v, want it to name the same_shard NO decision", err)
			}
			after, err := api.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range after.Snapshot.Copies {
				if c.State == cluster.StateRelocating {
					t.Fatalf("%s[%d] relocates %s→%s: half of a refused call was applied", c.Index, c.Shard, c.Node, c.RelocatingNode)
				}
			}
			if res := s.Result(); res.Moves != 0 {
				t.Fatalf("simulator counted %d moves, want 0", res.Moves)
			}
			// The legal move alone goes through.
			if _, err := api.Reroute(t.Context(), []allocation.Move{legal}, dryRun); err != nil {
				t.Fatalf("legal move alone: %v", err)
			}
		})
	}
}
