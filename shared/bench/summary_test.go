package bench

import (
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	results := func(hot map[string]float64, order ...string) Results {
		res := Results{Balancers: order, Scenarios: []ScenarioInfo{{Name: "s"}}}
		for _, b := range order {
			res.Runs = append(res.Runs, fixedRun("s", b, hot[b]))
		}
		return res
	}
	cases := []struct {
		name  string
		res   Results
		want  string
		quiet bool
	}{
		{"shardwise wins", results(map[string]float64{"shardwise": 570, "none": 5940, "es-weights": 5940, "sway": 1140}, "shardwise", "none", "es-weights", "sway"),
			"shardwise 570 hot node-seconds: 10× fewer than OpenSearch's balancer alone (5,940); 2.0× fewer than the best other baseline, sway (1,140)", false},
		{"every balancer alike", results(map[string]float64{"shardwise": 6000, "none": 6000}, "shardwise", "none"),
			"every balancer alike, 6,000 hot node-seconds", false},
		{"a tie with one", results(map[string]float64{"shardwise": 600, "none": 6000, "sway": 600}, "shardwise", "none", "sway"),
			"shardwise 600 hot node-seconds: 10× fewer than OpenSearch's balancer alone (6,000); as many as the best other baseline, sway", false},
		{"shardwise has none", results(map[string]float64{"shardwise": 0, "none": 3000}, "shardwise", "none"),
			"shardwise 0 hot node-seconds: none, against 3,000 for OpenSearch's balancer alone", false},
		{"shardwise loses", results(map[string]float64{"shardwise": 900, "none": 600}, "shardwise", "none"),
			"shardwise 900 hot node-seconds: 1.5× more than OpenSearch's balancer alone (600)", false},
		{"the oracle is no baseline", results(map[string]float64{"shardwise": 300, "none": 600, "es-weights-live": 0}, "shardwise", "none", "es-weights-live"),
			"shardwise 300 hot node-seconds: 2.0× fewer than OpenSearch's balancer alone (600)", false},
		{"nobody hot", results(map[string]float64{}, "shardwise", "none"), "no hot node with any balancer", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Standings(tc.res)
			if len(st) != 1 {
				t.Fatalf("got %d standings, want 1", len(st))
			}
			if st[0].Verdict != tc.want || st[0].Quiet != tc.quiet {
				t.Errorf("got %q (quiet %v), want %q (quiet %v)", st[0].Verdict, st[0].Quiet, tc.want, tc.quiet)
			}
		})
	}
}

func TestStandingBars(t *testing.T) {
	st := Standings(fixedResults([]string{"a"}, "shardwise", "none", "sway"))[0]
	// fixedResults gives 100, 200, 300 hot node-seconds in balancer order.
	want := []Bar{{"shardwise", 100, 1.0 / 3, true}, {"none", 200, 2.0 / 3, false}, {"sway", 300, 1, false}}
	for i, b := range st.Bars {
		if b != want[i] {
			t.Errorf("bar %d: got %+v, want %+v", i, b, want[i])
		}
	}
}

func TestMarkdownLeadsWithWhoWon(t *testing.T) {
	res := fixedResults([]string{"a", "b"}, "shardwise", "none")
	res.Runs[2].Result.HotNodeSeconds, res.Runs[3].Result.HotNodeSeconds = 0, 0
	res.Quick, res.Skipped, res.WallSeconds = true, []string{"scale-out-production"}, 52.4
	md := Markdown(res)
	for _, want := range []string{
		"in 52 s of wall time. A quick bench (--quick), which leaves out the large scenarios: scale-out-production.",
		"## Who won where\n\n- **a**: shardwise 100 hot node-seconds: 2.0× fewer than OpenSearch's balancer alone (200). (shardwise **100**, none 200)\n- No hot node with any balancer: b.\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "Who won where") > strings.Index(md, "| scenario |") {
		t.Error("the full table comes before who won where")
	}
}
