// Package handler turns Lambda events into engine calls and engine results into responses: the thin
// layer between aws-lambda-go and the engine. Each function's main.go builds a Function with Env and
// hands the method named after it (Ingest, Detect, Move, Replicas, Sandbox) to lambda.Start.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/shardwise/shardwise/shared/buildinfo"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/jsonstrict"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Env builds the Function a Lambda runs, named function: configuration from the environment and
// the SSM parameter it may name (validated; a bad value stops the function naming the field), the
// DynamoDB store, the EventBridge bus, one OpenSearch client per cluster (built on first use,
// reused by warm invocations, and handed to every port: the engine's and the webhook's) and EMF
// metrics. The ingest function adds its WebhookSecret.
func Env(ctx context.Context, function string) (*Function, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: aws config: %w", function, err)
	}
	// The SSM and Secrets Manager clients are built for every function but called only when the
	// stack names a configuration parameter or a basic-auth secret (config.LoadWithSecret): once,
	// at cold start.
	cfg, err := config.LoadWithSecret(ctx, os.Getenv, ssm.NewFromConfig(awsCfg), secretsmanager.NewFromConfig(awsCfg))
	if err != nil {
		return nil, fmt.Errorf("%s: configuration: %w", function, err)
	}
	level, err := telemetry.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("%s: log_level: %w", function, err)
	}
	metrics := telemetry.NewMetrics(time.Now)
	log := telemetry.NewLogger(os.Stdout, level, telemetry.AttrFunction, function)
	bi := buildinfo.Get()
	log.Info("start", "version", bi.Version, "commit", bi.Commit, "go_version", bi.GoVersion)
	for _, d := range cfg.Deprecations() {
		log.Warn("configuration: " + d)
	}
	conns := &collect.Connections{Dial: dialer(cfg, &awsCfg, log)}
	e := &engine.Engine{
		Store:   state.NewDynamo(dynamoClient(awsCfg), cfg.Table, time.Now),
		Bus:     &bus.EventBridge{Client: eventbridge.NewFromConfig(awsCfg), BusName: cfg.Bus},
		Cluster: conns.Cluster,
		Tenants: conns.Tenants,
		Clock:   time.Now,
		Log:     log,
		// Only the metrics the stack's dashboard and alarms read: each costs a month in CloudWatch.
		Metrics: telemetry.PublishedOnly(metrics),
		Config:  cfg,
	}
	return &Function{Name: function, Engine: e, Metrics: metrics, Pushed: conns.Pushed}, nil
}

// dynamoClient builds the state table's client with shardwise's retry settings
// (state.WithDynamoRetry): the SDK's default of 3 attempts gives up on a throttled burst that
// the documented 10 ride out.
func dynamoClient(awsCfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(awsCfg, state.WithDynamoRetry)
}

// dialer builds a configured cluster's client and its API. The clients log their warnings
// (insecure credentials) to log.
func dialer(cfg config.Config, awsCfg *aws.Config, log *slog.Logger) func(string) (*collect.API, error) {
	return func(name string) (*collect.API, error) {
		cl, ok := cfg.Cluster(name)
		if !ok {
			return nil, fmt.Errorf("%w %q", engine.ErrUnknownCluster, name)
		}
		oc, err := cl.OpenSearch()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", name, err)
		}
		oc.AWS, oc.Log = awsCfg, log
		client, err := opensearch.New(context.Background(), oc)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", name, err)
		}
		return collect.New(client, time.Now), nil
	}
}

// Flush writes the invocation's metrics as EMF to w (stdout in Lambda).
func flush(m *telemetry.Metrics, w io.Writer, log *slog.Logger) {
	if m == nil {
		return
	}
	if err := m.Flush(w); err != nil {
		log.Error("metrics flush", "error", err)
	}
}

// payloadKind is what a raw Lambda payload is.
type payloadKind int

// The payloads a function can receive.
const (
	kindUnknown payloadKind = iota
	kindEventBridge
	kindDirect
	kindFunctionURL
)

// directInvoke is a direct invocation's payload: {"clusters": ["prod"]} (empty: every cluster).
type directInvoke struct {
	Clusters    []string `json:"clusters"`
	Cluster     string   `json:"cluster,omitempty"`
	SnapshotKey string   `json:"snapshot_key,omitempty"`
	PlanKey     string   `json:"plan_key,omitempty"`
}

// classify tells an EventBridge event, a Function URL request and a direct invoke apart by their
// required fields.
func classify(raw json.RawMessage) (payloadKind, error) {
	var probe struct {
		DetailType     *string         `json:"detail-type"`
		Source         *string         `json:"source"`
		RequestContext json.RawMessage `json:"requestContext"`
		RawPath        *string         `json:"rawPath"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return kindUnknown, fmt.Errorf("event: not a JSON object: %w", err)
	}
	switch {
	case probe.DetailType != nil && probe.Source != nil:
		return kindEventBridge, nil
	case probe.RequestContext != nil && probe.RawPath != nil:
		return kindFunctionURL, nil
	default:
		return kindDirect, nil
	}
}

// eventBridgeEvent decodes an EventBridge event.
func eventBridgeEvent(raw json.RawMessage) (events.CloudWatchEvent, error) {
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, fmt.Errorf("eventbridge event: %w", err)
	}
	return ev, nil
}

// decodeDetail decodes an event's detail strictly: shardwise's own events have known shapes.
func decodeDetail[T any](ev events.CloudWatchEvent) (T, error) {
	var d T
	if err := jsonstrict.Decode(ev.Detail, &d); err != nil {
		return d, fmt.Errorf("%q detail: %w", ev.DetailType, err)
	}
	return d, nil
}

// decodeDirect decodes a direct invocation strictly.
func decodeDirect(raw json.RawMessage) (directInvoke, error) {
	var d directInvoke
	if err := jsonstrict.Decode(raw, &d); err != nil {
		return d, fmt.Errorf("direct invoke: %w", err)
	}
	if d.Cluster != "" {
		d.Clusters = append(d.Clusters, d.Cluster)
	}
	return d, nil
}

// errUnsupported is returned for an event a function is not subscribed to.
var errUnsupported = errors.New("unsupported event")
