// Package engine is what each shardwise function does, one method per function: Ingest, Detect,
// Move, Replicas and Sandbox. Each reads what it needs from the state store, decides with the pure
// packages (allocation, replicas, safety, sandbox), acts through the cluster API behind the circuit
// breaker, and publishes its events. The Lambda handlers, the local runner and the CLI all call these
// same methods, so the code that runs in AWS is the code the simulator exercises.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Health is the fresh cluster health the breaker reads just before acting.
type Health struct {
	Status       string
	Relocating   int
	Initializing int
	Unassigned   int
}

// ErrRerouteRefused is matched by a Reroute error when OpenSearch's deciders refuse a move of the
// call; nothing of the call applies.
var ErrRerouteRefused = errors.New("reroute refused")

// ErrForbidden is matched by a cluster port's error when the cluster refuses the caller (HTTP 401
// or 403), as a managed domain that does not allow _cluster/reroute does. The ports' implementation
// translates its client's errors, so the engine speaks only this contract.
var ErrForbidden = errors.New("forbidden")

// ErrNotFound is matched by a cluster port's error when the index, shard or task does not exist.
var ErrNotFound = errors.New("not found")

// RerouteResult is OpenSearch's answer to a reroute: each command's decider explanations.
type RerouteResult struct {
	Explanations []string
}

// HealthReader is what the breakers of move and replicas need from a cluster: its health.
type HealthReader interface {
	Health(ctx context.Context) (Health, error)
}

// ClusterAPI is the ports of ingest, detect, move and replicas in one: each of their steps takes
// only the port it uses (SampleReader for ingest, HealthReader for the breakers, Mover and
// SettingsEditor for moves and filters). The sandbox function declares its own (TenantCluster), and
// the metrics webhook its own (PushReader), each from a factory of its own type, so a composition
// root that leaves one out fails to compile, or, with the factory nil, gets ErrNotWired. The
// production implementation of all three talks to OpenSearch over HTTP with opensearch-go
// (package collect); the local runner uses that same one against the simulator.
type ClusterAPI interface {
	SampleReader
	HealthReader
	Mover
}

// Engine runs the functions' work.
type Engine struct {
	Store state.Store
	Bus   bus.Publisher
	// Cluster connects ingest, detect, move and replicas to a cluster.
	Cluster func(name string) (ClusterAPI, error)
	// Tenants connects the sandbox function to a cluster.
	Tenants func(name string) (TenantCluster, error)
	Clock   func() time.Time
	// Sleep waits on Clock's time; nil waits in real time. The local runner advances the
	// simulator's virtual clock instead, so the sandbox function's loop runs in virtual time.
	Sleep func(ctx context.Context, d time.Duration) error
	// SandboxLoop paces the sandbox function's passes within one invocation.
	SandboxLoop SandboxLoop
	Log         *slog.Logger
	Metrics     MetricSink
	Config      config.Config
}

// ErrUnknownCluster is returned for a cluster name the configuration does not list.
var ErrUnknownCluster = errors.New("unknown cluster")

func (e *Engine) now() time.Time {
	if e.Clock != nil {
		return e.Clock()
	}
	return time.Now()
}

func (e *Engine) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// ErrNotWired is returned when the factory of the port a function needs is nil: the composition
// root that built the engine did not wire it. Nothing has been read or changed.
var ErrNotWired = errors.New("port not wired")

func (e *Engine) api(name string) (ClusterAPI, error) {
	return connect(e, name, "Engine.Cluster", e.Cluster)
}

// connect returns the port of cluster name that factory builds: the name must be configured and the
// factory (called what in the error) wired.
func connect[P any](e *Engine, name, what string, factory func(string) (P, error)) (P, error) {
	var none P
	if _, ok := e.Config.Cluster(name); !ok {
		return none, fmt.Errorf("%w %q", ErrUnknownCluster, name)
	}
	if factory == nil {
		return none, fmt.Errorf("%w: %s is nil, so nothing connects to cluster %q", ErrNotWired, what, name)
	}
	return factory(name)
}

// MetricSink records a metric; in Lambda it is CloudWatch EMF on stdout (telemetry.Metrics).
type MetricSink interface {
	Add(name string, unit telemetry.Unit, value float64, dims ...telemetry.Dimension)
}

func (e *Engine) metric(clusterName, name string, unit telemetry.Unit, v float64) {
	if e.Metrics != nil {
		e.Metrics.Add(name, unit, v, telemetry.Dimension{Name: "Cluster", Value: clusterName})
	}
}

// pk is the partition holding everything about one cluster, snapshots included.
func pk(clusterName string) string { return snapshots.PK(clusterName) }

func (e *Engine) ttl() time.Duration { return e.Config.SnapshotTTL.Std() }
