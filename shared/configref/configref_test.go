package configref

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/config"
)

// root is the module root, two levels above this package.
const root = "../.."

// update rewrites the reference instead of comparing it, as make config-reference does:
// go test ./shared/configref -run TestReferenceUpToDate -update.
var update = flag.Bool("update", false, "rewrite "+Path+" from the code")

// TestReferenceUpToDate fails when docs/configuration.md is not what the code generates: a default,
// a key or a doc comment changed without `make config-reference`.
func TestReferenceUpToDate(t *testing.T) {
	want, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(filepath.Join(root, Path), want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(filepath.Join(root, Path))
	if err != nil {
		t.Fatalf("%v (run make config-reference)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run make config-reference. First difference at line %d:\n got: %s\nwant: %s",
			Path, firstDiff(got, want), line(got, firstDiff(got, want)), line(want, firstDiff(got, want)))
	}
}

// TestReferenceFollowsDefaults: the reference states the code's defaults, so a changed default
// changes it, including the two the hand-written table once got wrong.
func TestReferenceFollowsDefaults(t *testing.T) {
	ref, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	tests := []struct {
		name, row string
	}{
		{"move_strategy", "| `move_strategy` | string | `" + string(def.MoveStrategy) + "` |"},
		{"max_own_moves_in_flight", "| `safety.max_own_moves_in_flight` | integer | `" + strconv.Itoa(def.Safety.MaxOwnMovesInFlight) + "` |"},
		{"scale_down_after, snake_case", "| `replicas.scale_down_after` | duration | `30m` |"},
		{"node_left_delay, snake_case", "| `replicas.node_left_delay` | duration | `1m` |"},
		{"snapshot_ttl", "| `snapshot_ttl` | duration | `2h` |"},
		{"max_bytes_per_cycle", "| `safety.max_bytes_per_cycle` | size | `100GiB` |"},
		{"cluster auth", "| `clusters[].auth` | string | `sigv4` |"},
		{"nested struct", "| `allocation.builtin_balancer.shard` | number | `0.45` |"},
		{"list element", "| `replicas.overrides[].pattern` | string | — |"},
		{"doc names keys, not Go fields", "below which the cluster counts as idle"},
		{"environment", "| `SHARDWISE_DRY_RUN` | true (default) \\| false |"},
		{"deprecated key", "| `replicas.ScaleDownAfter` | `replicas.scale_down_after` |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(ref), tc.row) {
				t.Errorf("reference lacks %q", tc.row)
			}
		})
	}
	// Every key says what it means: a new field without a doc comment fails here.
	for _, l := range strings.Split(string(ref), "\n") {
		if strings.HasPrefix(l, "| `") && (strings.HasSuffix(l, "|  |") || strings.HasSuffix(l, "| |")) {
			t.Errorf("a key without a meaning: %s", l)
		}
	}
	// Doc comments name fields by their Go names; the reference names them by their keys.
	for _, goName := range []string{"DrainWithin", "AllocationUtilization", "MaxOwnMovesInFlight"} {
		if strings.Contains(string(ref), goName) {
			t.Errorf("reference holds the Go name %q where a key belongs", goName)
		}
	}
}

// TestGenerateNeedsTheSource: run away from the module root, the generator says so rather than
// writing a reference without meanings.
func TestGenerateNeedsTheSource(t *testing.T) {
	if _, err := Generate(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not the module root") {
		t.Fatalf("got %v, want an error naming the module root", err)
	}
}

func firstDiff(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

func line(b []byte, n int) string {
	lines := strings.Split(string(b), "\n")
	if n-1 < len(lines) {
		return lines[n-1]
	}
	return "(end of file)"
}
