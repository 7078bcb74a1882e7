package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/runner"
)

// missing stands for a ratio whose baseline was not run.
const missing = "—"

// Table is the results as rows of cells, one row per scenario and balancer, for results.md and
// the report alike.
type Table struct {
	Header []string
	// Numeric marks the columns that hold numbers (right-aligned).
	Numeric []bool
	Rows    [][]string
}

// tableColumns are the table's columns and whether each is numeric.
var tableColumns = []struct {
	name    string
	numeric bool
}{
	{"scenario", false},
	{"balancer", false},
	{"hot node-s", true},
	{"÷ none", true},
	{"÷ best baseline", true},
	{"hotspots (p50/max s)", true},
	{"moves", true},
	{"built-in relocations", true},
	{"bytes moved", true},
	{"undone", true},
	{"max queue s", true},
	{"p99 queue s", true},
	{"rejected writes", true},
	{"replica node-h", true},
	{"search hot node-s", true},
	{"search ms p50/p99", true},
	{"scale-up signals", true},
	{"safety violations", true},
}

// NewTable lays out res, rows in the order of res.Runs.
func NewTable(res Results) Table {
	t := Table{}
	for _, c := range tableColumns {
		t.Header = append(t.Header, c.name)
		t.Numeric = append(t.Numeric, c.numeric)
	}
	byScenario := map[string]map[string]runner.Result{}
	for _, r := range res.Runs {
		if byScenario[r.Scenario] == nil {
			byScenario[r.Scenario] = map[string]runner.Result{}
		}
		byScenario[r.Scenario][r.Balancer] = r.Result
	}
	for _, r := range res.Runs {
		runs := byScenario[r.Scenario]
		x := r.Result
		vsNone := missing
		if none, ok := runs[runner.BalancerNone]; ok {
			vsNone = ratio(x.HotNodeSeconds, none.HotNodeSeconds)
		}
		vsBest := missing
		if best, ok := bestBaseline(runs); ok {
			vsBest = ratio(x.HotNodeSeconds, runs[best].HotNodeSeconds) + " (" + best + ")"
		}
		t.Rows = append(t.Rows, []string{
			r.Scenario,
			r.Balancer,
			strconv.FormatFloat(x.HotNodeSeconds, 'f', 0, 64),
			vsNone,
			vsBest,
			fmt.Sprintf("%d (%s/%s)", x.Hotspots, strconv.FormatFloat(x.HotspotSecondsP50, 'f', 0, 64), strconv.FormatFloat(x.HotspotSecondsMax, 'f', 0, 64)),
			strconv.Itoa(x.Moves),
			strconv.Itoa(x.BuiltinRelocations),
			formatBytes(x.BytesMoved),
			strconv.Itoa(x.MovesUndoneByBuiltin),
			strconv.FormatFloat(x.MaxQueueLatencySeconds, 'f', 1, 64),
			strconv.FormatFloat(x.P99QueueLatencySeconds, 'f', 1, 64),
			strconv.FormatInt(x.RejectedWrites, 10),
			strconv.FormatFloat(x.ReplicaNodeHours, 'f', 1, 64),
			strconv.FormatFloat(x.SearchHotNodeSeconds, 'f', 0, 64),
			strconv.FormatFloat(x.P50SearchLatencyMs, 'f', 0, 64) + "/" + strconv.FormatFloat(x.P99SearchLatencyMs, 'f', 0, 64),
			strconv.Itoa(x.ScaleUpSignals),
			strconv.Itoa(x.SafetyViolations),
		})
	}
	return t
}

// bestBaseline names the baseline with the fewest hot node-seconds among those run; the earlier in
// Baselines wins a tie.
func bestBaseline(runs map[string]runner.Result) (string, bool) {
	best, found := "", false
	for _, b := range Baselines {
		r, ok := runs[b]
		if ok && (!found || r.HotNodeSeconds < runs[best].HotNodeSeconds) {
			best, found = b, true
		}
	}
	return best, found
}

