package bench

import (
	"bytes"
	_ "embed" // the results page's template
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/shardwise/shardwise/shared/runner"
)

// Paths of the generated documentation, relative to the repository's docs directory.
const (
	DocsResults = "results.md"
	// DocsBench holds the bench's own output: results.json, results.md, report.html, the charts
	// and the report's screenshots.
	DocsBench = "bench"
)

// TargetRatio is the goal on every scenario with a hot node: shardwise's hot node-seconds at most
// this share of the best baseline's.
const TargetRatio = 0.5

//go:embed results-doc.md.tmpl
var docSource string

var docTemplate = template.Must(template.New("results").Funcs(template.FuncMap{
	"minutes": span,
}).Parse(docSource))

// Doc renders docs/results.md from a bench's results: who won where, the hot node-seconds per
// scenario and balancer, the target and the scenarios. It holds nothing a bench does not produce,
// so it is regenerated whole.
func Doc(res Results) (string, error) {
	var buf bytes.Buffer
	err := docTemplate.Execute(&buf, struct {
		RunLine, WhoWon, HotTable, TargetTable string
		Scenarios                              []ScenarioInfo
	}{RunLine(res), WhoWon(res), hotTable(res), targetTable(res), res.Scenarios})
	if err != nil {
		return "", fmt.Errorf("results page: %w", err)
	}
	return buf.String(), nil
}

// hotTable is a Markdown table of hot node-seconds, a column per balancer, and each balancer's
// moves.
func hotTable(res Results) string {
	var b strings.Builder
	header := []string{"scenario"}
	align := []string{"---"}
	for _, bal := range res.Balancers {
		header, align = append(header, bal), append(align, "--:")
	}
	header, align = append(header, "moves: "+strings.Join(res.Balancers, " / ")), append(align, "--:")
	writeRow(&b, header)
	writeRow(&b, align)
	for _, sc := range res.Scenarios {
		row := []string{sc.Name}
		by := map[string]runner.Result{}
		for _, r := range runsOf(res, sc.Name) {
			by[r.Balancer] = r.Result
		}
		var moves []string
		for _, bal := range res.Balancers {
			r, ok := by[bal]
			if !ok {
				row, moves = append(row, missing), append(moves, missing)
				continue
			}
			row, moves = append(row, formatSeconds(r.HotNodeSeconds)), append(moves, strconv.Itoa(r.Moves))
		}
		writeRow(&b, append(row, strings.Join(moves, " / ")))
	}
	return b.String()
}

// targetTable holds shardwise against the best baseline on each scenario where some balancer had
// a hot node.
func targetTable(res Results) string {
	var b strings.Builder
	writeRow(&b, []string{"scenario", "shardwise", "best baseline", "ratio", fmt.Sprintf("≤ %g×", TargetRatio)})
	writeRow(&b, []string{"---", "--:", "---", "--:", "---"})
	rows := 0
	for _, st := range Standings(res) {
		if st.Quiet {
			continue
		}
		by := map[string]runner.Result{}
		for _, r := range runsOf(res, st.Scenario) {
			by[r.Balancer] = r.Result
		}
		sw, ok := by[runner.BalancerShardwise]
		best, found := bestBaseline(by)
		if !ok || !found {
			continue
		}
		base := by[best].HotNodeSeconds
		met := "met"
		switch {
		case base == 0 && sw.HotNodeSeconds == 0:
			met = "equal: no hot node either way"
		case sw.HotNodeSeconds > TargetRatio*base:
			met = "not met"
		}
		writeRow(&b, []string{st.Scenario, formatSeconds(sw.HotNodeSeconds), fmt.Sprintf("%s (%s)", best, formatSeconds(base)),
			ratio(sw.HotNodeSeconds, base), met})
		rows++
	}
	if rows == 0 {
		return "No scenario had a hot node with both shardwise and a baseline run.\n"
	}
	return b.String()
}

// span writes a scenario's length: "20 min", "2 h", else as wallTime does.
func span(seconds float64) string {
	s := int(seconds)
	switch {
	case float64(s) != seconds || s == 0:
		return wallTime(seconds)
	case s%3600 == 0:
		return fmt.Sprintf("%d h", s/3600)
	case s%60 == 0:
		return fmt.Sprintf("%d min", s/60)
	}
	return wallTime(seconds)
}

// WriteDocs writes the documentation of a bench into docsDir: results.md (Doc) and, in
// docsDir/bench, the full table (results.md), the results without their per-tick series
// (results.json, from which both pages are rendered again) and, when the series are there, the
// hot-nodes chart. The report itself stays in the bench's output: with its series it is megabytes.
func WriteDocs(docsDir string, res Results) ([]string, error) {
	dir := filepath.Join(docsDir, DocsBench)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("bench docs: %w", err)
	}
	slim := res
	slim.Runs = make([]Record, len(res.Runs))
	for i, r := range res.Runs {
		r.Series = Series{}
		slim.Runs[i] = r
	}
	js, err := json.MarshalIndent(slim, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bench docs: %w", err)
	}
	doc, err := Doc(res)
	if err != nil {
		return nil, err
	}
	png, err := HotNodesChart(res)
	if err != nil {
		return nil, err
	}
	files := []struct {
		path string
		data []byte
	}{
		{filepath.Join(dir, ResultsJSON), append(js, '\n')},
		{filepath.Join(dir, ResultsMarkdown), []byte(Markdown(res))},
		{filepath.Join(docsDir, DocsResults), []byte(doc)},
	}
	if png != nil && len(res.Runs) > 0 && len(res.Runs[0].Series.HotNodes) > 0 {
		files = append(files, struct {
			path string
			data []byte
		}{filepath.Join(dir, HotNodesPNG), png})
	}
	var written []string
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil { //nolint:gosec // documentation, read by everyone
			return written, fmt.Errorf("bench docs: %w", err)
		}
		written = append(written, f.path)
	}
	return written, nil
}
