package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/runner"
)

func TestTableRatios(t *testing.T) {
	run := fixedRun
	tests := []struct {
		name string
		runs []Record
		// want maps a row's balancer to its "÷ none" and "÷ best baseline" cells.
		want map[string][2]string
	}{
		{
			name: "every baseline run, es-weights the best",
			runs: []Record{run("a", "shardwise", 100), run("a", "none", 400), run("a", "es-weights", 200), run("a", "sway", 250)},
			want: map[string][2]string{
				"shardwise":  {"0.25", "0.50 (es-weights)"},
				"none":       {"1.00", "2.00 (es-weights)"},
				"es-weights": {"0.50", "1.00 (es-weights)"},
				"sway":       {"0.62", "1.25 (es-weights)"},
			},
		},
		{
			name: "no baseline run",
			runs: []Record{run("a", "shardwise", 100)},
			want: map[string][2]string{"shardwise": {missing, missing}},
		},
		{
			name: "none missing, sway the only baseline",
			runs: []Record{run("a", "shardwise", 30), run("a", "sway", 120)},
			want: map[string][2]string{
				"shardwise": {missing, "0.25 (sway)"},
				"sway":      {missing, "1.00 (sway)"},
			},
		},
		{
			name: "tied baselines: the earlier in Baselines is named",
			runs: []Record{run("a", "shardwise", 50), run("a", "sway", 100), run("a", "none", 100)},
			want: map[string][2]string{"shardwise": {"0.50", "0.50 (none)"}},
		},
		{
			name: "no hotspot anywhere",
			runs: []Record{run("a", "shardwise", 0), run("a", "none", 0)},
			want: map[string][2]string{"shardwise": {"1.00", "1.00 (none)"}},
		},
		{
			name: "only the baseline free of hotspots",
			runs: []Record{run("a", "shardwise", 30), run("a", "none", 0)},
			want: map[string][2]string{"shardwise": {"∞", "∞ (none)"}},
		},
		{
			name: "baselines of another scenario do not count",
			runs: []Record{run("a", "shardwise", 100), run("b", "none", 400)},
			want: map[string][2]string{"shardwise": {missing, missing}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := NewTable(Results{Runs: tt.runs})
			if got, want := len(tab.Rows), len(tt.runs); got != want {
				t.Fatalf("rows: got %d, want %d", got, want)
			}
			vsNone, vsBest := slices.Index(tab.Header, "÷ none"), slices.Index(tab.Header, "÷ best baseline")
			for _, row := range tab.Rows {
				want, ok := tt.want[row[1]]
				if !ok || row[0] != "a" {
					continue
				}
				if got := [2]string{row[vsNone], row[vsBest]}; got != want {
					t.Errorf("%s: got ÷ none %q, ÷ best %q; want %q, %q", row[1], got[0], got[1], want[0], want[1])
				}
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	res := Results{
		Balancers: []string{"shardwise", "none"},
		Scenarios: []ScenarioInfo{{Name: "a"}, {Name: "b"}},
		Quick:     true,
		Skipped:   []string{"scale-out-production"},
		Runs:      []Record{fixedRun("a", "shardwise", 100), fixedRun("a", "none", 400), fixedRun("b", "shardwise", 90)},
	}
	md := Markdown(res)
	for _, want := range []string{
		"2 scenarios × 2 balancers (shardwise, none), each run to its end on the simulator's virtual clock, acting, in 0 s of wall time. A quick bench (--quick), which leaves out the large scenarios: scale-out-production.\n",
		"| scenario | balancer | hot node-s | ÷ none | ÷ best baseline | hotspots (p50/max s) | moves | built-in relocations | bytes moved | undone | max queue s | p99 queue s | rejected writes | replica node-h | search hot node-s | search ms p50/p99 | scale-up signals | safety violations |\n",
		"| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n",
		"| a | shardwise | 100 | 0.25 | 0.25 (none) | 2 (60/90) | 3 | 2 | 1.5 GiB | 1 | 7.5 | 4.1 | 12 | 31.5 | 30 | 21/38 | 1 | 0 |\n",
		"| a | none | 400 | 1.00 | 1.00 (none) | 2 (60/90) | 3 | 2 | 1.5 GiB | 1 | 7.5 | 4.1 | 12 | 31.5 | 30 | 21/38 | 1 | 0 |\n",
		"| b | shardwise | 90 | — | — | 2 (60/90) | 3 | 2 | 1.5 GiB | 1 | 7.5 | 4.1 | 12 | 31.5 | 30 | 21/38 | 1 | 0 |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q; got:\n%s", want, md)
		}
	}
	if got, want := strings.Count(md, "\n|"), 5; got != want {
		t.Errorf("table lines: got %d, want %d (header, alignment, three rows)", got, want)
	}
}

func TestMarkdownEscapesPipes(t *testing.T) {
	md := Markdown(Results{Runs: []Record{fixedRun("a|b", "shardwise", 1)}})
	if !strings.Contains(md, `| a\|b | shardwise |`) {
		t.Errorf("got:\n%s\nwant the pipe in the scenario name escaped", md)
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{3 << 29, "1.5 GiB"},
		{20 << 30, "20.0 GiB"},
		{5 << 50, "5.0 PiB"},
		{1 << 62, "4096.0 PiB"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d): got %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestParseBalancers(t *testing.T) {
	tests := []struct {
		name, list string
		want       []string
		wantErr    bool
	}{
		{name: "empty is every balancer", list: "", want: runner.Balancers},
		{name: "a list, spaces trimmed", list: "none, shardwise", want: []string{"none", "shardwise"}},
		{name: "unknown", list: "shardwise,nope", wantErr: true},
		{name: "twice", list: "none,none", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBalancers(tt.list)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoadDirEmpty(t *testing.T) {
	_, err := LoadDir(t.TempDir())
	if !errors.Is(err, ErrNoScenarios) {
		t.Errorf("got %v, want ErrNoScenarios", err)
	}
}
