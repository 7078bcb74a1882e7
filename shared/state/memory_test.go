package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/statetest"
)

func TestMemoryContract(t *testing.T) {
	statetest.Run(t, func(t *testing.T, clock state.Clock) state.Store {
		return state.NewMemory(clock)
	})
}

func TestNewMemoryNilClockUsesWallTime(t *testing.T) {
	tests := []struct {
		name     string
		ttl      time.Duration
		wantLive bool
	}{
		{name: "expiry an hour ahead is live", ttl: time.Hour, wantLive: true},
		{name: "expiry an hour ago is gone", ttl: -time.Hour, wantLive: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := state.NewMemory(nil)
			key := state.Key{PK: "p", SK: "s"}
			if _, err := m.Put(t.Context(), state.Item{Key: key, ExpiresAt: time.Now().Add(tc.ttl)}, state.Condition{}); err != nil {
				t.Fatalf("Put: %v", err)
			}
			_, err := m.Get(t.Context(), key)
			if gotLive := err == nil; gotLive != tc.wantLive {
				t.Fatalf("Get: got live %t (err %v), want live %t", gotLive, err, tc.wantLive)
			}
		})
	}
}

func BenchmarkMemoryPut(b *testing.B) {
	m := state.NewMemory(nil)
	value := make([]byte, 4096)
	for i := 0; b.Loop(); i++ {
		key := state.Key{PK: "cluster", SK: fmt.Sprintf("snap#node-%d", i%500)}
		if _, err := m.Put(b.Context(), state.Item{Key: key, Value: value}, state.Condition{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryQuery reads one snapshot's chunks (200 nodes) out of a partition that also holds
// other kinds of items, the local runner's per-tick read.
func BenchmarkMemoryQuery(b *testing.B) {
	m := state.NewMemory(nil)
	for _, kind := range []string{"plan", "snap", "streak"} {
		for i := range 200 {
			key := state.Key{PK: "cluster", SK: fmt.Sprintf("%s#node-%03d", kind, i)}
			if _, err := m.Put(b.Context(), state.Item{Key: key, Value: make([]byte, 1024)}, state.Condition{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		items, err := m.Query(b.Context(), "cluster", "snap#")
		if err != nil || len(items) != 200 {
			b.Fatalf("Query: %d items, err %v", len(items), err)
		}
	}
}
