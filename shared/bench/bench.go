// Package bench runs every scenario with every balancer on the local runner and reports how they
// compare: a Markdown table, a self-contained HTML report with charts, and every result as JSON.
package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/runner"
	"github.com/shardwise/shardwise/shared/sim"
)

// quickMaxNodes is the most nodes a scenario may have to run under --quick: the small scenarios
// take seconds, the production-sized ones minutes.
const quickMaxNodes = 12

// Baselines are the balancers shardwise is measured against: OpenSearch alone, Elasticsearch's
// weights, Sway and Elasticsearch's write-load decider.
var Baselines = []string{runner.BalancerNone, runner.BalancerESWeights, runner.BalancerSway, runner.BalancerESWriteLoad}

// ErrNoScenarios is returned when the scenario directory holds none to run.
var ErrNoScenarios = errors.New("no scenarios")

// Options configure a benchmark.
type Options struct {
	// Dir holds the scenario files (*.json); every one is run.
	Dir string
	// Quick skips large scenarios: any named "production" or with more than quickMaxNodes nodes.
	Quick bool
	// Balancers to run, in report order; every balancer the runner knows when empty.
	Balancers []string
	// Config is shardwise's configuration for the shardwise balancer; the benchmark always acts,
	// so Safety.DryRun is turned off.
	Config config.Config
	// Progress hears about each run and its ticks; nil reports nothing.
	Progress Progress
}

// Progress hears how a benchmark advances. Calls come from one goroutine.
type Progress interface {
	// Start begins run number run (from 1) of runs: ticks ticks of scenario with balancer.
	Start(scenario, balancer string, run, runs, ticks int)
	// Tick reports that n ticks of the current run are done.
	Tick(n int)
	// Done ends the current run with its result.
	Done(res runner.Result)
}

// Results is everything a benchmark measured, as results.json holds it.
type Results struct {
	Balancers []string       `json:"balancers"`
	Scenarios []ScenarioInfo `json:"scenarios"`
	// Quick is set when --quick left the large scenarios out; Skipped names them.
	Quick   bool     `json:"quick,omitempty"`
	Skipped []string `json:"skipped,omitempty"`
	// WallSeconds is how long the whole benchmark took on the machine that ran it.
	WallSeconds float64  `json:"wall_seconds"`
	Runs        []Record `json:"runs"`
}

