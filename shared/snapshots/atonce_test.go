package snapshots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSplitEncodeAtOnce checks that the first ranges are encoded at once and kept in order: the
// first range's encode waits for the last one's to start, which one after the other never does.
func TestSplitEncodeAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		budget int
		want   int // items
	}{
		{"two ranges of five", 10, 5, 2},
		{"four ranges", 30, 12, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lastStarted := make(chan struct{})
			var once sync.Once
			met := false
			var mu sync.Mutex
			encode := func(lo, hi int) ([]byte, error) {
				if lo > 0 && hi == tc.n {
					once.Do(func() { close(lastStarted) })
				}
				if lo == 0 && hi < tc.n {
					select {
					case <-lastStarted:
						mu.Lock()
						met = true
						mu.Unlock()
					case <-time.After(10 * time.Second):
					}
				}
				return bytes.Repeat([]byte{byte('a' + lo%26)}, hi-lo), nil
			}
			parts, err := splitEncode(tc.n, tc.budget, encode)
			if err != nil {
				t.Fatal(err)
			}
			if !met {
				t.Errorf("the first range's encode waited for the last one's in vain: the ranges were encoded one after the other")
			}
			var got []byte
			for _, p := range parts {
				if len(p) > tc.budget {
					t.Errorf("item of %d bytes, over %d", len(p), tc.budget)
				}
				got = append(got, p...)
			}
			want := make([]byte, 0, tc.n)
			// Encoded in order, the items spell each range's letters in turn.
			lo := 0
			for _, p := range parts {
				want = append(want, bytes.Repeat([]byte{byte('a' + lo%26)}, len(p))...)
				lo += len(p)
			}
			if !bytes.Equal(got, want) || lo != tc.n {
				t.Errorf("items %q: want %q (%d things)", got, want, tc.n)
			}
			if len(parts) < tc.want {
				t.Errorf("%d items, want at least %d", len(parts), tc.want)
			}
		})
	}
}

// TestSplitEncodeFirstError checks that the error is the first range's in order, as when the
// ranges are encoded one after the other.
func TestSplitEncodeFirstError(t *testing.T) {
	errAt := func(lo int) error { return fmt.Errorf("range from %d", lo) }
	encode := func(lo, hi int) ([]byte, error) {
		if hi-lo < 10 && lo > 0 {
			return nil, errAt(lo)
		}
		return make([]byte, hi-lo), nil
	}
	_, err := splitEncode(10, 3, encode)
	if err == nil || err.Error() != errAt(2).Error() {
		t.Fatalf("got %v, want %v", err, errAt(2))
	}
}

// TestLoadTurns checks that loads of one snapshot take turns and loads of others do not wait.
func TestLoadTurns(t *testing.T) {
	tr := turns{busy: map[string]chan struct{}{}}
	done, err := tr.turn(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tr.turn(context.Background(), "b")
	if err != nil {
		t.Fatalf("another snapshot's load waited: %v", err)
	}
	other()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.turn(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second load of a snapshot being loaded: got %v, want it to wait (context.Canceled)", err)
	}
	got := make(chan struct{})
	go func() {
		d, err := tr.turn(context.Background(), "a")
		if err == nil {
			d()
		}
		close(got)
	}()
	done()
	<-got
}
