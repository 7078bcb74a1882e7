package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

// Scenario files take sizes and durations with units beside the raw numbers, and an error in one
// says where: file:line:column and the field's path.
func TestScenarioUnitsAndErrors(t *testing.T) {
	original, err := os.ReadFile(scenarioPath("steady"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, body string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "steady.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	withUnits := strings.NewReplacer(
		`"tick_seconds": 30`, `"tick_seconds": "30s"`,
		`"duration_seconds": 3600`, `"duration_seconds": "1h"`,
		`"heap_bytes": 8589934592`, `"heap_bytes": "8GiB"`,
		`"disk_bytes": 1099511627776`, `"disk_bytes": "1tb"`,
		`"recovery_bytes_per_second": 41943040`, `"recovery_bytes_per_second": "40MiB"`,
	).Replace(string(original))
	if withUnits == string(original) {
		t.Fatal("the replacements matched nothing in steady.json")
	}
	want, err := sim.LoadScenario(scenarioPath("steady"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := sim.LoadScenario(write(t, withUnits))
	if err != nil {
		t.Fatalf("with units: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with units the scenario reads differently:\ngot  %+v\nwant %+v", got, want)
	}

	cases := []struct {
		name, from, to, want string
	}{
		{"a size that is not one", `"disk_bytes": 1099511627776`, `"disk_bytes": "1 terabyte"`,
			`steady.json:17:19: node_defaults.disk_bytes: size "1 terabyte": want a number of bytes`},
		{"a duration without a unit", `"tick_seconds": 30`, `"tick_seconds": "30"`,
			`steady.json:5:19: tick_seconds: duration "30" has no unit: write "30s"`},
		{"an unknown field names its section", `"write_threads": 8`, `"write_thread": 8`,
			`steady.json:14:5: node_defaults.write_thread: unknown field "write_thread" in node_defaults`},
		{"a document cut short", "}\n", "",
			`steady.json:59:1: the document ends early: a brace, bracket or string is not closed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := string(original)
			if tc.to == "" {
				body = body[:strings.LastIndex(body, tc.from)]
			} else {
				body = strings.Replace(body, tc.from, tc.to, 1)
			}
			_, _, err := execute(t, "simulate", "--scenario", write(t, body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %s", err, tc.want)
			}
		})
	}
}
