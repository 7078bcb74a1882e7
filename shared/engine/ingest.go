package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// IngestResult is one cluster's ingest outcome.
type IngestResult struct {
	Cluster     string            `json:"cluster"`
	SnapshotKey string            `json:"snapshot_key,omitempty"`
	Snapshot    *cluster.Snapshot `json:"-"`
	// Duplicate: the last sample is too recent for a new one (see minSampleInterval); SnapshotKey
	// is the last sample's, and nothing was stored or published.
	Duplicate bool   `json:"duplicate,omitempty"`
	Error     string `json:"error,omitempty"`
	// ingested is the "Stats Ingested" event of a snapshot whose publication the caller deferred
	// (ingestOptions.deferPublish); nil once published, and for a duplicate.
	ingested *bus.StatsIngested
}

// ingestOptions are what differs between the ways a cluster gets ingested.
type ingestOptions struct {
	// scheduled is set for the cadence's own trigger, which a duplicate delivery may repeat, and
	// for detect's alarm-triggered sample (see minSampleInterval); a webhook push or alert asks
	// for a sample now, whenever the last one was.
	scheduled bool
	// skipCleanup leaves the removal of finished allocation filters to the ingest function's
	// next cycle: the detect function's alarm-triggered sample only reads the cluster, so its
	// role needs no settings PUT.
	skipCleanup bool
	// deferPublish keeps "Stats Ingested" in the result for publishIngested, so that a caller
	// planning on the snapshot stores its plan before the detect function, woken by that event,
	// can plan the same snapshot without the caller's reason.
	deferPublish bool
}

// minSampleInterval is the shortest time between two scheduled samples of a cluster. Samples come
// every 30 s; two scheduled ones within 5 s are one trigger delivered twice.
const minSampleInterval = 5 * time.Second

// MinSampleInterval is minSampleInterval for callers that choose a sampling interval (the CLI's
// --interval): closer samples are merged.
const MinSampleInterval = minSampleInterval

// Ingest reads each cluster, derives rates from the previous counters, stores the snapshot and
// publishes "Stats Ingested". One cluster failing does not stop the others: its failure is in its
// result, and the error is nil while any cluster succeeded, so that the caller (the state
// machine's branch, the schedule) goes on for every other cluster. Only when all fail is it an
// error.
func (e *Engine) Ingest(ctx context.Context, names []string) ([]IngestResult, error) {
	if len(names) == 0 {
		for _, c := range e.Config.Clusters {
			names = append(names, c.Name)
		}
	}
	out := make([]IngestResult, 0, len(names))
	var errs []error
	for _, name := range names {
		r, err := e.ingestOne(ctx, name, pull, true)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, r)
	}
	if len(errs) < len(names) {
		return out, nil
	}
	return out, errors.Join(errs...)
}

// SampleReader is what ingest needs from a cluster: one whole sample.
type SampleReader interface {
	// Read fetches node stats, shard stats, cluster state, health and settings as one sample.
	Read(ctx context.Context) (cluster.Sample, error)
}

// readSample reads one sample of a cluster through its API.
type readSample func(ctx context.Context, api ClusterAPI) (cluster.Sample, error)

// pull reads everything from the cluster: the scheduled and direct ingest.
func pull(ctx context.Context, api ClusterAPI) (cluster.Sample, error) { return api.Read(ctx) }

// ingestOne ingests one cluster with read; a failure is logged, counted and put in the result.
// scheduled is ingestOptions.scheduled.
func (e *Engine) ingestOne(ctx context.Context, name string, read readSample, scheduled bool) (IngestResult, error) {
	return e.ingestWith(ctx, name, read, ingestOptions{scheduled: scheduled})
}

// ingestWith is ingestOne with every option.
func (e *Engine) ingestWith(ctx context.Context, name string, read readSample, opts ingestOptions) (IngestResult, error) {
	r, err := e.ingest(ctx, name, read, opts)
	if err != nil {
		r.Error = err.Error()
		e.log().Error("ingest failed", "cluster", name, "error", err)
		e.metric(name, "IngestFailures", telemetry.UnitCount, 1)
	}
	return r, err
}

