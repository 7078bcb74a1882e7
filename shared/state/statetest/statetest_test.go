package statetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/statetest"
)

// mutantEnv selects, in a child test process, which broken store TestMutant runs the suite on.
const mutantEnv = "STATETEST_MUTANT"

// TestSuiteCatchesBrokenStores runs the contract on deliberately broken stores, each in a child
// process (a failing suite fails its *testing.T, which cannot be observed in-process), and
// checks that the suite fails and names the broken behavior.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("running as a mutant child")
	}
	tests := []struct {
		mutant   string
		wantFail string
	}{
		{mutant: "ifabsent-check-then-write", wantFail: "racing IfAbsent claims: exactly one wins"},
		{mutant: "ifversion-ignored", wantFail: "IfVersion stale conflicts with the current version"},
		{mutant: "clock-ignored", wantFail: "expired item is invisible to Get"},
		{mutant: "query-unsorted", wantFail: "Query returns prefix matches sorted by SK"},
		{mutant: "batch-partial", wantFail: "BatchPut with a bad item writes nothing and names it"},
	}
	for _, tc := range tests {
		t.Run(tc.mutant, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutant$", "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+tc.mutant)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("suite on mutant %s: got err %v, want a failing exit\n%s", tc.mutant, err, out)
			}
			want := "--- FAIL: TestMutant/" + strings.ReplaceAll(tc.wantFail, " ", "_")
			if !strings.Contains(string(out), want) {
				t.Fatalf("suite on mutant %s: output lacks %q\n%s", tc.mutant, want, out)
			}
		})
	}
}

// TestMutant is the child half of TestSuiteCatchesBrokenStores.
func TestMutant(t *testing.T) {
	mode := os.Getenv(mutantEnv)
	if mode == "" {
		t.Skip("only runs as a child of TestSuiteCatchesBrokenStores")
	}
	statetest.Run(t, func(t *testing.T, clock state.Clock) state.Store {
		if mode == "clock-ignored" {
			return state.NewMemory(time.Now)
		}
		return &mutant{Memory: state.NewMemory(clock), mode: mode}
	})
}

// mutant is Memory with one contract violation.
type mutant struct {
	*state.Memory
	mode string
}

func (m *mutant) Put(ctx context.Context, it state.Item, cond state.Condition) (state.Item, error) {
	switch {
	case m.mode == "ifabsent-check-then-write" && cond.IfAbsent:
		if cur, err := m.Get(ctx, it.Key); err == nil {
			return state.Item{}, &state.ConflictError{Key: it.Key, Want: "absent", Got: cur.Version}
		}
		time.Sleep(5 * time.Millisecond) // widen the window a non-atomic store always has
		return m.Memory.Put(ctx, it, state.Condition{})
	case m.mode == "ifversion-ignored" && cond.IfVersion != 0:
		return m.Memory.Put(ctx, it, state.Condition{})
	}
	return m.Memory.Put(ctx, it, cond)
}

func (m *mutant) Query(ctx context.Context, pk, prefix string) ([]state.Item, error) {
	items, err := m.Memory.Query(ctx, pk, prefix)
	if m.mode == "query-unsorted" {
		slices.Reverse(items)
	}
	return items, err
}

func (m *mutant) BatchPut(ctx context.Context, items []state.Item) error {
	if m.mode != "batch-partial" {
		return m.Memory.BatchPut(ctx, items)
	}
	for _, it := range items {
		if _, err := m.Memory.Put(ctx, it, state.Condition{}); err != nil {
			return &state.ItemError{Key: it.Key, Err: err}
		}
	}
	return nil
}
