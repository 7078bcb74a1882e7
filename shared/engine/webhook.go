package engine

import (
	"context"
	"errors"

	"github.com/shardwise/shardwise/shared/cluster"
)

// PushReader is the metrics webhook's port: it builds a sample around node stats a collector
// pushed, reading the rest (shard stats, cluster state, health, settings) itself. T is the pushed
// document as the port reads it (collect's is OpenSearch's _nodes/stats answer); the engine only
// hands it on, so it knows nothing of its format.
type PushReader[T any] interface {
	// ReadPushed returns a sample whose node stats are pushed. It fails, wrapping ErrPushRejected,
	// when they do not describe the cluster the API reads.
	ReadPushed(ctx context.Context, pushed T) (cluster.Sample, error)
}

// ErrPushRejected is returned when pushed node stats do not fit the cluster they were sent for (a
// node it does not have, nodes missing): nothing is stored.
var ErrPushRejected = errors.New("pushed node stats rejected")

// IngestPushed ingests one cluster as Ingest does, with the node stats a collector pushed in place
// of reading _nodes/stats: rates, the snapshot and "Stats Ingested" are derived from them the same
// way. Node stats carry their own timestamps, so a push that arrives late yields correct rates
// over the interval it covers, and the staleness check reports its age. readers connects to the
// cluster to read around the push; the caller, which knows T, wires it from the same connection
// as e.Cluster (which the filter cleanup uses). A nil readers is ErrNotWired, before anything is
// read.
// It is a function, not a method, because Go methods take no type parameters.
func IngestPushed[T any](ctx context.Context, e *Engine, name string, readers func(name string) (PushReader[T], error), pushed T) (IngestResult, error) {
	return e.ingestOne(ctx, name, func(ctx context.Context, _ ClusterAPI) (cluster.Sample, error) {
		pr, err := connect(e, name, "IngestPushed's push reader factory", readers)
		if err != nil {
			return cluster.Sample{}, err
		}
		return pr.ReadPushed(ctx, pushed)
	}, false)
}

// IngestAndDetect ingests one cluster now and plans on that snapshot at once: what an alert about
// a cluster's nodes asks for, rather than waiting up to a minute for the schedule. "Stats
// Ingested" goes out once the plan is stored (as in DetectNow), so the detect function it wakes
// finds this plan and publishes nothing twice, rather than racing this call to plan the snapshot.
func (e *Engine) IngestAndDetect(ctx context.Context, name string) (IngestResult, DetectResult, error) {
	ir, err := e.ingestWith(ctx, name, pull, ingestOptions{deferPublish: true})
	if err != nil {
		return ir, DetectResult{Cluster: name}, err
	}
	dr, err := e.Detect(ctx, name, ir.SnapshotKey)
	// The snapshot is stored whatever the plan's fate: replicas and sandbox still want it.
	if perr := e.publishIngested(ctx, &ir); perr != nil {
		err = errors.Join(err, perr)
	}
	return ir, dr, err
}
