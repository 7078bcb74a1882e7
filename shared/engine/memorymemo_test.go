package engine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/state"
)

// TestMemoryMemoDecodesAlike writes a replica memory, changes it and writes it again, and reads it
// after each write (and twice in a row) through one memo: every read must be what
// state.GetLargeJSON gives without the memo, a write must show in the next read, a caller's change
// to the map it got must not reach a later read, two keys must not mix, and bytes that do not
// decode must fail as they do without the memo.
func TestMemoryMemoDecodesAlike(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	store := state.NewMemory(func() time.Time { return at })
	keyA := state.Key{PK: "cluster#a", SK: replicasMemoryKey}
	keyB := state.Key{PK: "cluster#b", SK: replicasMemoryKey}
	steady := map[string]replicas.Memory{
		"logs": {Index: "logs", FirstSeenReplicas: 1, WindowMax: 2, Recent: []replicas.Seen{{At: at, Target: 2}}},
		"m":    {Index: "m", FirstSeenReplicas: 0},
	}
	lowered := map[string]replicas.Memory{
		"logs": {Index: "logs", FirstSeenReplicas: 1, LowerSince: at.Add(time.Minute), WindowMax: 2,
			Recent: []replicas.Seen{{At: at, Target: 2}, {At: at.Add(time.Minute), Target: 1}}},
		"m": {Index: "m", FirstSeenReplicas: 0},
	}
	var ref state.LargeRef
	put := func(key state.Key, m map[string]replicas.Memory) {
		t.Helper()
		if _, err := state.PutLargeJSON(ctx, store, key, m, ref, state.Condition{}, 0, at); err != nil {
			t.Fatal(err)
		}
	}
	var memo memoryMemo
	steps := []struct {
		name  string
		key   state.Key
		write map[string]replicas.Memory // nil: read without writing
		raw   []byte                     // written as is instead
		want  map[string]replicas.Memory
		fails bool
	}{
		{name: "first read", key: keyA, write: steady, want: steady},
		{name: "the same bytes again", key: keyA, want: steady},
		{name: "another cluster's memory", key: keyB, write: lowered, want: lowered},
		{name: "the first cluster's, unchanged", key: keyA, want: steady},
		{name: "a scale-down pending", key: keyA, write: lowered, want: lowered},
		{name: "and read again", key: keyA, want: lowered},
		{name: "back to steady", key: keyA, write: steady, want: steady},
		{name: "bytes that do not decode", key: keyA, raw: []byte(`{"logs":`), fails: true},
		{name: "steady after the bad bytes", key: keyA, write: steady, want: steady},
	}
	for _, st := range steps {
		switch {
		case st.raw != nil:
			if _, err := state.PutLarge(ctx, store, st.key, st.raw, ref, state.Condition{}, 0, at); err != nil {
				t.Fatal(err)
			}
		case st.write != nil:
			put(st.key, st.write)
		}
		want, _, wantErr := state.GetLargeJSON[map[string]replicas.Memory](ctx, store, st.key)
		got, _, err := memo.getMemory(ctx, store, st.key)
		if (err != nil) != st.fails || (wantErr != nil) != st.fails {
			t.Fatalf("%s: error %v, without the memo %v; want failure %v", st.name, err, wantErr, st.fails)
		}
		if st.fails {
			if err.Error() != wantErr.Error() {
				t.Errorf("%s: error %q, without the memo %q", st.name, err, wantErr)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s: got %+v, without the memo %+v, want %+v", st.name, got, want, st.want)
		}
		// The caller's map is its own.
		got["logs"] = replicas.Memory{Index: "logs", LastReason: "changed by a caller"}
		delete(got, "m")
	}
}
