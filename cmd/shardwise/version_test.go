package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/buildinfo"
)

func TestVersion(t *testing.T) {
	buildinfo.Version, buildinfo.Commit = "v9.8.7", "abc1234"
	t.Cleanup(func() { buildinfo.Version, buildinfo.Commit = "", "" })
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shardwise v9.8.7\n", "commit abc1234\n", runtime.Version() + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("version: got %q, want it to contain %q", out, want)
		}
	}
	out, _, err = execute(t, "version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version --json: %v: %s", err, out)
	}
	if got != (buildinfo.Info{Version: "v9.8.7", Commit: "abc1234", GoVersion: runtime.Version()}) {
		t.Errorf("version --json: got %+v", got)
	}
}

// config-reference prints what docs/configuration.md holds (shared/configref's test guards the
// file itself).
func TestConfigReferenceCommand(t *testing.T) {
	root := filepath.Join("..", "..")
	out, _, err := execute(t, "config-reference", "--src", root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("config-reference differs from docs/configuration.md: run make config-reference")
	}
	if _, _, err := execute(t, "config-reference", "--src", t.TempDir()); err == nil {
		t.Error("config-reference away from a checkout: want an error")
	}
}
