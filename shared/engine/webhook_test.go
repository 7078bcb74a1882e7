package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/state"
)

// pullOnlyAPI is the engine's own cluster port; a push must be read through the push reader, so
// reaching any of its methods is a test failure.
type pullOnlyAPI struct{ t *testing.T }

func (a pullOnlyAPI) Read(context.Context) (cluster.Sample, error) {
	a.t.Error("Read called: a push must not fall back to pulling")
	return cluster.Sample{}, errors.New("unexpected")
}

func (a pullOnlyAPI) ReadTopology(context.Context) (cluster.Snapshot, error) {
	a.t.Error("ReadTopology called")
	return cluster.Snapshot{}, errors.New("unexpected")
}

func (a pullOnlyAPI) Health(context.Context) (engine.Health, error) {
	a.t.Error("Health called")
	return engine.Health{}, nil
}

func (a pullOnlyAPI) Reroute(context.Context, []allocation.Move, bool) (engine.RerouteResult, error) {
	a.t.Error("Reroute called")
	return engine.RerouteResult{}, nil
}

func (a pullOnlyAPI) IndexSettings(context.Context, string) (map[string]string, error) {
	a.t.Error("IndexSettings called")
	return nil, nil
}

func (a pullOnlyAPI) PutIndexSettings(context.Context, string, map[string]any) error {
	a.t.Error("PutIndexSettings called")
	return nil
}

// TestIngestPushedNeedsItsPort: a push is read through the push reader its caller wires, never by
// pulling through the engine's own port; without one (nil), for a cluster not configured, or when
// it cannot connect, the push fails with a clear error, reported in the result, and nothing is
// stored or published.
func TestIngestPushedNeedsItsPort(t *testing.T) {
	errDown := errors.New("connection refused")
	built := 0
	dial := func(err error) func(string) (engine.PushReader[opensearch.NodesStats], error) {
		return func(string) (engine.PushReader[opensearch.NodesStats], error) {
			built++
			return nil, err
		}
	}
	ns := opensearch.NodesStats{Nodes: []opensearch.NodeStats{{ID: "a", Name: "node-a"}}}
	tests := []struct {
		name      string
		cluster   string
		readers   func(string) (engine.PushReader[opensearch.NodesStats], error)
		want      error
		wantBuilt int
	}{
		{name: "no push reader wired", cluster: "prod", want: engine.ErrNotWired},
		{name: "unknown cluster", cluster: "dev", readers: dial(nil), want: engine.ErrUnknownCluster},
		{name: "the push reader cannot connect", cluster: "prod", readers: dial(errDown), want: errDown, wantBuilt: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := state.NewMemory(nil)
			events := &bus.Memory{}
			e := &engine.Engine{
				Store:   st,
				Bus:     events,
				Cluster: func(string) (engine.ClusterAPI, error) { return pullOnlyAPI{t}, nil },
				Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
				Config:  config.Config{Clusters: []config.Cluster{{Name: "prod"}}},
			}
			built = 0
			r, err := engine.IngestPushed(t.Context(), e, tc.cluster, tc.readers, ns)
			if !errors.Is(err, tc.want) || r.Error == "" || r.SnapshotKey != "" {
				t.Errorf("got %+v, %v, want %v reported in the result and no snapshot", r, err, tc.want)
			}
			if built != tc.wantBuilt {
				t.Errorf("push reader built %d times, want %d", built, tc.wantBuilt)
			}
			if items, err := st.Query(t.Context(), "cluster#"+tc.cluster, ""); err != nil || len(items) != 0 {
				t.Errorf("stored %d items (%v), want none", len(items), err)
			}
			if n := len(events.Events()); n != 0 {
				t.Errorf("published %d events, want none", n)
			}
		})
	}
}
