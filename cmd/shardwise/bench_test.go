package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario with two balancers")
	}
	dir := t.TempDir()
	// write-hotspot cut to 15 minutes: the spike starts at 10.
	data, err := os.ReadFile(scenarioPath("write-hotspot"))
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	sc["duration_seconds"] = 900
	if data, err = json.Marshal(sc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "write-hotspot.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	stdout, stderr, err := execute(t, "bench", "--scenarios", dir, "--out", out, "--quick", "--balancers", "none,shardwise")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"| write-hotspot | none |", "| write-hotspot | shardwise |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks the row %q:\n%s", want, stdout)
		}
	}
	// Not a terminal: a line per tenth of the ticks, and the files written.
	for _, want := range []string{"[1/2] write-hotspot × none: 30 ticks", "[2/2] write-hotspot × shardwise: 15/30 ticks (50 %)", "wrote " + filepath.Join(out, "report.html")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, f := range []string{"results.md", "results.json", "report.html", "hot-nodes.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestBenchRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown balancer", []string{"bench", "--balancers", "shardwise,nope"}, `balancer "nope"`},
		{"no scenarios", []string{"bench", "--scenarios", t.TempDir()}, "no scenarios"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := execute(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