// ScenarioInfo describes a scenario that was run.
type ScenarioInfo struct {
	Name            string  `json:"name"`
	Description     string  `json:"description,omitempty"`
	TickSeconds     float64 `json:"tick_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Nodes counts the nodes at the start and those that join later.
	Nodes int `json:"nodes"`
	// Config is the scenario's own shardwise configuration, configs/<name>.json beside the
	// scenarios (a scenario's sandboxes, say), laid over Options.Config; empty when it has none.
	Config string `json:"config,omitempty"`
	// File is the scenario file's name and SHA256 its contents' digest, so results can be checked
	// against the scenarios they claim to measure.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// Record is one scenario run with one balancer: the runner's result and what happened each tick.
type Record struct {
	Scenario string        `json:"scenario"`
	Balancer string        `json:"balancer"`
	Result   runner.Result `json:"result"`
	// Series is left out of the copy of the results kept with the documentation (WriteDocs).
	Series Series `json:"series,omitzero"`
}

// Series holds one value per tick, in tick order.
type Series struct {
	TickSeconds float64 `json:"tick_seconds"`
	// HotNodes counts nodes at or over the hot queue latency.
	HotNodes []int `json:"hot_nodes"`
	// Moves counts relocations started after the tick: the balancer's reroute moves plus those
	// OpenSearch's own balancer started.
	Moves []int `json:"moves"`
	// Replicas counts replica copies occupying a node.
	Replicas []int `json:"replicas"`
	// Nodes holds each node's WRITE queue latency, in order of first appearance.
	Nodes []NodeSeries `json:"nodes"`
}

// NodeSeries is one node's WRITE queue latency over the ticks it was in the cluster.
type NodeSeries struct {
	Name string `json:"name"`
	// Ticks are the 0-based ticks of the samples: a node that left and came back has a gap.
	Ticks        []int     `json:"ticks"`
	QueueSeconds []float64 `json:"queue_latency_seconds"`
}

// Run loads every scenario in opts.Dir and runs each with every balancer, one run at a time: the
// runner's virtual clock makes a run CPU-bound, and the machine is shared.
func Run(ctx context.Context, opts Options) (Results, error) {
	balancers, err := checkBalancers(opts.Balancers)
	if err != nil {
		return Results{}, err
	}
	started := time.Now()
	files, scenarios, err := loadDir(opts.Dir)
	if err != nil {
		return Results{}, err
	}
	res := Results{Balancers: balancers, Quick: opts.Quick}
	var (
		run  []*sim.Scenario
		cfgs []config.Config
	)
	for k, sc := range scenarios {
		if opts.Quick && !Small(sc) {
			res.Skipped = append(res.Skipped, sc.Name)
			continue
		}
		cfg, path, err := scenarioConfig(opts.Dir, sc.Name, opts.Config)
		if err != nil {
			return Results{}, err
		}
		cfg.Safety.DryRun = false
		run, cfgs = append(run, sc), append(cfgs, cfg)
		res.Scenarios = append(res.Scenarios, ScenarioInfo{
			Name: sc.Name, Description: sc.Description, TickSeconds: sc.TickSeconds,
			DurationSeconds: sc.DurationSeconds, Nodes: nodeCount(sc), Config: path,
			File: filepath.Base(files[k].path), SHA256: files[k].digest,
		})
	}
	if len(run) == 0 {
		return Results{}, fmt.Errorf("bench %s: %w to run (skipped: %s)", opts.Dir, ErrNoScenarios, strings.Join(res.Skipped, ", "))
	}
	n := 0
	for i, sc := range run {
		for _, b := range balancers {
			n++
			r, err := runOne(ctx, sc, b, cfgs[i], opts.Progress, n, len(run)*len(balancers))
			if err != nil {
				return Results{}, err
			}
			res.Runs = append(res.Runs, r)
		}
	}
	res.WallSeconds = time.Since(started).Seconds()
	return res, nil
}

func runOne(ctx context.Context, sc *sim.Scenario, balancer string, cfg config.Config, p Progress, n, of int) (Record, error) {
	r := Record{Scenario: sc.Name, Balancer: balancer, Series: Series{TickSeconds: sc.TickSeconds}}
	nodes := map[string]int{} // node name → index in r.Series.Nodes
	ticks := int(sc.DurationSeconds / sc.TickSeconds)
	if p != nil {
		p.Start(sc.Name, balancer, n, of, ticks)
	}
	onTick := func(t runner.Tick) {
		r.Series.record(t, nodes)
		if p != nil {
			p.Tick(t.N)
		}
	}
	res, err := runner.Run(ctx, sc, runner.Options{Balancer: balancer, Config: cfg, OnTick: onTick})
	if err != nil {
		return Record{}, fmt.Errorf("bench %s with %s: %w", sc.Name, balancer, err)
	}
	r.Result = res
	if p != nil {
		p.Done(res)
	}
	return r, nil
}

// record appends tick t; nodes maps node names to their index in s.Nodes.
func (s *Series) record(t runner.Tick, nodes map[string]int) {
	tick := len(s.HotNodes)
	hot := 0
	for _, nt := range t.Report.Nodes {
		if nt.Hot {
			hot++
		}
		i, ok := nodes[nt.Name]
		if !ok {
			i = len(s.Nodes)
			nodes[nt.Name] = i
			s.Nodes = append(s.Nodes, NodeSeries{Name: nt.Name})
		}
		s.Nodes[i].Ticks = append(s.Nodes[i].Ticks, tick)
		s.Nodes[i].QueueSeconds = append(s.Nodes[i].QueueSeconds, nt.QueueLatencySeconds)
	}
	s.HotNodes = append(s.HotNodes, hot)
	s.Moves = append(s.Moves, len(t.Moves)+t.Report.BuiltinRelocations)
	s.Replicas = append(s.Replicas, t.Report.Replicas)
}

// LoadDir loads every *.json scenario in dir, in name order.
func LoadDir(dir string) ([]*sim.Scenario, error) {
	_, scenarios, err := loadDir(dir)
	return scenarios, err
}

// scenarioFile is a scenario file's path and its contents' SHA256, in hex.
type scenarioFile struct {
	path, digest string
}

// loadDir is LoadDir with each scenario's file.
func loadDir(dir string) ([]scenarioFile, []*sim.Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("scenarios in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("scenarios in %s: %w", dir, ErrNoScenarios)
	}
	slices.Sort(paths)
	files := make([]scenarioFile, 0, len(paths))
	scenarios := make([]*sim.Scenario, 0, len(paths))
	for _, p := range paths {
		digest, err := fileDigest(p)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %s: %w", p, err)
		}
		sc, err := sim.LoadScenario(p)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %s: %w", p, err)
		}
		files, scenarios = append(files, scenarioFile{p, digest}), append(scenarios, sc)
	}
	return files, scenarios, nil
}

// fileDigest is the SHA256 of the file at path, in hex.
func fileDigest(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// scenarioConfig is base with the scenario's own configuration, configs/<name>.json in dir, laid
// over it, and that file's path; base and "" when there is none.
func scenarioConfig(dir, name string, base config.Config) (config.Config, string, error) {
	path := filepath.Join(dir, "configs", name+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return base, "", nil
	}
	if err != nil {
		return base, "", fmt.Errorf("scenario %s: %w", name, err)
	}
	cfg, err := config.Parse(base, data)
	if err != nil {
		return base, "", fmt.Errorf("scenario %s: %s: %w", name, path, err)
	}
	return cfg, path, nil
}

// Small reports whether sc runs under --quick: not a production-sized scenario, and at most
// quickMaxNodes nodes counting those that join later.
func Small(sc *sim.Scenario) bool {
	return !strings.Contains(sc.Name, "production") && nodeCount(sc) <= quickMaxNodes
}

// nodeCount counts sc's nodes at the start and those that join later.
func nodeCount(sc *sim.Scenario) int {
	n := len(sc.Nodes)
	for _, ev := range sc.Events {
		if ev.Kind == sim.EventNodeJoin {
			n++
		}
	}
	return n
}

// ParseBalancers splits a comma-separated list of balancer names; empty means every balancer.
func ParseBalancers(list string) ([]string, error) {
	var out []string
	for b := range strings.SplitSeq(list, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return checkBalancers(out)
}

// checkBalancers returns bs, or every balancer when bs is empty, after checking each is known and
// named once.
func checkBalancers(bs []string) ([]string, error) {
	if len(bs) == 0 {
		return slices.Clone(runner.Balancers), nil
	}
	seen := map[string]bool{}
	for _, b := range bs {
		if !slices.Contains(runner.Balancers, b) {
			return nil, fmt.Errorf("balancer %q: want one of %s", b, strings.Join(runner.Balancers, ", "))
		}
		if seen[b] {
			return nil, fmt.Errorf("balancer %q named twice", b)
		}
		seen[b] = true
	}
	return bs, nil
}
