package state_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
	"github.com/shardwise/shardwise/shared/state/statetest"
)

// lossyHTTP sends every request on to the server and, for the operations it is told to, throws
// the answer away and reports a connection reset instead: the write landed, the caller never
// heard so, and the SDK's retryer sends the same request again. Real DynamoDB does this to a
// client whose response times out or whose connection drops after the write committed.
type lossyHTTP struct {
	next dynamodb.HTTPClient

	op   string // the operation whose response is lost: PutItem, DeleteItem, ...
	nth  int    // which of op's responses (1-based) is lost
	mu   sync.Mutex
	sent int // requests of op sent
	lost bool
}

func (l *lossyHTTP) Do(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	resp, err := l.next.Do(req)
	if err != nil {
		return resp, err
	}
	if op != l.op {
		return resp, nil
	}
	l.mu.Lock()
	l.sent++
	lose := l.sent == l.nth
	l.lost = l.lost || lose
	l.mu.Unlock()
	if !lose {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// TestDynamoLostResponse writes through a connection that loses the response of a write that
// landed. The SDK retries it, and the retry meets the first attempt's write. Each write must
// still read as done once: a conditional write's retry is not a conflict with itself, and an
// unconditional write does not bump the version twice.
func TestDynamoLostResponse(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	key := state.Key{PK: "cluster#alpha", SK: "replicas#memory"}
	tests := []struct {
		name string
		// setup writes through a lossless store; act through the lossy one.
		setup       func(t *testing.T, s state.Store)
		lose        string // the operation whose response is lost
		nth         int    // which of its responses: the one of the write that lands
		act         func(t *testing.T, s state.Store) (state.Item, error)
		wantVersion int64 // 0: the key must be gone afterwards
	}{
		{
			name:  "IfAbsent claim",
			setup: func(*testing.T, state.Store) {},
			lose:  "PutItem", nth: 1,
			act: func(t *testing.T, s state.Store) (state.Item, error) {
				return s.Put(t.Context(), state.Item{Key: key, Value: []byte("mine")}, state.Condition{IfAbsent: true})
			},
			wantVersion: 1,
		},
		{
			name:  "IfVersion read-modify-write",
			setup: func(t *testing.T, s state.Store) { putN(t, s, key, 32) },
			lose:  "PutItem", nth: 1,
			act: func(t *testing.T, s state.Store) (state.Item, error) {
				return s.Put(t.Context(), state.Item{Key: key, Value: []byte("mine")}, state.Condition{IfVersion: 32})
			},
			wantVersion: 33,
		},
		{
			name:  "unconditional Put over a live item",
			setup: func(t *testing.T, s state.Store) { putN(t, s, key, 1) },
			// The first PutItem guesses no live item and fails; the second lands.
			lose: "PutItem", nth: 2,
			act: func(t *testing.T, s state.Store) (state.Item, error) {
				return s.Put(t.Context(), state.Item{Key: key, Value: []byte("mine")}, state.Condition{})
			},
			wantVersion: 2,
		},
		{
			name:  "unconditional Put of a new key",
			setup: func(*testing.T, state.Store) {},
			lose:  "PutItem", nth: 1,
			act: func(t *testing.T, s state.Store) (state.Item, error) {
				return s.Put(t.Context(), state.Item{Key: key, Value: []byte("mine")}, state.Condition{})
			},
			wantVersion: 1,
		},
		{
			name:  "Delete IfVersion",
			setup: func(t *testing.T, s state.Store) { putN(t, s, key, 2) },
			lose:  "DeleteItem", nth: 1,
			act: func(t *testing.T, s state.Store) (state.Item, error) {
				return state.Item{}, s.Delete(t.Context(), key, state.Condition{IfVersion: 2})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lossy := &lossyHTTP{op: tc.lose, nth: tc.nth}
			client := dynamotest.Client(t, endpoint, func(o *dynamodb.Options) {
				lossy.next = o.HTTPClient
				o.HTTPClient = lossy
			})
			table := dynamotest.NewTable(t, client)
			clock := statetest.NewClock(time.Now().Truncate(time.Second))
			tc.setup(t, state.NewDynamo(dynamotest.Client(t, endpoint), table, clock.Now))
			s := state.NewDynamo(client, table, clock.Now)

			stored, err := tc.act(t, s)
			if err != nil {
				t.Fatalf("got err %v, want the write to succeed: its first attempt landed", err)
			}
			if !lossy.lost || lossy.sent <= tc.nth {
				t.Fatalf("%s: %d sent, response %d lost %v: the test lost no landed write's response, or the SDK did not retry", tc.lose, lossy.sent, tc.nth, lossy.lost)
			}
			got, gerr := s.Get(t.Context(), key)
			if tc.wantVersion == 0 {
				if !errors.Is(gerr, state.ErrNotFound) {
					t.Fatalf("Get after delete: got %v version %d, want ErrNotFound", gerr, got.Version)
				}
				return
			}
			if gerr != nil {
				t.Fatalf("Get: %v", gerr)
			}
			if got.Version != tc.wantVersion || !bytes.Equal(got.Value, []byte("mine")) {
				t.Fatalf("stored: got version %d value %q, want version %d value %q", got.Version, got.Value, tc.wantVersion, "mine")
			}
			if stored.Version != tc.wantVersion {
				t.Fatalf("Put returned version %d, want %d", stored.Version, tc.wantVersion)
			}
		})
	}
}

// putN writes key unconditionally until it is at version n.
func putN(t *testing.T, s state.Store, key state.Key, n int64) {
	t.Helper()
	for range n {
		if _, err := s.Put(t.Context(), state.Item{Key: key, Value: []byte("theirs")}, state.Condition{}); err != nil {
			t.Fatalf("setup Put: %v", err)
		}
	}
}