func (e *Engine) ingest(ctx context.Context, name string, read readSample, opts ingestOptions) (IngestResult, error) {
	res := IngestResult{Cluster: name}
	api, err := e.api(name)
	if err != nil {
		return res, err
	}
	start := e.now()
	sample, err := read(ctx, api)
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", name, err)
	}
	sample.Snapshot.Cluster = name
	var prev *cluster.Counters
	if key, err := snapshots.Latest(ctx, e.Store, name); err == nil {
		var last *cluster.Snapshot
		last, prev, err = snapshots.Load(ctx, e.Store, name, key)
		if err == nil && opts.scheduled && sample.Snapshot.At.Sub(last.At) < minSampleInterval {
			// A duplicate trigger: the schedule delivered twice, or the webhook and the schedule
			// at once. Rates over so short an interval would be noise, and this sample would
			// replace the last one under the same key: the last sample stands.
			e.log().Info("ingest: duplicate trigger; the last sample stands", "cluster", name, "snapshot", key,
				"since_last", sample.Snapshot.At.Sub(last.At), "min_interval", minSampleInterval)
			res.SnapshotKey, res.Snapshot, res.Duplicate = key, last, true
			return res, nil
		}
		if err != nil {
			// A broken previous snapshot costs one sample of rates, not the ingest.
			e.log().Warn("previous snapshot unreadable; rates start over", "cluster", name, "key", key, "error", err)
			prev = nil
		}
	} else if !errors.Is(err, snapshots.ErrNone) {
		return res, fmt.Errorf("ingest %s: %w", name, err)
	}
	snap := cluster.Derive(prev, sample)
	snap.Sort()
	// Allocation filters shardwise added come off when their time is up (cleanupFilters), whether
	// or not a move runs this cycle.
	if !opts.skipCleanup {
		if err := e.cleanupFilters(ctx, api, name, &snap, false); err != nil {
			e.log().Error("allocation filter cleanup failed", "cluster", name, "error", err)
		}
		// Excluded nodes drain through the cluster's own exclusions, before this sample is
		// stored and planned: the plan then agrees with what OpenSearch enforces.
		if err := e.drainExcluded(ctx, api, name, &snap); err != nil {
			e.log().Error("draining allocation.excluded_nodes failed", "cluster", name, "error", err)
		}
	}
	key, err := snapshots.Save(ctx, e.Store, &snap, sample.Counters, prev, e.ttl(), e.now())
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", name, err)
	}
	res.SnapshotKey, res.Snapshot = key, &snap
	var stale []string
	limit := e.Config.Safety.MaxStatsAge.Std()
	for _, n := range snap.Nodes {
		if age := snap.At.Sub(n.StatsAt); !n.StatsAt.IsZero() && age > limit {
			stale = append(stale, fmt.Sprintf("%s stats %s old (limit %s)", n.Name, age.Round(time.Second), limit))
		}
	}
	res.ingested = &bus.StatsIngested{Cluster: name, SnapshotKey: key, At: snap.At, Nodes: len(snap.Nodes), Copies: len(snap.Copies), Stale: stale}
	if !opts.deferPublish {
		if err := e.publishIngested(ctx, &res); err != nil {
			return res, err
		}
	}
	e.log().Info("stats ingested", "cluster", name, "snapshot", key, "nodes", len(snap.Nodes), "copies", len(snap.Copies),
		"interval_s", snap.IntervalSeconds, "stale", stale, "published", res.ingested == nil)
	e.metric(name, "IngestSeconds", telemetry.UnitSeconds, e.now().Sub(start).Seconds())
	if snap.IntervalSeconds > 0 {
		// The age the last sample had reached when this one replaced it: the stack's staleness
		// alarm watches it, and its absence.
		e.metric(name, telemetry.MetricSecondsSinceLastSample, telemetry.UnitSeconds, snap.IntervalSeconds)
	}
	return res, nil
}

// publishIngested publishes the result's "Stats Ingested", if it has one not yet published.
func (e *Engine) publishIngested(ctx context.Context, res *IngestResult) error {
	if res.ingested == nil {
		return nil
	}
	if err := e.Bus.Publish(ctx, bus.Event{DetailType: bus.TypeStatsIngested, Detail: *res.ingested, Time: e.now()}); err != nil {
		return fmt.Errorf("ingest %s: %w", res.Cluster, err)
	}
	res.ingested = nil
	return nil
}
