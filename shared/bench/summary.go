package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/runner"
)

// Standing is who won one scenario: each balancer's hot node-seconds and a sentence saying how
// shardwise compares with OpenSearch's balancer and the best other baseline.
type Standing struct {
	Scenario string
	Bars     []Bar
	// Verdict is the comparison in words, with the ratios.
	Verdict string
	// Quiet is set when no balancer had a hot node: nothing to compare.
	Quiet bool
}

// Bar is one balancer's hot node-seconds in a scenario and its share of the scenario's largest.
type Bar struct {
	Balancer       string
	HotNodeSeconds float64
	// Fraction of the scenario's largest hot node-seconds, 0..1, for the bar's length.
	Fraction float64
	// Best marks the balancers with the fewest hot node-seconds in the scenario.
	Best bool
}

// Standings sums up res per scenario, in scenario order.
func Standings(res Results) []Standing {
	var out []Standing
	for _, sc := range res.Scenarios {
		runs := runsOf(res, sc.Name)
		if len(runs) == 0 {
			continue
		}
		st := Standing{Scenario: sc.Name}
		top, least := 0.0, math.Inf(1)
		by := map[string]runner.Result{}
		for _, r := range runs {
			top, least = max(top, r.Result.HotNodeSeconds), min(least, r.Result.HotNodeSeconds)
			by[r.Balancer] = r.Result
		}
		for _, r := range runs {
			b := Bar{Balancer: r.Balancer, HotNodeSeconds: r.Result.HotNodeSeconds, Best: r.Result.HotNodeSeconds == least}
			if top > 0 {
				b.Fraction = r.Result.HotNodeSeconds / top
			}
			st.Bars = append(st.Bars, b)
		}
		st.Quiet = top == 0
		st.Verdict = verdict(by)
		out = append(out, st)
	}
	return out
}

// verdict says in words how shardwise did against OpenSearch's balancer alone (none) and against
// the best of the other baselines.
func verdict(by map[string]runner.Result) string {
	sw, ok := by[runner.BalancerShardwise]
	if !ok {
		return "shardwise was not run"
	}
	x := sw.HotNodeSeconds
	if allZero(by) {
		return "no hot node with any balancer"
	}
	if allEqual(by, x) && len(by) > 1 {
		return fmt.Sprintf("every balancer alike, %s hot node-seconds", formatSeconds(x))
	}
	var parts []string
	if none, ok := by[runner.BalancerNone]; ok {
		parts = append(parts, compare(x, none.HotNodeSeconds, "OpenSearch's balancer alone"))
	}
	others := map[string]runner.Result{}
	for b, r := range by {
		if b != runner.BalancerNone {
			others[b] = r
		}
	}
	if best, ok := bestBaseline(others); ok {
		parts = append(parts, compare(x, by[best].HotNodeSeconds, "the best other baseline, "+best))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("shardwise %s hot node-seconds; no baseline was run", formatSeconds(x))
	}
	return fmt.Sprintf("shardwise %s hot node-seconds: %s", formatSeconds(x), strings.Join(parts, "; "))
}

// compare says x against base in words: "10× fewer than name (5,940)", "as many as", "2.0× more than".
func compare(x, base float64, name string) string {
	switch {
	case x == base:
		return "as many as " + name
	case x == 0:
		return fmt.Sprintf("none, against %s for %s", formatSeconds(base), name)
	case base == 0:
		return fmt.Sprintf("more than %s, which had none", name)
	case x < base:
		return fmt.Sprintf("%s fewer than %s (%s)", times(base/x), name, formatSeconds(base))
	}
	return fmt.Sprintf("%s more than %s (%s)", times(x/base), name, formatSeconds(base))
}

// times writes a factor over 1 as "1.3×", "12×".
func times(f float64) string {
	if f >= 10 {
		return strconv.FormatFloat(math.Round(f), 'f', 0, 64) + "×"
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + "×"
}

// formatSeconds writes whole seconds with thousands separated: 12,360.
func formatSeconds(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func allZero(by map[string]runner.Result) bool {
	for _, r := range by {
		if r.HotNodeSeconds != 0 {
			return false
		}
	}
	return true
}

// allEqual reports whether every run had hot node-seconds v.
func allEqual(by map[string]runner.Result, v float64) bool {
	for _, r := range by {
		if r.HotNodeSeconds != v {
			return false
		}
	}
	return true
}
