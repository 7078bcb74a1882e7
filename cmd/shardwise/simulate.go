package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/runner"
	"github.com/shardwise/shardwise/shared/sim"
)

func newSimulate() *cobra.Command {
	var (
		scenario, balancer, configFile, logFile string
		asJSON, dryRun, quiet                   bool
		concurrency                             int
	)
	cmd := &cobra.Command{
		Use:   "simulate --scenario FILE",
		Short: "Run every function against the simulator on a virtual clock",
		Long: `Runs ingest, detect, move, replicas and sandbox in one process against the built-in OpenSearch
simulator, served over HTTP on 127.0.0.1 and reached through the production client. Dry-run is on
unless --dry-run=false; it only ever touches the simulator.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			sc, err := sim.LoadScenario(scenario)
			if err != nil {
				return err
			}
			cfg := config.Default()
			if configFile != "" {
				if cfg, err = config.LoadFile(configFile); err != nil {
					return err
				}
				for _, d := range cfg.Deprecations() {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning: configuration:", d)
				}
			}
			if cmd.Flags().Changed("dry-run") || configFile == "" {
				cfg.Safety.DryRun = dryRun
			}
			if concurrency < 1 {
				return fmt.Errorf("--concurrency %d: want 1 or more", concurrency)
			}
			if w := sandboxWarning(sc, cfg, scenario, fileExists); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			opts := runner.Options{Balancer: balancer, Config: cfg, Concurrency: concurrency}
			if logFile != "" {
				f, err := os.Create(logFile)
				if err != nil {
					return err
				}
				defer func() {
					if cerr := f.Close(); cerr != nil && err == nil {
						err = cerr
					}
				}()
				opts.Log = f
			}
			out := cmd.OutOrStdout()
			progress := out
			if asJSON {
				progress = cmd.ErrOrStderr()
			}
			if quiet {
				progress = io.Discard
			}
			fmt.Fprintf(progress, "scenario %s: %s\nbalancer %s, dry-run %v, %d ticks of %gs\n",
				sc.Name, sc.Description, balancer, cfg.Safety.DryRun, int(sc.DurationSeconds/sc.TickSeconds), sc.TickSeconds)
			opts.OnTick = func(t runner.Tick) { printTick(progress, t) }
			res, err := runner.Run(cmd.Context(), sc, opts)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printSummary(out, res)
			return nil
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "", "scenario file (format: docs/scenarios.md)")
	cmd.Flags().StringVar(&balancer, "balancer", runner.BalancerShardwise, "shardwise | none (only OpenSearch's own balancer) | es-weights (Elasticsearch's weight function instead of it) | sway (the Sway rebalancer instead of it) | es-writeload (es-weights with Elasticsearch's write-load decider and hotspot mover) | es-weights-live (es-weights fed true write loads: an oracle)")
	cmd.Flags().StringVar(&configFile, "config", "", "shardwise configuration JSON (defaults otherwise)")
	cmd.Flags().StringVar(&logFile, "log", "", "write the functions' JSON logs to this file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run result as JSON")
	cmd.Flags().BoolVar(&dryRun, "dry-run", true, "plan and report without moving anything (in the simulator)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no per-tick progress")
	cmd.Flags().IntVar(&concurrency, "concurrency", 1, "racing copies of every function per trigger, as duplicate deliveries and overlapping schedules would run them")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// sandboxWarning says why a scenario with tenants would measure and enforce nothing: without
// sandbox definitions the sandbox function has no limits to hold the tenants to, so a noisy tenant
// runs unchecked and the run looks as if sandboxes did not help. It names the configuration laid
// beside the scenario (configs/<scenario file>), as shardwise bench uses it, when there is one.
// Empty when the scenario has no tenants or the configuration defines sandboxes.
func sandboxWarning(sc *sim.Scenario, cfg config.Config, scenarioFile string, exists func(string) bool) string {
	if len(sc.Tenants) == 0 || len(cfg.Sandbox.Definitions) > 0 {
		return ""
	}
	w := fmt.Sprintf("scenario %s has %d tenants but the configuration defines no sandboxes "+
		"(sandbox.definitions), so no tenant is held to a limit", sc.Name, len(sc.Tenants))
	if beside := filepath.Join(filepath.Dir(scenarioFile), "configs", filepath.Base(scenarioFile)); exists(beside) {
		w += "; its sandboxes are in " + beside + ": --config " + beside
	} else {
		w += "; pass --config with sandbox.definitions (docs/sandboxes.md)"
	}
	return w
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// printTick writes one line per tick: time, hot nodes, moves, replica changes, breaker state.
func printTick(w io.Writer, t runner.Tick) {
	var parts []string
	if len(t.Hot) > 0 {
		parts = append(parts, "hot: "+strings.Join(t.Hot, ", "))
	}
	if len(t.Moves) > 0 {
		parts = append(parts, "moves: "+strings.Join(t.Moves, ", "))
	}
	if len(t.Replicas) > 0 {
		parts = append(parts, "replicas: "+strings.Join(t.Replicas, ", "))
	}
	if t.Relocating > 0 {
		parts = append(parts, fmt.Sprintf("relocating %d", t.Relocating))
	}
	if t.ScaleUp != "" {
		parts = append(parts, "scale up: "+t.ScaleUp)
	}
	if t.Breaker != "" && len(t.Moves) == 0 {
		parts = append(parts, t.Breaker)
	}
	line := "quiet"
	if len(parts) > 0 {
		line = strings.Join(parts, " | ")
	}
	fmt.Fprintf(w, "[%3d/%d %6s] %s\n", t.N, t.Of, t.At, line)
}

func printSummary(w io.Writer, r runner.Result) {
	fmt.Fprintf(w, "\n%s with %s: %d ticks\n", r.Scenario, r.Balancer, r.Ticks)
	fmt.Fprintf(w, "  moves %d (%.1f GiB), undone by OpenSearch's balancer %d", r.Moves, float64(r.BytesMoved)/(1<<30), r.MovesUndoneByBuiltin)
	if r.MovesRebalancedAfterTopology > 0 {
		fmt.Fprintf(w, ", moved on by it after a node joined or left %d", r.MovesRebalancedAfterTopology)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  hot node-seconds %.0f, longest hotspot %.0fs, queue latency max %.1fs p99 %.1fs, rejected writes %d\n",
		r.HotNodeSeconds, r.TimeToCorrectSeconds, r.MaxQueueLatencySeconds, r.P99QueueLatencySeconds, r.RejectedWrites)
	fmt.Fprintf(w, "  replica changes %d, replica node-hours %.1f, search p99 %.0f ms\n", r.ReplicaChanges, r.ReplicaNodeHours, r.P99SearchLatencyMs)
	fmt.Fprintf(w, "  plan time p50 %.2f ms max %.2f ms, scale-up signals %d, safety violations %d\n", r.PlanMsP50, r.PlanMsMax, r.ScaleUpSignals, r.SafetyViolations)
	if outcomes := r.Outcomes(); outcomes != "" {
		fmt.Fprintln(w, "  hot node-cycles by outcome: "+outcomes)
	}
	for _, line := range tenantLines(r.Result) {
		fmt.Fprintln(w, "  "+line)
	}
}

// tenantLines are the per-tenant measures, one line each: the search p99 beside the searches
// cancelled and rejected. Every tenant is listed (TasksCancelledByTenant has them all); one with
// no completed search has no p99, which is said rather than printed as 0 ms, the fastest of all.
func tenantLines(r sim.Result) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.TasksCancelledByTenant)) {
		p99 := "no completions"
		if v, ok := r.TenantP99SearchLatencyMs[name]; ok {
			p99 = fmt.Sprintf("%.0f ms", v)
		}
		line := fmt.Sprintf("tenant %s: search p99 %s, searches cancelled %d (tasks %d)", name, p99,
			r.SearchesCancelledByTenant[name], r.TasksCancelledByTenant[name])
		if n := r.SearchesRejectedByTenant[name]; n > 0 {
			line += fmt.Sprintf(", rejected %d", n)
		}
		out = append(out, line)
	}
	return out
}
