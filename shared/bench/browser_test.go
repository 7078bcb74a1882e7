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

	ctx, problems := openPage(t, bin, filepath.Join(out, ReportHTML))
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

// openPage opens file in headless Chromium at 1400×900 and returns the tab's context and the
// problems the page reports.
func openPage(t *testing.T, bin, file string) (context.Context, *pageProblems) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	// Exactly these flags; chromedp adds only how it talks to the browser and the first page.
	ctx, cancel = chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(cancel)
	ctx, cancel = chromedp.NewContext(ctx)
	t.Cleanup(cancel)

	problems := &pageProblems{}
	if err := chromedp.Listen(ctx, problems.listen); err != nil {
		t.Fatalf("start Chromium (%s): %v", bin, err)
	}
	enableNetwork := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	})
	page := (&url.URL{Scheme: "file", Path: file}).String()
	if err := chromedp.Do(ctx, enableNetwork, chromedp.EmulateViewport(1400, 900), chromedp.Navigate(page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	return ctx, problems
}

// firstScreen is what the report shows in its first 1400×900 pixels.
type firstScreen struct {
	// Cards are the bottoms of the who-won-where cards, in pixels from the top.
	Cards []float64 `json:"cards"`
	// Verdicts are the cards' sentences.
	Verdicts []string `json:"verdicts"`
	// TableShown is whether the full table is visible, not folded.
	TableShown bool `json:"table_shown"`
}

const firstScreenJS = `({
	cards: [...document.querySelectorAll('.card')].map(c => c.getBoundingClientRect().bottom),
	verdicts: [...document.querySelectorAll('.card .verdict')].map(v => v.textContent),
	table_shown: document.querySelector('details table').checkVisibility(),
})`

// TestReportFirstScreen: with a full bench's worth of scenarios and balancers, the first screen
// at 1400×900 holds who won every scenario that had a hot node, and the full table is folded.
func TestReportFirstScreen(t *testing.T) {
	bin := chromium(t)
	var names []string
	for i := range 27 {
		names = append(names, fmt.Sprintf("scenario-%02d", i))
	}
	res := fixedResults(names, runner.Balancers...)
	// As in the full bench: 16 scenarios with a hot node, 11 without.
	for i := range res.Runs {
		if strings.Compare(res.Runs[i].Scenario, "scenario-16") >= 0 {
			res.Runs[i].Result.HotNodeSeconds = 0
		}
	}
	res.Quick, res.Skipped, res.WallSeconds = true, []string{"scale-out-production"}, 277
	file := filepath.Join(t.TempDir(), ReportHTML)
	html, err := Report(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, html, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, problems := openPage(t, bin, file)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[firstScreen](firstScreenJS))
	if err != nil {
		t.Fatalf("measure the first screen: %v", err)
	}
	for _, p := range problems.all() {
		t.Errorf("the page reported: %s", p)
	}
	if len(got.Cards) != 16 {
		t.Fatalf("got %d who-won cards, want one per scenario with a hot node, 16", len(got.Cards))
	}
	for i, bottom := range got.Cards {
		if bottom > 900 {
			t.Errorf("card %d ends at %.0f px, below the first screen (900 px)", i, bottom)
		}
		if !strings.Contains(got.Verdicts[i], "fewer than OpenSearch's balancer alone") {
			t.Errorf("card %d says %q, want the ratio in words", i, got.Verdicts[i])
		}
	}
	if got.TableShown {
		t.Error("the full table is shown, want it folded")
	}
}
