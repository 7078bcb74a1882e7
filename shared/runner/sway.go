package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/shardwise/shardwise/shared/baseline/sway"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
)

// swayRun is the Sway baseline acting on the simulator each tick, instead of OpenSearch's count
// balancer: it reads the cluster through shardwise's production read path and issues each move as
// its own _cluster/reroute call, as Sway's Engine.executeMoves does.
type swayRun struct {
	api        *collect.API
	client     *opensearch.Client
	rebalancer sway.Rebalancer
	dryRun     bool
	log        *slog.Logger
}

// newSwayRun connects Sway to the cluster the engine reaches, with Sway's defaults; dryRun plans
// without rerouting, as Sway's dry_run does.
func newSwayRun(ctx context.Context, eng *engine.Engine, clock func() time.Time, dryRun bool, logw io.Writer) (*swayRun, error) {
	if len(eng.Config.Clusters) == 0 {
		return nil, errors.New("sway: no cluster to act on")
	}
	client, err := opensearch.New(ctx, opensearch.Config{URLs: eng.Config.Clusters[0].URLs, Auth: opensearch.AuthNone})
	if err != nil {
		return nil, fmt.Errorf("sway: %w", err)
	}
	return &swayRun{api: collect.New(client, clock), client: client, rebalancer: sway.Rebalancer{Config: sway.Default()},
		dryRun: dryRun, log: slog.New(slog.NewJSONHandler(logw, nil))}, nil
}

// cycle is one Sway cycle (Engine.runCycle): read, breaker, plan, execute. A failed read or move
// costs that cycle or that move, as Sway logs it and goes on; anything else stops the run.
func (r *swayRun) cycle(ctx context.Context, t *Tick) error {
	sample, err := r.api.Read(ctx)
	if err != nil {
		if !isTransient(err) {
			return fmt.Errorf("sway: %w", err)
		}
		t.Breaker = "sway: read failed: " + err.Error()
		return nil
	}
	d, err := r.rebalancer.Decide(sway.Observe(sample))
	if errors.Is(err, sway.ErrNoDataNodes) {
		t.Breaker = "sway: " + err.Error()
		return nil
	}
	if err != nil {
		return fmt.Errorf("sway: %w", err)
	}
	if d.Breaker.Open {
		t.Breaker = "sway: circuit open: " + d.Breaker.Reason()
		return nil
	}
	for _, m := range d.Moves {
		outcome := engine.OutcomeDryRun
		if !r.dryRun {
			outcome = engine.OutcomeExecuted
			cmd := opensearch.Move(m.Index, m.Shard, m.FromName, m.ToName)
			if _, err := r.client.Reroute(ctx, []opensearch.RerouteCommand{cmd}, opensearch.RerouteOptions{}); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.log.Warn("sway move failed", "index", m.Index, "shard", m.Shard, "from", m.FromName, "to", m.ToName,
					"reason", m.Reason.String(), "error", err.Error())
				continue
			}
		}
		r.log.Info("sway move", "index", m.Index, "shard", m.Shard, "from", m.FromName, "to", m.ToName,
			"outcome", outcome, "reason", m.Reason.String())
		t.Moves = append(t.Moves, fmt.Sprintf("%s %s[%d] %s→%s (%s)", outcome, m.Index, m.Shard, m.FromName, m.ToName, m.Reason))
	}
	return nil
}
