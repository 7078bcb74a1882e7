package handler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/telemetry"
	"github.com/shardwise/shardwise/shared/webhook"
)

// Function is one Lambda's handler: the engine it drives, its metrics, and the webhook's port and
// secret.
type Function struct {
	Name    string
	Engine  *engine.Engine
	Metrics *telemetry.Metrics
	// WebhookSecret is the metrics webhook's HMAC secret (ingest only); nil accepts SigV4-signed
	// requests only.
	WebhookSecret webhook.SecretSource
	// Pushed connects the metrics webhook to a cluster to read a sample around pushed node stats
	// (ingest only), over the same connection as Engine.Cluster; nil answers a push with an error.
	Pushed func(name string) (engine.PushReader[opensearch.NodesStats], error)
}

func (f *Function) done() { flush(f.Metrics, os.Stdout, f.Engine.Log) }

// Ingest handles the schedule (every cluster), a direct invoke ({"clusters": [...]}), shardwise's
// own cadence events, and the metrics webhook's Function URL requests. It returns
// []engine.IngestResult for the first three, and an events.LambdaFunctionURLResponse for a
// Function URL request, whose failures are HTTP answers (see Webhook), never a Lambda error.
func (f *Function) Ingest(ctx context.Context, raw json.RawMessage) (any, error) {
	defer f.done()
	kind, err := classify(raw)
	if err != nil {
		return nil, err
	}
	var names []string
	switch kind {
	case kindFunctionURL:
		var req events.LambdaFunctionURLRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return webhook.ErrorResponse(http.StatusBadRequest, "malformed_request", fmt.Errorf("function URL request: %w", err), requestID(ctx, req)), nil
		}
		return f.webhook(ctx, req), nil
	case kindEventBridge:
		ev, err := eventBridgeEvent(raw)
		if err != nil {
			return nil, err
		}
		if ev.DetailType != "Scheduled Event" {
			return nil, fmt.Errorf("ingest: %w %q from %s", errUnsupported, ev.DetailType, ev.Source)
		}
	case kindDirect:
		d, err := decodeDirect(raw)
		if err != nil {
			return nil, err
		}
		names = d.Clusters
	default:
		return nil, fmt.Errorf("ingest: %w payload", errUnsupported)
	}
	return f.Engine.Ingest(ctx, names)
}

// Detect handles "Stats Ingested" and CloudWatch alarm state changes naming a cluster.
func (f *Function) Detect(ctx context.Context, raw json.RawMessage) (*engine.DetectResult, error) {
	defer f.done()
	ev, err := eventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	switch ev.DetailType {
	case bus.TypeStatsIngested:
		d, err := decodeDetail[bus.StatsIngested](ev)
		if err != nil {
			return nil, err
		}
		r, err := f.Engine.Detect(ctx, d.Cluster, d.SnapshotKey)
		return &r, err
	case "CloudWatch Alarm State Change":
		name, alarm, ok, err := alarmCluster(raw, f.Engine.Config.Clusters)
		if errors.Is(err, webhook.ErrUnknownCluster) {
			// The stack's alarm rule takes every shardwise-* alarm of the account and region, so
			// another stack's alarm arrives here too: not this stack's to act on, and no failure
			// (a failure would be retried into the dead-letter queue and raise its alarm).
			cmp.Or(f.Engine.Log, slog.Default()).Warn("detect: alarm about no cluster this stack watches, ignored", "error", err.Error())
			return nil, nil
		}
		if err != nil || !ok {
			return nil, err
		}
		// A fresh sample, planned at once: the latest stored snapshot is planned already.
		_, r, err := f.Engine.DetectNow(ctx, name, fmt.Sprintf("CloudWatch alarm %s entered ALARM", alarm.Name))
		return &r, err
	}
	return nil, fmt.Errorf("detect: %w %q", errUnsupported, ev.DetailType)
}

// Move handles "Moves Planned".
func (f *Function) Move(ctx context.Context, raw json.RawMessage) (*engine.MoveResult, error) {
	defer f.done()
	ev, err := eventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.DetailType != bus.TypeMovesPlanned {
		return nil, fmt.Errorf("move: %w %q", errUnsupported, ev.DetailType)
	}
	d, err := decodeDetail[bus.MovesPlanned](ev)
	if err != nil {
		return nil, fmt.Errorf("move: %w", err)
	}
	r, err := f.Engine.Move(ctx, d.Cluster, d.PlanKey)
	return &r, err
}

// Replicas handles "Stats Ingested".
func (f *Function) Replicas(ctx context.Context, raw json.RawMessage) (*engine.ReplicasResult, error) {
	defer f.done()
	ev, err := eventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.DetailType != bus.TypeStatsIngested {
		return nil, fmt.Errorf("replicas: %w %q", errUnsupported, ev.DetailType)
	}
	d, err := decodeDetail[bus.StatsIngested](ev)
	if err != nil {
		return nil, err
	}
	r, err := f.Engine.Replicas(ctx, d.Cluster, d.SnapshotKey)
	return &r, err
}

// alarmCluster finds the cluster a CloudWatch alarm state-change event is about, with the same
// rules as the metrics webhook (webhook.Alarm.Cluster), and returns the alarm with it. Alarms
// leaving ALARM are ignored (ok=false).
func alarmCluster(event json.RawMessage, clusters []config.Cluster) (string, webhook.Alarm, bool, error) {
	a, err := webhook.ParseAlarm(event)
	if err != nil {
		return "", a, false, err
	}
	if !a.InAlarm {
		return "", a, false, nil
	}
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, c.Name)
	}
	name, err := a.Cluster(names)
	if err != nil {
		return "", a, false, err
	}
	return name, a, true, nil
}

// Sandbox handles "Stats Ingested".
func (f *Function) Sandbox(ctx context.Context, raw json.RawMessage) (*engine.SandboxResult, error) {
	defer f.done()
	ev, err := eventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.DetailType != bus.TypeStatsIngested {
		return nil, fmt.Errorf("sandbox: %w %q", errUnsupported, ev.DetailType)
	}
	d, err := decodeDetail[bus.StatsIngested](ev)
	if err != nil {
		return nil, err
	}
	r, err := f.Engine.Sandbox(ctx, d.Cluster)
	return &r, err
}
