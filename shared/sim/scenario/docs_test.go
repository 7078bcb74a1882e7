package scenario_test

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// TestEveryFieldDocumented fails when a field of the scenario format, or an event kind or load
// profile kind, is not named in docs/scenarios.md: in a code span (`cluster.recovery_bytes_per_second`,
// `step {before, after, at_seconds}`) or a JSON example ("rollover_from").
func TestEveryFieldDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := documentedNames(string(doc))
	missing := map[string]bool{}
	for _, f := range formatFields(reflect.TypeFor[scenario.Scenario](), "") {
		if !named[f.name] {
			missing[f.path] = true
		}
	}
	for _, kind := range append(scenario.EventKinds(), scenario.ProfileKinds()...) {
		if !named[kind] {
			missing["kind "+kind] = true
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/scenarios.md does not name: %s", strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
}

type formatField struct{ name, path string }

// formatFields lists the JSON fields of t and of the structs it holds, with their paths.
func formatFields(t reflect.Type, prefix string) []formatField {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []formatField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, formatFields(f.Type, prefix)...)
			continue
		}
		if name == "" {
			continue
		}
		out = append(out, formatField{name, prefix + name})
		out = append(out, formatFields(f.Type, prefix+name+".")...)
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("(?s)```.*?```|`[^`]+`")
	word     = regexp.MustCompile(`[a-z][a-z0-9_]*`)
)

// documentedNames are the identifiers in the document's code spans and blocks.
func documentedNames(doc string) map[string]bool {
	out := map[string]bool{}
	for _, span := range codeSpan.FindAllString(doc, -1) {
		for _, w := range word.FindAllString(span, -1) {
			out[w] = true
		}
	}
	return out
}

// moduleRoot is the directory of the module's go.mod, above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
