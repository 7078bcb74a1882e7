package bench

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/shardwise/shardwise/shared/runner"
)

// NewProgress reports to w: a progress bar per run when w is a terminal, else (a log, CI) a line
// per tenth of each run's ticks, which reads well without carriage returns.
func NewProgress(w io.Writer) Progress {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w}
}

var (
	_ Progress = (*barProgress)(nil)
	_ Progress = (*lineProgress)(nil)
)

// runLine is what every progress report starts a run's lines with.
func runLine(scenario, balancer string, run, runs int) string {
	return fmt.Sprintf("[%d/%d] %s × %s", run, runs, scenario, balancer)
}

// doneLine summarises a finished run.
func doneLine(res runner.Result, took time.Duration) string {
	return fmt.Sprintf("%.0f hot node-s, %d moves, %d built-in relocations, %d safety violations (%.1fs)",
		res.HotNodeSeconds, res.Moves, res.BuiltinRelocations, res.SafetyViolations, took.Seconds())
}

type barProgress struct {
	w       io.Writer
	bar     *progressbar.ProgressBar
	name    string
	started time.Time
}

func (p *barProgress) Start(scenario, balancer string, run, runs, ticks int) {
	p.name, p.started = runLine(scenario, balancer, run, runs), time.Now()
	p.bar = progressbar.NewOptions(ticks,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.name),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("ticks"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

func (p *barProgress) Tick(n int) { _ = p.bar.Set(n) }

func (p *barProgress) Done(res runner.Result) {
	_ = p.bar.Finish()
	fmt.Fprintf(p.w, "%s: %s\n", p.name, doneLine(res, time.Since(p.started)))
}

type lineProgress struct {
	w            io.Writer
	name         string
	ticks, tenth int // the run's ticks, and the last tenth of them reported
	started      time.Time
}

func (p *lineProgress) Start(scenario, balancer string, run, runs, ticks int) {
	p.name, p.ticks, p.tenth, p.started = runLine(scenario, balancer, run, runs), ticks, 0, time.Now()
	fmt.Fprintf(p.w, "%s: %d ticks\n", p.name, ticks)
}

func (p *lineProgress) Tick(n int) {
	if p.ticks <= 0 {
		return
	}
	if tenth := n * 10 / p.ticks; tenth > p.tenth && tenth < 10 {
		p.tenth = tenth
		fmt.Fprintf(p.w, "%s: %d/%d ticks (%d %%)\n", p.name, n, p.ticks, tenth*10)
	}
}

func (p *lineProgress) Done(res runner.Result) {
	fmt.Fprintf(p.w, "%s: done, %s\n", p.name, doneLine(res, time.Since(p.started)))
}
