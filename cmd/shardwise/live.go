package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
)

// connFlags are the flags that reach a cluster.
type connFlags struct {
	url, auth, service, region, user, passwordEnv string
	insecure, allowInsecureCredentials            bool
	// display is where the client's and the engine's log records go.
	display *display
}

func (f *connFlags) register(cmd *cobra.Command, d *display) {
	f.display = d
	cmd.Flags().StringVar(&f.url, "url", "", "cluster URL, e.g. https://search-x.eu-west-1.es.amazonaws.com")
	cmd.Flags().StringVar(&f.auth, "auth", "none", "sigv4 | basic | none")
	cmd.Flags().StringVar(&f.service, "service", "es", "sigv4 signing service: es (OpenSearch Serverless, aoss, is not supported)")
	cmd.Flags().StringVar(&f.region, "region", "", "sigv4 region (default from the AWS config chain)")
	cmd.Flags().StringVar(&f.user, "user", "", "basic auth user")
	cmd.Flags().StringVar(&f.passwordEnv, "password-env", "OPENSEARCH_PASSWORD", "environment variable holding the basic auth password")
	cmd.Flags().BoolVar(&f.insecure, "insecure", false, "skip TLS verification")
	cmd.Flags().BoolVar(&f.allowInsecureCredentials, "allow-insecure-credentials", false,
		"allow basic auth over http://, or credentials with --insecure (logged as a warning)")
	_ = cmd.MarkFlagRequired("url")
}

// cluster is the flags' cluster, as the configuration names it.
func (f *connFlags) cluster() config.Cluster {
	cl := config.Cluster{Name: liveCluster, URLs: strings.Split(f.url, ","), Auth: f.auth, Service: f.service, Region: f.region,
		Username: f.user, Insecure: f.insecure, AllowInsecureCredentials: f.allowInsecureCredentials}
	if f.auth == string(opensearch.AuthBasic) {
		cl.PasswordEnv = f.passwordEnv
	}
	return cl
}

// api validates the flags with the default configuration and connects.
func (f *connFlags) api(ctx context.Context) (*collect.API, error) {
	cfg := config.Default()
	cfg.Clusters = []config.Cluster{f.cluster()}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return connect(ctx, cfg.Clusters[0], f.display.logger())
}

// connect builds the production client and its collector for a validated cluster.
func connect(ctx context.Context, cl config.Cluster, log *slog.Logger) (*collect.API, error) {
	oc, err := cl.OpenSearch()
	if err != nil {
		return nil, err
	}
	oc.Log = log
	client, err := opensearch.New(ctx, oc)
	if err != nil {
		return nil, err
	}
	return collect.New(client, liveClock), nil
}

// liveFlags are the flags of the commands that read a real cluster. They never act: dry-run is forced.
type liveFlags struct {
	connFlags
	configFile string
	samples    int
	interval   time.Duration
}

func (f *liveFlags) register(cmd *cobra.Command, d *display) {
	f.connFlags.register(cmd, d)
	cmd.Flags().StringVar(&f.configFile, "config", "", "shardwise configuration JSON (thresholds)")
	cmd.Flags().IntVar(&f.samples, "samples", 3, "stats samples to take (rates need 2; a sustained hotspot needs 3)")
	cmd.Flags().DurationVar(&f.interval, "interval", 10*time.Second, "time between samples")
}

const liveCluster = "live"

// liveClock is the commands' clock, and waitSample waits the interval between two samples: a test
// that steps a simulator between samples replaces both with the simulator's.
var liveClock = time.Now

var waitSample = func(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// engine builds an engine over the cluster with an in-memory store and bus, dry-run forced, and
// ingests the requested samples.
func (f *liveFlags) engine(ctx context.Context, progress io.Writer) (*engine.Engine, engine.DetectResult, error) {
	var last engine.DetectResult
	cfg := config.Default()
	var err error
	if f.configFile != "" {
		if cfg, err = config.LoadFile(f.configFile); err != nil {
			return nil, last, err
		}
		for _, d := range cfg.Deprecations() {
			f.display.logger().Warn("configuration: " + d)
		}
	}
	if f.samples < 2 {
		return nil, last, fmt.Errorf("--samples %d: at least 2 are needed to measure rates", f.samples)
	}
	if f.interval < engine.MinSampleInterval {
		// Closer samples are one trigger delivered twice to the engine: it keeps the first and
		// the plan would rest on fewer samples than asked for.
		return nil, last, fmt.Errorf("--interval %s: want at least %s between samples", f.interval, engine.MinSampleInterval)
	}
	if f.interval > time.Hour {
		// The interval is the run's refresh_period, which is at most an hour.
		return nil, last, fmt.Errorf("--interval %s: want at most 1h between samples", f.interval)
	}
	cfg.Safety.DryRun = true
	cfg.Clusters = []config.Cluster{f.cluster()}
	// This run samples every --interval: that is its cadence, and a hotspot's sustain window is
	// counted in it (allocation.Config.SampleInterval).
	cfg.RefreshPeriod = duration.Duration(f.interval)
	// Samples further apart than the freshness limit would be refused by the breaker.
	if 2*f.interval > cfg.Safety.MaxStatsAge.Std() {
		cfg.Safety.MaxStatsAge = duration.Duration(2 * f.interval)
	}
	if err := cfg.Validate(); err != nil {
		return nil, last, err
	}
	api, err := connect(ctx, cfg.Clusters[0], f.display.logger())
	if err != nil {
		return nil, last, err
	}
	conns := collect.One(api)
	events := &bus.Memory{}
	e := &engine.Engine{Store: state.NewMemory(liveClock), Bus: events, Clock: liveClock, Config: cfg,
		Cluster: conns.Cluster,
		Tenants: conns.Tenants,
		Log:     f.display.logger()}
	for i := 0; i < f.samples; i++ {
		if i > 0 {
			if err := waitSample(ctx, f.interval); err != nil {
				return nil, last, err
			}
		}
		fmt.Fprintf(progress, "sample %d/%d of %s\n", i+1, f.samples, f.url)
		if _, err := e.Ingest(ctx, []string{liveCluster}); err != nil {
			return nil, last, err
		}
		// Planning every sample builds the hotspot streaks the last plan is judged on.
		if last, err = e.Detect(ctx, liveCluster, ""); err != nil {
			return nil, last, err
		}
	}
	return e, last, nil
}

// latestSnapshot loads the live cluster's latest snapshot from the CLI's store.
func latestSnapshot(ctx context.Context, store state.Store) (*cluster.Snapshot, error) {
	key, err := snapshots.Latest(ctx, store, liveCluster)
	if err != nil {
		return nil, err
	}
	snap, _, err := snapshots.Load(ctx, store, liveCluster, key)
	return snap, err
}