// ratio formats x/base. Both zero is 1.00 (equally free of hotspots); only base zero is ∞.
func ratio(x, base float64) string {
	switch {
	case base == 0 && x == 0:
		return "1.00"
	case base == 0:
		return "∞"
	}
	return strconv.FormatFloat(x/base, 'f', 2, 64)
}

// formatBytes prints n in binary units, one decimal.
func formatBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// Markdown renders res as results.md: a title, the table and what its columns mean.
func Markdown(res Results) string {
	t := NewTable(res)
	var b strings.Builder
	b.WriteString("# shardwise bench\n\n")
	b.WriteString(RunLine(res) + "\n\n")
	b.WriteString("## Who won where\n\n")
	b.WriteString(WhoWon(res))
	b.WriteString("\n## Every figure\n\n")
	writeRow(&b, t.Header)
	align := make([]string, len(t.Header))
	for i, num := range t.Numeric {
		align[i] = "---"
		if num {
			align[i] = "--:"
		}
	}
	writeRow(&b, align)
	for _, row := range t.Rows {
		writeRow(&b, row)
	}
	b.WriteString("\n" + legend + "\n")
	return b.String()
}

// RunLine says what was run, how long it took and what --quick left out, in one sentence or two.
func RunLine(res Results) string {
	line := fmt.Sprintf("%s × %s (%s), each run to its end on the simulator's virtual clock, acting, in %s of wall time.",
		count(len(res.Scenarios), "scenario"), count(len(res.Balancers), "balancer"), strings.Join(res.Balancers, ", "), wallTime(res.WallSeconds))
	if res.Quick {
		left := "nothing"
		if len(res.Skipped) > 0 {
			left = strings.Join(res.Skipped, ", ")
		}
		line += " A quick bench (--quick), which leaves out the large scenarios: " + left + "."
	}
	return line
}

// WhoWon lists, per scenario with a hot node, each balancer's hot node-seconds and the verdict in
// words, then the scenarios where no balancer had one.
func WhoWon(res Results) string {
	var b strings.Builder
	var quiet []string
	for _, st := range Standings(res) {
		if st.Quiet {
			quiet = append(quiet, st.Scenario)
			continue
		}
		parts := make([]string, 0, len(st.Bars))
		for _, bar := range st.Bars {
			v := formatSeconds(bar.HotNodeSeconds)
			if bar.Best {
				v = "**" + v + "**"
			}
			parts = append(parts, bar.Balancer+" "+v)
		}
		fmt.Fprintf(&b, "- **%s**: %s. (%s)\n", st.Scenario, st.Verdict, strings.Join(parts, ", "))
	}
	if len(quiet) > 0 {
		fmt.Fprintf(&b, "- No hot node with any balancer: %s.\n", strings.Join(quiet, ", "))
	}
	return b.String()
}

// legend explains the table's columns, under it in results.md and the report.
const legend = `hot node-s: Σ over nodes and ticks of the tick's seconds when the node's WRITE queue latency ` +
	`was at or over 3 s. ÷ none and ÷ best baseline divide it by that of none, and of the best of ` +
	`none, es-weights, sway and es-writeload (named) in the same scenario; — when no such baseline was run, ` +
	`1.00 when both are 0, ∞ when only the baseline is 0. hotspots: episodes of consecutive ticks with ` +
	`any hot node, with the median and longest episode's seconds. moves: reroute moves issued by the balancer; ` +
	`built-in relocations: those OpenSearch's own balancer started; undone: moves the built-in balancer ` +
	`moved again. Latencies are true queue waits; replica node-h is Σ replica copies × hours; ` +
	`search hot node-s is hot node-s for the search pool at a 1 s queue wait; search ms is the search ` +
	`pools' wait plus service time, median and p99. The report's relocation charts count what each ` +
	`tick reported; the moves and built-in relocations columns are each run's totals.`

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
	}
	b.WriteString("\n")
}

// count says how many of thing there are, in the plural unless one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
