package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sim"
)

// benchProductionEnv turns on BenchmarkSimulateScaleOutProduction, which takes about 25 minutes.
const benchProductionEnv = "SHARDWISE_BENCH_PRODUCTION"

// benchProductionSecondsEnv, when set, ends the run after that many scenario seconds: a profile of
// the first half hour (the scale-out and its moves) takes minutes, not the whole run's.
const benchProductionSecondsEnv = "SHARDWISE_BENCH_PRODUCTION_SECONDS"

// benchProductionMovesEnv, when set, names a file the run writes each tick's moves to (tick,
// outcome, index[shard] from→to; not their reasons), one a line: two such files compare an
// optimisation's decisions with the code before it.
const benchProductionMovesEnv = "SHARDWISE_BENCH_PRODUCTION_MOVES"

// BenchmarkSimulateScaleOutProduction runs the whole scale-out-production scenario (10 to 37 nodes,
// 30,000 copies, 240 ticks) with shardwise balancing and dry-run off, as
// `shardwise simulate --dry-run=false` does. Run it alone, with the default benchtime (one run):
//
//	SHARDWISE_BENCH_PRODUCTION=1 go test -run '^$' -bench SimulateScaleOutProduction -timeout 60m ./shared/runner/
//
// Reported: wall-s, the run's wall time; cpu-s, the CPU time the process spent on it (user and
// system, all threads), which a loaded machine inflates far less than wall time; peak-rss-MiB, the process's peak resident memory
// (VmHWM), which includes the simulator's; and the run's own figures.
func BenchmarkSimulateScaleOutProduction(b *testing.B) {
	if os.Getenv(benchProductionEnv) != "1" {
		b.Skipf("takes about 25 minutes; set %s=1 to run it", benchProductionEnv)
	}
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", "scale-out-production.json"))
	if err != nil {
		b.Fatal(err)
	}
	if v := os.Getenv(benchProductionSecondsEnv); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < sc.TickSeconds || secs > sc.DurationSeconds {
			b.Fatalf("%s=%q: want scenario seconds in [%v, %v]", benchProductionSecondsEnv, v, sc.TickSeconds, sc.DurationSeconds)
		}
		sc.DurationSeconds = secs
		sc.Events = slices.DeleteFunc(sc.Events, func(e sim.Event) bool { return e.AtSeconds > secs })
	}
	cfg := config.Default()
	cfg.Safety.DryRun = false
	opts := Options{Balancer: BalancerShardwise, Config: cfg}
	var moves *bufio.Writer
	if path := os.Getenv(benchProductionMovesEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatalf("%s: %v", benchProductionMovesEnv, err)
		}
		defer func() {
			if err := f.Close(); err != nil {
				b.Errorf("%s: %v", benchProductionMovesEnv, err)
			}
		}()
		moves = bufio.NewWriter(f)
		opts.OnTick = func(t Tick) {
			for _, m := range t.Moves {
				_, _ = fmt.Fprintf(moves, "%d %s\n", t.N, m)
			}
		}
	}
	var res Result
	cpu0 := processCPU(b)
	start := time.Now()
	runs := 0
	for b.Loop() {
		if res, err = Run(context.Background(), sc, opts); err != nil {
			b.Fatalf("%s: %v", sc.Name, err)
		}
		runs++
	}
	if moves != nil {
		if err := moves.Flush(); err != nil {
			b.Fatalf("%s: %v", benchProductionMovesEnv, err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(runs), "wall-s")
	b.ReportMetric((processCPU(b)-cpu0).Seconds()/float64(runs), "cpu-s")
	if hwm, err := peakRSS(); err != nil {
		b.Logf("peak RSS: %v", err)
	} else {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MiB")
	}
	b.ReportMetric(res.HotNodeSeconds, "hot-node-s")
	b.ReportMetric(float64(res.Moves), "moves")
	b.ReportMetric(float64(res.MovesUndoneByBuiltin), "undone")
	b.ReportMetric(float64(res.SafetyViolations), "violations")
	b.ReportMetric(res.PlanMsP50, "plan-ms-p50")
	b.ReportMetric(res.PlanMsMax, "plan-ms-max")
}

// peakRSS reads the process's peak resident set size in bytes from /proc/self/status (Linux).
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	return 0, fmt.Errorf("peak RSS: no VmHWM in /proc/self/status")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
