package bench

import (
	"bytes"
	_ "embed" // the report's template
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Output file names in the output directory.
const (
	ResultsMarkdown = "results.md"
	ResultsJSON     = "results.json"
	ReportHTML      = "report.html"
	// HotNodesPNG charts hot nodes over time in PNGScenario, for the README.
	HotNodesPNG = "hot-nodes.png"
	PNGScenario = "write-hotspot"
)

//go:embed report.html.tmpl
var reportSource string

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"count": count, "seconds": formatSeconds, "wall": wallTime,
	"percent": func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
}).Parse(reportSource))

// page is what the report's template fills in.
type page struct {
	Results   Results
	Table     Table
	Legend    string
	Scenarios []scenarioPage
	// Standings are the scenarios with a hot node for some balancer, first on the page; Quiet
	// names the others.
	Standings []standingPage
	Quiet     []string
	// Balancers is the key to every chart's and bar's colours.
	Balancers []key
}

// standingPage is a Standing with each bar's colour.
type standingPage struct {
	Standing
	Colors []string
}

type scenarioPage struct {
	ScenarioInfo
	Table Table
	// Balancers name the lines of Hot, Moves and Replicas, which hold a line per balancer each.
	Balancers            []key
	Hot, Moves, Replicas template.HTML
	Queue                []queueFigure
}

// queueFigure is one run's queue latency chart and the key to its lines.
type queueFigure struct {
	Chart template.HTML
	Nodes []key
}

// key names a chart line under the chart, in its colour and border style (solid, dashed,
// dotted) as CSS draws its sample.
type key struct {
	Name, Color, Border string
}

// Write writes results.json, results.md, report.html and, when PNGScenario was run, hot-nodes.png
// into dir, and returns the paths written.
func Write(dir string, res Results) ([]string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("bench output: %w", err)
	}
	var written []string
	write := func(name string, data []byte) error {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("bench output: %w", err)
		}
		written = append(written, path)
		return nil
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bench results: %w", err)
	}
	if err := write(ResultsJSON, append(js, '\n')); err != nil {
		return nil, err
	}
	if err := write(ResultsMarkdown, []byte(Markdown(res))); err != nil {
		return nil, err
	}
	html, err := Report(res)
	if err != nil {
		return nil, err
	}
	if err := write(ReportHTML, html); err != nil {
		return nil, err
	}
	png, err := HotNodesChart(res)
	if err != nil {
		return nil, err
	}
	if png != nil {
		if err := write(HotNodesPNG, png); err != nil {
			return nil, err
		}
	}
	return written, nil
}

// Report renders report.html: one file with everything inline (styles, charts as SVG), so it
// opens offline and can be mailed or attached as it is.
func Report(res Results) ([]byte, error) {
	pg := page{Results: res, Table: NewTable(res), Legend: legend}
	for i, b := range res.Balancers {
		st := balancerStyle(b, i)
		pg.Balancers = append(pg.Balancers, key{Name: b, Color: cssColor(st.Color), Border: st.cssBorder()})
	}
	for _, st := range Standings(res) {
		if st.Quiet {
			pg.Quiet = append(pg.Quiet, st.Scenario)
			continue
		}
		sp := standingPage{Standing: st}
		for i, b := range st.Bars {
			sp.Colors = append(sp.Colors, cssColor(balancerStyle(b.Balancer, i).Color))
		}
		pg.Standings = append(pg.Standings, sp)
	}
	for _, sc := range res.Scenarios {
		runs := runsOf(res, sc.Name)
		sp := scenarioPage{ScenarioInfo: sc, Table: NewTable(Results{Runs: runs})}
		ymax := maxQueue(runs)
		for i, r := range runs {
			st := balancerStyle(r.Balancer, i)
			sp.Balancers = append(sp.Balancers, key{Name: r.Balancer, Color: cssColor(st.Color), Border: st.cssBorder()})
			p, err := queueChart(r, ymax)
			if err != nil {
				return nil, err
			}
			fig := queueFigure{}
			if fig.Chart, err = svg(p); err != nil {
				return nil, err
			}
			for j, n := range r.Series.Nodes {
				border := "solid"
				if nodeDashed(j) {
					border = "dashed"
				}
				fig.Nodes = append(fig.Nodes, key{Name: n.Name, Color: cssColor(nodeColor(j)), Border: border})
			}
			fig.Nodes = append(fig.Nodes, key{Name: "hot (3 s)", Color: cssColor(hotColor), Border: "dashed"})
			sp.Queue = append(sp.Queue, fig)
		}
		charts := []struct {
			dst           *template.HTML
			title, ylabel string
			value         seriesOf
		}{
			{&sp.Hot, "Hot nodes", "nodes", func(s Series) []int { return s.HotNodes }},
			{&sp.Moves, "Relocations started, cumulative", "relocations", func(s Series) []int { return cumulative(s.Moves) }},
			{&sp.Replicas, "Replica copies", "copies", func(s Series) []int { return s.Replicas }},
		}
		for _, c := range charts {
			p, err := countChart(c.title, c.ylabel, runs, c.value, false)
			if err != nil {
				return nil, err
			}
			if *c.dst, err = svg(p); err != nil {
				return nil, err
			}
		}
		pg.Scenarios = append(pg.Scenarios, sp)
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, pg); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return buf.Bytes(), nil
}

// HotNodesChart renders hot nodes over time in PNGScenario for every balancer as a PNG, or nil
// when that scenario was not run.
func HotNodesChart(res Results) ([]byte, error) {
	runs := runsOf(res, PNGScenario)
	if len(runs) == 0 {
		return nil, nil
	}
	p, err := countChart("Hot nodes in "+PNGScenario, "nodes", runs, func(s Series) []int { return s.HotNodes }, true)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := render(&buf, p, "png"); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// runsOf returns the runs of one scenario, in run order.
func runsOf(res Results, scenario string) []Record {
	var out []Record
	for _, r := range res.Runs {
		if r.Scenario == scenario {
			out = append(out, r)
		}
	}
	return out
}

// wallTime writes how long a benchmark ran: "52 s", "4 min 10 s", "1 h 3 min".
func wallTime(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}
