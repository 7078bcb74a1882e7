package state_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/state"
)

var tLarge = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// cooldowns is the replica controller's memory of n indices, named after an id compression gets
// no help from, each with a recent target and a past change.
func cooldowns(n int, seed uint64) map[string]replicas.Memory {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make(map[string]replicas.Memory, n)
	for range n {
		name := fmt.Sprintf("tenant-%016x-events", rng.Uint64())
		changed := tLarge.Add(-time.Duration(rng.IntN(1e6)) * time.Second)
		out[name] = replicas.Memory{Index: name, FirstSeenReplicas: 1 + rng.IntN(3), WindowMax: 1 + rng.IntN(3),
			Recent: []replicas.Seen{{At: tLarge, Target: 1 + rng.IntN(3)}}, LastChange: changed, LastReason: "search load share"}
	}
	return out
}

// parts lists the stored parts of the value at key.
func parts(t *testing.T, s state.Store, key state.Key) []state.Item {
	t.Helper()
	items, err := s.Query(t.Context(), key.PK, key.SK+"#part#")
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestLargeRoundTrip(t *testing.T) {
	cases := []struct {
		name      string
		value     any
		wantParts bool
	}{
		{"a short value, stored in the item as PutJSON would", map[string]int{"a": 1}, false},
		{"a value compressing under InlineBytes, in the item", cooldowns(1000, 1), false},
		// At 40,000 indices the memory compressed to 507,935 bytes in one item, over the limit.
		{"40,000 indices of cooldowns, in parts", cooldowns(40000, 2), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := state.NewMemory(func() time.Time { return tLarge })
			meter := state.NewMeter(st)
			key := state.Key{PK: "cluster#big", SK: "replicas#memory"}
			if _, err := state.PutLargeJSON(t.Context(), meter, key, tc.value, state.LargeRef{}, state.Condition{IfAbsent: true}, 0, tLarge); err != nil {
				t.Fatal(err)
			}
			got, ref, err := state.GetLargeJSON[map[string]any](t.Context(), st, key)
			if err != nil {
				t.Fatal(err)
			}
			want := roundTripJSON(t, tc.value)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back %d entries, want the %d written, equal", len(got), len(want))
			}
			if ref.Version != 1 {
				t.Errorf("version: got %d want 1", ref.Version)
			}
			n := len(parts(t, st, key))
			if (n > 0) != tc.wantParts {
				t.Errorf("%d parts stored, want parts %t", n, tc.wantParts)
			}
			if !tc.wantParts {
				// Stored as PutJSON stores it: readable by GetJSON, as by code that predates parts.
				if _, _, err := state.GetJSON[map[string]any](t.Context(), st, key); err != nil {
					t.Errorf("GetJSON: %v", err)
				}
			}
			if u := meter.Usage(); u.WriteBytes > 0 && tc.wantParts {
				t.Logf("%d items written, %d bytes, %d write units", u.Writes, u.WriteBytes, u.WriteUnits)
			}
		})
	}
}

func roundTripJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	st := state.NewMemory(nil)
	key := state.Key{PK: "p", SK: "s"}
	if _, err := state.PutJSON(t.Context(), st, key, v, state.Condition{}, 0, tLarge); err != nil && !errors.Is(err, state.ErrTooLarge) {
		t.Fatal(err)
	}
	raw, err := state.EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := state.DecodeJSON[map[string]any](raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A rewrite with a few entries changed writes a few parts, not the value, and leaves only the
// parts its manifest names.
func TestLargeRewriteWritesWhatChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 40,000 indices' memory several times")
	}
	cases := []struct {
		name     string
		change   func(map[string]replicas.Memory)
		maxShare float64 // of the first write's bytes
	}{
		{"nothing changed", func(map[string]replicas.Memory) {}, 0.05},
		{"three entries changed", func(m map[string]replicas.Memory) {
			i := 0
			for k, v := range m {
				if i++; i > 3 {
					break
				}
				v.LastChange = tLarge
				m[k] = v
			}
		}, 0.15},
		{"an entry added and one removed", func(m map[string]replicas.Memory) {
			for k := range m {
				delete(m, k)
				break
			}
			m["tenant-new"] = replicas.Memory{Index: "tenant-new"}
		}, 0.15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := state.NewMemory(func() time.Time { return tLarge })
			meter := state.NewMeter(st)
			key := state.Key{PK: "cluster#big", SK: "replicas#memory"}
			v := cooldowns(40000, 3)
			if _, err := state.PutLargeJSON(t.Context(), meter, key, v, state.LargeRef{}, state.Condition{IfAbsent: true}, 0, tLarge); err != nil {
				t.Fatal(err)
			}
			first := meter.Usage()
			_, ref, err := state.GetLargeJSON[map[string]replicas.Memory](t.Context(), st, key)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(v)
			if _, err := state.PutLargeJSON(t.Context(), meter, key, v, ref, state.Condition{IfVersion: ref.Version}, 0, tLarge); err != nil {
				t.Fatal(err)
			}
			second := meter.Usage().Sub(first)
			t.Logf("first write %d bytes, rewrite %d bytes in %d items", first.WriteBytes, second.WriteBytes, second.Writes)
			if share := float64(second.WriteBytes) / float64(first.WriteBytes); share > tc.maxShare {
				t.Errorf("rewrite wrote %d bytes, %.0f%% of the first write's %d; want at most %.0f%%", second.WriteBytes, 100*share, first.WriteBytes, 100*tc.maxShare)
			}
			got, ref2, err := state.GetLargeJSON[map[string]replicas.Memory](t.Context(), st, key)
			if err != nil {
				t.Fatal(err)
			}
			if want := roundTripJSON(t, v); !reflect.DeepEqual(roundTripJSON(t, got), want) {
				t.Errorf("read back %d entries, want the %d written, equal", len(got), len(want))
			}
			if n := len(parts(t, st, key)); n != state.LargeParts(ref2) {
				t.Errorf("%d parts stored, want the %d the manifest names", n, state.LargeParts(ref2))
			}
		})
	}
}

// A writer that lost the race to another writes no manifest and deletes nothing: the winner's
// value reads whole. A value that shrinks into the item leaves no parts.
func TestLargeRaceAndShrink(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 40,000 indices' memory several times")
	}
	st := state.NewMemory(func() time.Time { return tLarge })
	key := state.Key{PK: "cluster#big", SK: "allocation#memory"}
	if _, err := state.PutLargeJSON(t.Context(), st, key, cooldowns(40000, 4), state.LargeRef{}, state.Condition{IfAbsent: true}, 0, tLarge); err != nil {
		t.Fatal(err)
	}
	_, ref, err := state.GetLargeJSON[map[string]any](t.Context(), st, key)
	if err != nil {
		t.Fatal(err)
	}
	winner := cooldowns(40000, 5)
	if _, err := state.PutLargeJSON(t.Context(), st, key, winner, ref, state.Condition{IfVersion: ref.Version}, 0, tLarge); err != nil {
		t.Fatal(err)
	}
	_, err = state.PutLargeJSON(t.Context(), st, key, cooldowns(40000, 6), ref, state.Condition{IfVersion: ref.Version}, 0, tLarge)
	if !errors.Is(err, state.ErrConflict) {
		t.Fatalf("the loser's write: got %v, want %v", err, state.ErrConflict)
	}
	got, ref, err := state.GetLargeJSON[map[string]any](t.Context(), st, key)
	if err != nil {
		t.Fatal(err)
	}
	if want := roundTripJSON(t, winner); !reflect.DeepEqual(got, want) {
		t.Errorf("read back %d entries, want the winner's %d", len(got), len(want))
	}
	if _, err := state.PutLargeJSON(t.Context(), st, key, map[string]int{"small": 1}, ref, state.Condition{IfVersion: ref.Version}, 0, tLarge); err != nil {
		t.Fatal(err)
	}
	small, _, err := state.GetJSON[map[string]int](t.Context(), st, key)
	if err != nil || small["small"] != 1 {
		t.Errorf("the shrunk value: got %v, %v; want it in the item", small, err)
	}
}

// A manifest naming a part that is gone reads as an error after the retries, never as a short
// value.
func TestLargeMissingPart(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 40,000 indices' memory several times")
	}
	st := state.NewMemory(func() time.Time { return tLarge })
	key := state.Key{PK: "cluster#big", SK: "replicas#memory"}
	if _, err := state.PutLargeJSON(t.Context(), st, key, cooldowns(40000, 7), state.LargeRef{}, state.Condition{}, 0, tLarge); err != nil {
		t.Fatal(err)
	}
	ps := parts(t, st, key)
	if err := st.Delete(t.Context(), ps[len(ps)/2].Key, state.Condition{}); err != nil {
		t.Fatal(err)
	}
	_, _, err := state.GetLarge(t.Context(), st, key)
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("got %v, want an error naming the part gone", err)
	}
}
