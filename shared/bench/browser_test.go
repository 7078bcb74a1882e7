package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/runner"
)

// chromiumNames are the binaries tried, Debian's first.
var chromiumNames = []string{"chromium", "chromium-browser"}

// chromium finds a Chromium binary. Without one the test skips, except in CI, which installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range chromiumNames {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("no Chromium binary on PATH (tried %s); install it with `apt-get install -y chromium`", strings.Join(chromiumNames, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + ": CI must have it")
	}
	t.Skip(msg)
	return ""
}

// screenshotPath is build/bench/report-screenshot.png in the repository when the test runs inside
// it, else a file in dir.
func screenshotPath(t *testing.T, dir string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isRepoRoot(d) {
			out := filepath.Join(d, "build", "bench")
			if err := os.MkdirAll(out, 0o750); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(out, "report-screenshot.png")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "report-screenshot.png")
		}
	}
}

// isRepoRoot reports whether dir holds shardwise's go.mod.
func isRepoRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	return s.Scan() && strings.TrimSpace(s.Text()) == "module github.com/shardwise/shardwise"
}

// pageProblems collects what the page reported as wrong, from the browser's event loop.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *pageProblems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *pageProblems) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.list...)
}

// listen is called for each event of the tab; it must return fast and never call the browser.
func (p *pageProblems) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.add("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		p.add("exception: %s", ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		// Failed loads, blocked content and the like, which no script logs.
		if ev.Entry.Level == log.EntryLevelError {
			p.add("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		if u := ev.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			p.add("network request: %s", u)
		}
	}
}

// chart is what the page says about one of its figures.
type chart struct {
	Chart  string  `json:"chart"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	// Lines counts drawn paths in a colour: the data, not the black axes, grey grid or white
	// background.
	Lines int `json:"lines"`
}

// chartsJS measures every figure's SVG as laid out.
const chartsJS = `[...document.querySelectorAll('figure.chart')].map(f => {
	const svg = f.querySelector('svg');
	if (!svg) return {chart: f.dataset.chart, width: 0, height: 0, lines: 0};
	const box = svg.getBoundingClientRect();
	const plain = new Set(['none', 'rgb(0, 0, 0)', 'rgb(128, 128, 128)', 'rgb(255, 255, 255)']);
	const lines = [...svg.querySelectorAll('path')].filter(p =>
		!plain.has(getComputedStyle(p).stroke) && p.getTotalLength() > 0).length;
	return {chart: f.dataset.chart, width: box.width, height: box.height, lines};
})`

func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	scenarios := filepath.Join(dir, "scenarios")
	if err := os.Mkdir(scenarios, 0o750); err != nil {
		t.Fatal(err)
	}
	// 20 minutes of the write hotspot: the spike starts at 10.
	scenarioCopy(t, scenarios, "write-hotspot", "write-hotspot", 1200)
	balancers := []string{runner.BalancerShardwise, runner.BalancerNone}
	res, err := Run(t.Context(), Options{Dir: scenarios, Balancers: balancers, Config: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, err := Write(out, res); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Exactly these flags; chromedp adds only how it talks to the browser and the first page.
	ctx, cancel = chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()

	problems := &pageProblems{}
	if err := chromedp.Listen(ctx, problems.listen); err != nil {
		t.Fatalf("start Chromium (%s): %v", bin, err)
	}
	enableNetwork := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	})
	page := (&url.URL{Scheme: "file", Path: filepath.Join(out, ReportHTML)}).String()
	if err := chromedp.Do(ctx, enableNetwork, chromedp.EmulateViewport(1400, 900), chromedp.Navigate(page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chart](chartsJS))
	if err != nil {
		t.Fatalf("measure the charts: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := screenshotPath(t, dir)
	if err := os.WriteFile(path, shot, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)

	for _, p := range problems.all() {
		t.Errorf("the page reported: %s", p)
	}
	// Hot nodes, moves and replicas, then a queue latency chart per balancer.
	if want := 3 + len(balancers); len(charts) != want {
		t.Fatalf("got %d charts, want %d", len(charts), want)
	}
	nodes := len(res.Runs[0].Series.Nodes)
	for i, c := range charts {
		// A line per balancer; per node and the hot threshold on a queue chart.
		want := len(balancers)
		if c.Chart == "queue" {
			want = nodes + 1
		}
		if c.Width < 100 || c.Height < 50 || c.Lines < want {
			t.Errorf("chart %d (%s): got %.0f×%.0f px with %d drawn lines, want a visible chart with at least %d",
				i, c.Chart, c.Width, c.Height, c.Lines, want)
		}
	}
}
