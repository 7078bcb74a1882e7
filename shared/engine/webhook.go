package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardwise/shardwise/shared/cluster"
)

// PushReader is a ClusterAPI that builds a sample around node stats a collector pushed to the
// metrics webhook, reading the rest (shard stats, cluster state, health, settings) itself. T is
// the pushed document as the API reads it (collect's is OpenSearch's _nodes/stats answer); the
// engine only hands it on, so it knows nothing of its format.
type PushReader[T any] interface {
	// ReadPushed returns a sample whose node stats are pushed. It fails, wrapping ErrPushRejected,
	// when they do not describe the cluster the API reads.
	ReadPushed(ctx context.Context, pushed T) (cluster.Sample, error)
}

var (
	// ErrPushRejected is returned when pushed node stats do not fit the cluster they were sent for
	// (a node it does not have, nodes missing): nothing is stored.
	ErrPushRejected = errors.New("pushed node stats rejected")
	// ErrPushUnsupported is returned when a cluster's API cannot take pushed node stats.
	ErrPushUnsupported = errors.New("cluster API cannot take pushed node stats")
)

// IngestPushed ingests one cluster as Ingest does, with the node stats a collector pushed in place
// of reading _nodes/stats: rates, the snapshot and "Stats Ingested" are derived from them the same
// way. Node stats carry their own timestamps, so a push that arrives late yields correct rates
// over the interval it covers, and the staleness check reports its age.
// It is a function, not a method, because Go methods take no type parameters.
func IngestPushed[T any](ctx context.Context, e *Engine, name string, pushed T) (IngestResult, error) {
	return e.ingestOne(ctx, name, func(ctx context.Context, api ClusterAPI) (cluster.Sample, error) {
		pr, ok := api.(PushReader[T])
		if !ok {
			return cluster.Sample{}, fmt.Errorf("%w: %T cannot read a pushed %T", ErrPushUnsupported, api, pushed)
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
