// Package statetest is the contract every state.Store must pass: Memory runs it in its tests, the
// DynamoDB store runs it against moto. A behavior the functions rely on belongs here, not in one
// implementation's tests.
package statetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state"
)

// Clock is a settable clock for stores under test; its Now is a state.Clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Racers is how many goroutines the concurrency cases start: enough to make lost updates and
// double claims likely when a store's conditions are not atomic.
const Racers = 20

// Run runs the contract on stores from newStore. Each subtest calls newStore once and must get a
// store holding no items, whose expiry follows clock.
func Run(t *testing.T, newStore func(t *testing.T, clock state.Clock) state.Store) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A whole-second start makes expiry rounding predictable; real time keeps TTL
			// attributes plausible for a real table.
			clock := NewClock(time.Now().Truncate(time.Second))
			tc.run(t, newStore(t, clock.Now), clock)
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s state.Store, clock *Clock)
}

var (
	keyA = state.Key{PK: "cluster#alpha", SK: "ledger#move-1"}
	keyB = state.Key{PK: "cluster#alpha", SK: "ledger#move-2"}
)

var cases = []testCase{
	{"get missing returns ErrNotFound", func(t *testing.T, s state.Store, _ *Clock) {
		_, err := s.Get(t.Context(), keyA)
		if !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("Get missing: got err %v, want ErrNotFound", err)
		}
	}},
	{"put then get round trips", func(t *testing.T, s state.Store, clock *Clock) {
		in := state.Item{Key: keyA, Value: []byte(`{"node":"node-3"}`), ExpiresAt: clock.Now().Add(time.Hour)}
		want := state.Item{Key: keyA, Value: in.Value, Version: 1, ExpiresAt: in.ExpiresAt}
		stored := mustPut(t, s, in, state.Condition{})
		assertItem(t, "Put result", stored, want)
		assertItem(t, "Get", mustGet(t, s, keyA), want)
	}},
	{"empty value round trips", func(t *testing.T, s state.Store, _ *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: nil}, state.Condition{})
		if got := mustGet(t, s, keyA); len(got.Value) != 0 {
			t.Fatalf("Get: got value %q, want empty", got.Value)
		}
	}},
	{"input version is ignored", func(t *testing.T, s state.Store, _ *Clock) {
		stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), Version: 41}, state.Condition{})
		if stored.Version != 1 {
			t.Fatalf("Put with Version 41 on a new key: got version %d, want 1", stored.Version)
		}
	}},
	{"versions increase by one per write", func(t *testing.T, s state.Store, _ *Clock) {
		for want := int64(1); want <= 5; want++ {
			stored := mustPut(t, s, state.Item{Key: keyA, Value: fmt.Appendf(nil, "%d", want)}, state.Condition{})
			if stored.Version != want {
				t.Fatalf("write %d: got version %d, want %d", want, stored.Version, want)
			}
		}
		if got := mustGet(t, s, keyA); got.Version != 5 || string(got.Value) != "5" {
			t.Fatalf("Get after 5 writes: got version %d value %q, want 5 %q", got.Version, got.Value, "5")
		}
	}},
	{"IfAbsent creates a missing item", func(t *testing.T, s state.Store, _ *Clock) {
		stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("claim")}, state.Condition{IfAbsent: true})
		if stored.Version != 1 {
			t.Fatalf("got version %d, want 1", stored.Version)
		}
	}},
	{"IfAbsent on a live item conflicts and keeps it", func(t *testing.T, s state.Store, _ *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("first")}, state.Condition{})
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("second")}, state.Condition{})
		_, err := s.Put(t.Context(), state.Item{Key: keyA, Value: []byte("third")}, state.Condition{IfAbsent: true})
		assertConflict(t, err, keyA, "absent", 2)
		assertValue(t, s, keyA, "second", 2)
	}},
	{"IfVersion current succeeds", func(t *testing.T, s state.Store, _ *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("v1")}, state.Condition{})
		stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("v2")}, state.Condition{IfVersion: 1})
		if stored.Version != 2 {
			t.Fatalf("got version %d, want 2", stored.Version)
		}
	}},
	{"IfVersion stale conflicts with the current version", func(t *testing.T, s state.Store, _ *Clock) {
		for range 3 {
			mustPut(t, s, state.Item{Key: keyA, Value: []byte("v")}, state.Condition{})
		}
		_, err := s.Put(t.Context(), state.Item{Key: keyA, Value: []byte("stale")}, state.Condition{IfVersion: 2})
		assertConflict(t, err, keyA, "version 2", 3)
		assertValue(t, s, keyA, "v", 3)
	}},
	{"IfVersion on a missing item conflicts with Got 0", func(t *testing.T, s state.Store, _ *Clock) {
		_, err := s.Put(t.Context(), state.Item{Key: keyA, Value: []byte("x")}, state.Condition{IfVersion: 1})
		assertConflict(t, err, keyA, "version 1", 0)
		assertMissing(t, s, keyA)
	}},
	{"expired item is invisible to Get", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		clock.Advance(time.Minute - time.Nanosecond)
		assertValue(t, s, keyA, "x", 1)
		clock.Advance(time.Nanosecond)
		assertMissing(t, s, keyA)
	}},
	{"expired item is skipped by Query", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("short"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		mustPut(t, s, state.Item{Key: keyB, Value: []byte("long"), ExpiresAt: clock.Now().Add(time.Hour)}, state.Condition{})
		clock.Advance(2 * time.Minute)
		assertQuery(t, s, keyA.PK, "ledger#", keyB.SK)
	}},
	{"IfAbsent treats an expired item as absent", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("old")}, state.Condition{})
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("old"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		clock.Advance(time.Minute)
		stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("new")}, state.Condition{IfAbsent: true})
		if stored.Version != 1 {
			t.Fatalf("IfAbsent over an expired item: got version %d, want 1", stored.Version)
		}
		assertValue(t, s, keyA, "new", 1)
	}},
	{"unconditional put over an expired item starts at version 1", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("old")}, state.Condition{})
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("old"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		clock.Advance(time.Minute)
		if stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("new")}, state.Condition{}); stored.Version != 1 {
			t.Fatalf("got version %d, want 1", stored.Version)
		}
	}},
	{"IfVersion on an expired item conflicts with Got 0", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("old"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		clock.Advance(time.Hour)
		_, err := s.Put(t.Context(), state.Item{Key: keyA, Value: []byte("new")}, state.Condition{IfVersion: 1})
		assertConflict(t, err, keyA, "version 1", 0)
	}},
	{"IfVersion rewrite pushes the expiry on", func(t *testing.T, s state.Store, clock *Clock) {
		// How the move ledger keeps an entry whose copy still relocates: the same bytes, written
		// again under its version with a later expiry (the table's TTL attribute with it).
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		clock.Advance(30 * time.Second)
		later := clock.Now().Add(time.Minute)
		if stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), ExpiresAt: later}, state.Condition{IfVersion: 1}); !stored.ExpiresAt.Equal(later) {
			t.Fatalf("rewrite ExpiresAt: got %s, want %s", stored.ExpiresAt, later)
		}
		clock.Advance(45 * time.Second) // past the first expiry
		assertValue(t, s, keyA, "x", 2)
		assertQuery(t, s, keyA.PK, "ledger#", keyA.SK)
		clock.Advance(15 * time.Second)
		assertMissing(t, s, keyA)
	}},
	{"expiry rounds up to a whole second", func(t *testing.T, s state.Store, clock *Clock) {
		asked := clock.Now().Add(1500 * time.Millisecond)
		want := clock.Now().Add(2 * time.Second)
		stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), ExpiresAt: asked}, state.Condition{})
		if !stored.ExpiresAt.Equal(want) {
			t.Fatalf("Put ExpiresAt %s: got %s, want %s", asked, stored.ExpiresAt, want)
		}
		clock.Advance(1500 * time.Millisecond)
		assertValue(t, s, keyA, "x", 1)
		clock.Advance(500 * time.Millisecond)
		assertMissing(t, s, keyA)
	}},
	{"expiry in the past stores an invisible item", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), ExpiresAt: clock.Now().Add(-time.Second)}, state.Condition{})
		assertMissing(t, s, keyA)
	}},
	{"Query returns prefix matches sorted by SK", func(t *testing.T, s state.Store, _ *Clock) {
		for _, k := range []state.Key{
			{PK: "c1", SK: "snap#node-2"},
			{PK: "c1", SK: "snap#node-10"},
			{PK: "c1", SK: "snap"},
			{PK: "c1", SK: "streak#node-1"},
			{PK: "c1", SK: "snap#node-1"},
			{PK: "c1", SK: "sna"},
			{PK: "c2", SK: "snap#node-1"},
			{PK: "c10", SK: "snap#node-1"},
		} {
			mustPut(t, s, state.Item{Key: k, Value: []byte(k.PK + "/" + k.SK)}, state.Condition{})
		}
		assertQuery(t, s, "c1", "snap#", "snap#node-1", "snap#node-10", "snap#node-2")
		assertQuery(t, s, "c1", "snap", "snap", "snap#node-1", "snap#node-10", "snap#node-2")
		assertQuery(t, s, "c1", "", "sna", "snap", "snap#node-1", "snap#node-10", "snap#node-2", "streak#node-1")
		assertQuery(t, s, "c1", "plan#")
		assertQuery(t, s, "c3", "")
		items, err := s.Query(t.Context(), "c2", "")
		if err != nil {
			t.Fatalf("Query c2: %v", err)
		}
		if len(items) != 1 || string(items[0].Value) != "c2/snap#node-1" || items[0].Version != 1 {
			t.Fatalf("Query c2: got %v, want one item c2/snap#node-1 at version 1", items)
		}
	}},
	{"Query orders SKs by bytes", func(t *testing.T, s state.Store, _ *Clock) {
		// DynamoDB compares string sort keys as UTF-8 bytes: "Z" < "a" < "é".
		for _, sk := range []string{"é", "a", "Z", "a#1", "0"} {
			mustPut(t, s, state.Item{Key: state.Key{PK: "p", SK: sk}}, state.Condition{})
		}
		assertQuery(t, s, "p", "", "0", "Z", "a", "a#1", "é")
	}},
	{"Delete removes; deleting a missing item is not an error", func(t *testing.T, s state.Store, _ *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x")}, state.Condition{})
		if err := s.Delete(t.Context(), keyA, state.Condition{}); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		assertMissing(t, s, keyA)
		if err := s.Delete(t.Context(), keyA, state.Condition{}); err != nil {
			t.Fatalf("Delete missing: got %v, want nil", err)
		}
		if stored := mustPut(t, s, state.Item{Key: keyA, Value: []byte("y")}, state.Condition{}); stored.Version != 1 {
			t.Fatalf("Put after Delete: got version %d, want 1", stored.Version)
		}
	}},
	{"Delete IfVersion guards the delete", func(t *testing.T, s state.Store, _ *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x")}, state.Condition{})
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("y")}, state.Condition{})
		assertConflict(t, s.Delete(t.Context(), keyA, state.Condition{IfVersion: 1}), keyA, "version 1", 2)
		assertValue(t, s, keyA, "y", 2)
		if err := s.Delete(t.Context(), keyA, state.Condition{IfVersion: 2}); err != nil {
			t.Fatalf("Delete IfVersion current: %v", err)
		}
		assertMissing(t, s, keyA)
		// Gone already: the delete's aim holds, as for a retried delete whose first attempt landed.
		if err := s.Delete(t.Context(), keyA, state.Condition{IfVersion: 2}); err != nil {
			t.Fatalf("Delete IfVersion of a deleted item: got %v, want nil", err)
		}
	}},
	{"Delete IfVersion of an expired item succeeds", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x"), ExpiresAt: clock.Now().Add(time.Minute)}, state.Condition{})
		clock.Advance(time.Minute)
		if err := s.Delete(t.Context(), keyA, state.Condition{IfVersion: 1}); err != nil {
			t.Fatalf("Delete IfVersion of an expired item: got %v, want nil", err)
		}
		assertMissing(t, s, keyA)
	}},
	{"value size limit", func(t *testing.T, s state.Store, _ *Clock) {
		atLimit := bytes.Repeat([]byte{'x'}, state.MaxValueBytes)
		if stored := mustPut(t, s, state.Item{Key: keyA, Value: atLimit}, state.Condition{}); len(stored.Value) != state.MaxValueBytes {
			t.Fatalf("Put at the limit: stored %d bytes, want %d", len(stored.Value), state.MaxValueBytes)
		}
		over := make([]byte, state.MaxValueBytes+1)
		if _, err := s.Put(t.Context(), state.Item{Key: keyB, Value: over}, state.Condition{}); !errors.Is(err, state.ErrTooLarge) {
			t.Fatalf("Put one byte over: got err %v, want ErrTooLarge", err)
		}
		assertMissing(t, s, keyB)
	}},
	{"invalid requests are ErrInvalid", func(t *testing.T, s state.Store, _ *Clock) {
		long := func(n int) string { return strings.Repeat("k", n) }
		for _, bad := range []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"get empty pk", func(ctx context.Context) error { _, err := s.Get(ctx, state.Key{SK: "s"}); return err }},
			{"get empty sk", func(ctx context.Context) error { _, err := s.Get(ctx, state.Key{PK: "p"}); return err }},
			{"put pk over limit", func(ctx context.Context) error {
				_, err := s.Put(ctx, state.Item{Key: state.Key{PK: long(state.MaxPKBytes + 1), SK: "s"}}, state.Condition{})
				return err
			}},
			{"put sk over limit", func(ctx context.Context) error {
				_, err := s.Put(ctx, state.Item{Key: state.Key{PK: "p", SK: long(state.MaxSKBytes + 1)}}, state.Condition{})
				return err
			}},
			{"put invalid utf-8", func(ctx context.Context) error {
				_, err := s.Put(ctx, state.Item{Key: state.Key{PK: "p", SK: "\xff"}}, state.Condition{})
				return err
			}},
			{"put both conditions", func(ctx context.Context) error {
				_, err := s.Put(ctx, state.Item{Key: keyA}, state.Condition{IfAbsent: true, IfVersion: 1})
				return err
			}},
			{"put negative version", func(ctx context.Context) error {
				_, err := s.Put(ctx, state.Item{Key: keyA}, state.Condition{IfVersion: -1})
				return err
			}},
			{"delete IfAbsent", func(ctx context.Context) error { return s.Delete(ctx, keyA, state.Condition{IfAbsent: true}) }},
			{"delete empty sk", func(ctx context.Context) error { return s.Delete(ctx, state.Key{PK: "p"}, state.Condition{}) }},
			{"query empty pk", func(ctx context.Context) error { _, err := s.Query(ctx, "", "x"); return err }},
			{"query prefix over limit", func(ctx context.Context) error {
				_, err := s.Query(ctx, "p", long(state.MaxSKBytes+1))
				return err
			}},
			{"batch duplicate keys", func(ctx context.Context) error {
				return s.BatchPut(ctx, []state.Item{{Key: keyA}, {Key: keyB}, {Key: keyA}})
			}},
		} {
			if err := bad.call(t.Context()); !errors.Is(err, state.ErrInvalid) {
				t.Errorf("%s: got err %v, want ErrInvalid", bad.name, err)
			}
		}
		assertMissing(t, s, keyA)
		assertMissing(t, s, keyB)
	}},
	{"BatchPut writes every item with Put's versions", func(t *testing.T, s state.Store, clock *Clock) {
		mustPut(t, s, state.Item{Key: state.Key{PK: "c1", SK: "snap#node-1"}, Value: []byte("old")}, state.Condition{})
		var items []state.Item
		for i := range 30 { // over DynamoDB's 25-item BatchWriteItem page, so stores must split
			items = append(items, state.Item{
				Key:       state.Key{PK: "c1", SK: fmt.Sprintf("snap#node-%d", i)},
				Value:     fmt.Appendf(nil, "chunk %d", i),
				ExpiresAt: clock.Now().Add(time.Hour),
			})
		}
		if err := s.BatchPut(t.Context(), items); err != nil {
			t.Fatalf("BatchPut: %v", err)
		}
		got, err := s.Query(t.Context(), "c1", "snap#")
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		if len(got) != len(items) {
			t.Fatalf("Query after BatchPut: got %d items, want %d", len(got), len(items))
		}
		for _, it := range items {
			want := it
			want.Version = 1
			if it.Key.SK == "snap#node-1" {
				want.Version = 2
			}
			assertItem(t, "Get "+it.Key.SK, mustGet(t, s, it.Key), want)
		}
		if err := s.BatchPut(t.Context(), nil); err != nil {
			t.Fatalf("BatchPut of no items: %v", err)
		}
	}},
	{"BatchPut with a bad item writes nothing and names it", func(t *testing.T, s state.Store, _ *Clock) {
		bad := state.Key{PK: "c1", SK: "snap#node-2"}
		items := []state.Item{
			{Key: state.Key{PK: "c1", SK: "snap#node-1"}, Value: []byte("ok")},
			{Key: bad, Value: make([]byte, state.MaxValueBytes+1)},
			{Key: state.Key{PK: "c1", SK: "snap#node-3"}, Value: []byte("ok")},
		}
		err := s.BatchPut(t.Context(), items)
		if !errors.Is(err, state.ErrTooLarge) {
			t.Fatalf("BatchPut: got err %v, want ErrTooLarge", err)
		}
		var ie *state.ItemError
		if !errors.As(err, &ie) || ie.Key != bad {
			t.Fatalf("BatchPut: got err %v, want an *ItemError naming %s", err, bad)
		}
		assertQuery(t, s, "c1", "")
	}},
	{"returned values do not alias the store", func(t *testing.T, s state.Store, _ *Clock) {
		in := []byte("original")
		stored := mustPut(t, s, state.Item{Key: keyA, Value: in}, state.Condition{})
		in[0] = 'X'
		stored.Value[1] = 'X'
		got := mustGet(t, s, keyA)
		got.Value[2] = 'X'
		items, err := s.Query(t.Context(), keyA.PK, "")
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		items[0].Value[3] = 'X'
		assertValue(t, s, keyA, "original", 1)
	}},
	{"canceled context fails every call", func(t *testing.T, s state.Store, _ *Clock) {
		mustPut(t, s, state.Item{Key: keyA, Value: []byte("x")}, state.Condition{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := map[string]func() error{
			"Get":      func() error { _, err := s.Get(ctx, keyA); return err },
			"Put":      func() error { _, err := s.Put(ctx, state.Item{Key: keyA}, state.Condition{}); return err },
			"Delete":   func() error { return s.Delete(ctx, keyA, state.Condition{}) },
			"Query":    func() error { _, err := s.Query(ctx, keyA.PK, ""); return err },
			"BatchPut": func() error { return s.BatchPut(ctx, []state.Item{{Key: keyA}}) },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s: got err %v, want context.Canceled", name, err)
			}
		}
		assertValue(t, s, keyA, "x", 1)
	}},
	{"racing IfAbsent claims: exactly one wins", func(t *testing.T, s state.Store, _ *Clock) {
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			winners   []int
			conflicts int
		)
		start := make(chan struct{})
		for i := range Racers {
			wg.Go(func() {
				<-start
				_, err := s.Put(t.Context(), state.Item{Key: keyA, Value: fmt.Appendf(nil, "%d", i)}, state.Condition{IfAbsent: true})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, i)
				case errors.Is(err, state.ErrConflict):
					conflicts++
				default:
					t.Errorf("racer %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 || conflicts != Racers-1 {
			t.Fatalf("got %d winners %v and %d conflicts, want 1 and %d", len(winners), winners, conflicts, Racers-1)
		}
		assertValue(t, s, keyA, fmt.Sprint(winners[0]), 1)
	}},
	{"racing read-modify-write loses no update", func(t *testing.T, s state.Store, _ *Clock) {
		// Every racer may lose to every other once per round, so Racers² attempts bound a
		// correct store; a store that livelocks fails instead of hanging.
		const maxAttempts = Racers * Racers
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range Racers {
			wg.Go(func() {
				<-start
				if err := increment(t.Context(), s, keyA, maxAttempts); err != nil {
					t.Errorf("racer %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		got, version, err := state.GetJSON[int](t.Context(), s, keyA)
		if err != nil {
			t.Fatalf("GetJSON: %v", err)
		}
		if got != Racers || version != Racers {
			t.Fatalf("counter: got %d at version %d, want %d at version %d", got, version, Racers, Racers)
		}
	}},
}

// increment adds one to the JSON counter at key with an optimistic-locking retry loop, the way
// callers update streaks and cooldowns.
func increment(ctx context.Context, s state.Store, key state.Key, maxAttempts int) error {
	for range maxAttempts {
		n, version, err := state.GetJSON[int](ctx, s, key)
		cond := state.Condition{IfVersion: version}
		switch {
		case errors.Is(err, state.ErrNotFound):
			cond = state.Condition{IfAbsent: true}
		case err != nil:
			return err
		}
		_, err = state.PutJSON(ctx, s, key, n+1, cond, 0, time.Time{})
		if errors.Is(err, state.ErrConflict) {
			continue
		}
		return err
	}
	return fmt.Errorf("no write succeeded in %d attempts", maxAttempts)
}

func mustPut(t *testing.T, s state.Store, it state.Item, cond state.Condition) state.Item {
	t.Helper()
	stored, err := s.Put(t.Context(), it, cond)
	if err != nil {
		t.Fatalf("Put %s: %v", it.Key, err)
	}
	return stored
}

func mustGet(t *testing.T, s state.Store, key state.Key) state.Item {
	t.Helper()
	it, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	return it
}

func assertItem(t *testing.T, what string, got, want state.Item) {
	t.Helper()
	if got.Key != want.Key || !bytes.Equal(got.Value, want.Value) || got.Version != want.Version || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("%s: got %s value %q version %d expires %s, want %s value %q version %d expires %s",
			what, got.Key, got.Value, got.Version, got.ExpiresAt, want.Key, want.Value, want.Version, want.ExpiresAt)
	}
}

func assertValue(t *testing.T, s state.Store, key state.Key, value string, version int64) {
	t.Helper()
	got := mustGet(t, s, key)
	if string(got.Value) != value || got.Version != version {
		t.Fatalf("Get %s: got value %q version %d, want %q version %d", key, got.Value, got.Version, value, version)
	}
}

func assertMissing(t *testing.T, s state.Store, key state.Key) {
	t.Helper()
	if it, err := s.Get(t.Context(), key); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Get %s: got item %q version %d, err %v; want ErrNotFound", key, it.Value, it.Version, err)
	}
}

func assertConflict(t *testing.T, err error, key state.Key, want string, got int64) {
	t.Helper()
	var ce *state.ConflictError
	if !errors.Is(err, state.ErrConflict) || !errors.As(err, &ce) {
		t.Fatalf("got err %v, want a *ConflictError", err)
	}
	if ce.Key != key || ce.Want != want || ce.Got != got {
		t.Fatalf("got conflict {%s want %q got %d}, want {%s want %q got %d}", ce.Key, ce.Want, ce.Got, key, want, got)
	}
}

func assertQuery(t *testing.T, s state.Store, pk, prefix string, wantSKs ...string) {
	t.Helper()
	items, err := s.Query(t.Context(), pk, prefix)
	if err != nil {
		t.Fatalf("Query %q %q: %v", pk, prefix, err)
	}
	gotSKs := make([]string, 0, len(items))
	for _, it := range items {
		if it.Key.PK != pk {
			t.Fatalf("Query %q %q: returned an item of pk %q", pk, prefix, it.Key.PK)
		}
		gotSKs = append(gotSKs, it.Key.SK)
	}
	if !slices.Equal(gotSKs, wantSKs) {
		t.Fatalf("Query %q %q: got SKs %q, want %q", pk, prefix, gotSKs, wantSKs)
	}
}
