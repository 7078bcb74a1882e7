package bench

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/jsonstrict"
)

// repoDir is the repository root, two levels up from this package.
var repoDir = filepath.Join("..", "..")

// TestDocsUpToDate guards the published results: docs/results.md and docs/bench are what the
// generators make of docs/bench/results.json, and that file measured the scenarios as they are
// now: every scenario of scenarios/ was run (or left out by a quick bench) from the same file.
// When it fails, `make bench-docs` regenerates them.
func TestDocsUpToDate(t *testing.T) {
	docs := filepath.Join(repoDir, "docs")
	data, err := os.ReadFile(filepath.Join(docs, DocsBench, ResultsJSON))
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("docs/bench/%s is missing: run make bench-docs", ResultsJSON)
	}
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := jsonstrict.Decode(data, &res); err != nil {
		t.Fatalf("docs/bench/%s: %v", ResultsJSON, err)
	}
	doc, err := Doc(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ path, want string }{
		{filepath.Join(docs, DocsResults), doc},
		{filepath.Join(docs, DocsBench, ResultsMarkdown), Markdown(res)},
	} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Errorf("%v: run make bench-docs", err)
			continue
		}
		if string(got) != f.want {
			t.Errorf("%s is not what the generator makes of docs/bench/results.json: run make bench-docs (or make bench-docs-render to keep the results)", f.path)
		}
	}
	if problems := staleScenarios(t, res, filepath.Join(repoDir, "scenarios")); len(problems) > 0 {
		t.Errorf("docs/bench/results.json does not measure the scenarios as they are: run make bench-docs\n%s", strings.Join(problems, "\n"))
	}
}

// staleScenarios lists what differs between the scenarios a bench measured and those in dir.
func staleScenarios(t *testing.T, res Results, dir string) []string {
	t.Helper()
	files, _, err := loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]ScenarioInfo{}
	for _, sc := range res.Scenarios {
		ran[sc.File] = sc
	}
	var problems []string
	for _, f := range files {
		name := filepath.Base(f.path)
		sc, ok := ran[name]
		switch {
		case !ok && res.Quick && slices.Contains(res.Skipped, strings.TrimSuffix(name, ".json")):
		case !ok:
			problems = append(problems, "- "+name+": not in the results")
		case sc.SHA256 != f.digest:
			problems = append(problems, "- "+name+": changed since the bench ran")
		}
		delete(ran, name)
	}
	for name := range ran {
		problems = append(problems, "- "+name+": in the results but no longer in scenarios/")
	}
	slices.Sort(problems)
	return problems
}

func TestStaleScenarios(t *testing.T) {
	dir := t.TempDir()
	scenarioCopy(t, dir, "steady", "steady", 600)
	scenarioCopy(t, dir, "write-hotspot", "write-hotspot", 600)
	files, _, err := loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	digest := map[string]string{}
	for _, f := range files {
		digest[filepath.Base(f.path)] = f.digest
	}
	cases := []struct {
		name string
		res  Results
		want []string
	}{
		{"current", Results{Scenarios: []ScenarioInfo{{File: "steady.json", SHA256: digest["steady.json"]}, {File: "write-hotspot.json", SHA256: digest["write-hotspot.json"]}}}, nil},
		{"a quick bench left one out", Results{Quick: true, Skipped: []string{"write-hotspot"}, Scenarios: []ScenarioInfo{{File: "steady.json", SHA256: digest["steady.json"]}}}, nil},
		{"a scenario changed", Results{Scenarios: []ScenarioInfo{{File: "steady.json", SHA256: "0"}, {File: "write-hotspot.json", SHA256: digest["write-hotspot.json"]}}},
			[]string{"- steady.json: changed since the bench ran"}},
		{"a scenario not run", Results{Scenarios: []ScenarioInfo{{File: "steady.json", SHA256: digest["steady.json"]}}},
			[]string{"- write-hotspot.json: not in the results"}},
		{"a scenario removed", Results{Scenarios: []ScenarioInfo{{File: "steady.json", SHA256: digest["steady.json"]}, {File: "write-hotspot.json", SHA256: digest["write-hotspot.json"]}, {File: "gone.json"}}},
			[]string{"- gone.json: in the results but no longer in scenarios/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleScenarios(t, tc.res, dir); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
