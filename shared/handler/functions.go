package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Function is one Lambda's handler: the engine it drives and its metrics.
type Function struct {
	Name    string
	Engine  *engine.Engine
	Metrics *telemetry.Metrics
}

func (f *Function) done() { Flush(f.Metrics, os.Stdout, f.Engine.Log) }

// Ingest handles the schedule (every cluster), a direct invoke ({"clusters": [...]}) and shardwise's
// own cadence events.
func (f *Function) Ingest(ctx context.Context, raw json.RawMessage) ([]engine.IngestResult, error) {
	defer f.done()
	kind, err := Classify(raw)
	if err != nil {
		return nil, err
	}
	var names []string
	switch kind {
	case KindEventBridge:
		ev, err := EventBridgeEvent(raw)
		if err != nil {
			return nil, err
		}
		if ev.DetailType != "Scheduled Event" {
			return nil, fmt.Errorf("ingest: %w %q from %s", ErrUnsupported, ev.DetailType, ev.Source)
		}
	case KindDirect:
		d, err := DecodeDirect(raw)
		if err != nil {
			return nil, err
		}
		names = d.Clusters
	default:
		return nil, fmt.Errorf("ingest: %w: Function URL requests are not accepted by this build", ErrUnsupported)
	}
	return f.Engine.Ingest(ctx, names)
}

// Detect handles "Stats Ingested" and CloudWatch alarm state changes naming a cluster.
func (f *Function) Detect(ctx context.Context, raw json.RawMessage) (*engine.DetectResult, error) {
	defer f.done()
	ev, err := EventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	switch ev.DetailType {
	case bus.TypeStatsIngested:
		d, err := DecodeDetail[bus.StatsIngested](ev)
		if err != nil {
			return nil, err
		}
		r, err := f.Engine.Detect(ctx, d.Cluster, d.SnapshotKey)
		return &r, err
	case "CloudWatch Alarm State Change":
		name, ok, err := alarmCluster(ev.Detail, f.Engine.Config.Clusters)
		if err != nil || !ok {
			return nil, err
		}
		r, err := f.Engine.Detect(ctx, name, "")
		return &r, err
	}
	return nil, fmt.Errorf("detect: %w %q", ErrUnsupported, ev.DetailType)
}

// Move handles "Moves Planned".
func (f *Function) Move(ctx context.Context, raw json.RawMessage) (*engine.MoveResult, error) {
	defer f.done()
	ev, err := EventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.DetailType != bus.TypeMovesPlanned {
		return nil, fmt.Errorf("move: %w %q", ErrUnsupported, ev.DetailType)
	}
	var d bus.MovesPlanned
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return nil, fmt.Errorf("move: %q detail: %w", ev.DetailType, err)
	}
	r, err := f.Engine.Move(ctx, d.Cluster, d.PlanKey)
	return &r, err
}

// Replicas handles "Stats Ingested".
func (f *Function) Replicas(ctx context.Context, raw json.RawMessage) (*engine.ReplicasResult, error) {
	defer f.done()
	ev, err := EventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.DetailType != bus.TypeStatsIngested {
		return nil, fmt.Errorf("replicas: %w %q", ErrUnsupported, ev.DetailType)
	}
	d, err := DecodeDetail[bus.StatsIngested](ev)
	if err != nil {
		return nil, err
	}
	r, err := f.Engine.Replicas(ctx, d.Cluster, d.SnapshotKey)
	return &r, err
}

// alarmCluster finds the cluster an alarm is about: an ALARM state, and either a metric dimension
// DomainName (Amazon OpenSearch Service metrics) equal to a cluster's name or an alarm name
// "shardwise-<cluster>-…". Alarms leaving ALARM are ignored (ok=false).
func alarmCluster(detail json.RawMessage, clusters []config.Cluster) (string, bool, error) {
	var d struct {
		AlarmName string `json:"alarmName"`
		State     struct {
			Value string `json:"value"`
		} `json:"state"`
		Configuration struct {
			Metrics []struct {
				MetricStat struct {
					Metric struct {
						Dimensions map[string]string `json:"dimensions"`
					} `json:"metric"`
				} `json:"metricStat"`
			} `json:"metrics"`
		} `json:"configuration"`
	}
	if err := json.Unmarshal(detail, &d); err != nil {
		return "", false, fmt.Errorf("alarm detail: %w", err)
	}
	if d.State.Value != "ALARM" {
		return "", false, nil
	}
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, c.Name)
	}
	for _, m := range d.Configuration.Metrics {
		if dn := m.MetricStat.Metric.Dimensions["DomainName"]; dn != "" {
			for _, n := range names {
				if n == dn {
					return n, true, nil
				}
			}
		}
	}
	// Longest name first, so "prod-eu" wins over "prod" for "shardwise-prod-eu-node-3".
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		if strings.HasPrefix(d.AlarmName, "shardwise-"+n+"-") || d.AlarmName == "shardwise-"+n {
			return n, true, nil
		}
	}
	return "", false, fmt.Errorf("alarm %q names no configured cluster (want DomainName dimension or shardwise-<cluster>-…)", d.AlarmName)
}

// Sandbox handles "Stats Ingested".
func (f *Function) Sandbox(ctx context.Context, raw json.RawMessage) (*engine.SandboxResult, error) {
	defer f.done()
	ev, err := EventBridgeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.DetailType != bus.TypeStatsIngested {
		return nil, fmt.Errorf("sandbox: %w %q", ErrUnsupported, ev.DetailType)
	}
	d, err := DecodeDetail[bus.StatsIngested](ev)
	if err != nil {
		return nil, err
	}
	r, err := f.Engine.Sandbox(ctx, d.Cluster)
	return &r, err
}
