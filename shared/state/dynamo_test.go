package state_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
	"github.com/shardwise/shardwise/shared/state/statetest"
)

// TestMain stops the moto server the Dynamo tests start when SHARDWISE_MOTO_ENDPOINT is unset.
func TestMain(m *testing.M) { dynamotest.Main(m) }

func motoClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	return dynamotest.Client(t, dynamotest.Endpoint(t))
}

func TestDynamoContract(t *testing.T) {
	client := motoClient(t)
	statetest.Run(t, func(t *testing.T, clock state.Clock) state.Store {
		return state.NewDynamo(client, dynamotest.NewTable(t, client), clock)
	})
}

// recorder passes calls through to a real client, counting them. It can also play a throttled
// DynamoDB by leaving the last request of its first withhold BatchWriteItem calls unprocessed.
type recorder struct {
	state.DynamoAPI
	withhold int
	// afterWrite, when set, runs after each BatchWriteItem call with the call's number.
	afterWrite func(n int)

	mu         sync.Mutex
	calls      map[string]int
	writeSizes []int // requests per BatchWriteItem call
}

func newRecorder(api state.DynamoAPI) *recorder {
	return &recorder{DynamoAPI: api, calls: make(map[string]int)}
}

func (r *recorder) count(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[op]++
}

func (r *recorder) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.calls)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = make(map[string]int)
	r.writeSizes = nil
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.count("GetItem")
	return r.DynamoAPI.GetItem(ctx, in, optFns...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.count("PutItem")
	return r.DynamoAPI.PutItem(ctx, in, optFns...)
}

func (r *recorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.count("DeleteItem")
	return r.DynamoAPI.DeleteItem(ctx, in, optFns...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.count("Query")
	return r.DynamoAPI.Query(ctx, in, optFns...)
}

func (r *recorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.count("BatchGetItem")
	return r.DynamoAPI.BatchGetItem(ctx, in, optFns...)
}

func (r *recorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	r.mu.Lock()
	r.calls["BatchWriteItem"]++
	withhold := r.calls["BatchWriteItem"] <= r.withhold
	for _, reqs := range in.RequestItems {
		r.writeSizes = append(r.writeSizes, len(reqs))
	}
	n := r.calls["BatchWriteItem"]
	r.mu.Unlock()
	if r.afterWrite != nil {
		defer r.afterWrite(n)
	}
	if !withhold {
		return r.DynamoAPI.BatchWriteItem(ctx, in, optFns...)
	}
	send := make(map[string][]types.WriteRequest)
	held := make(map[string][]types.WriteRequest)
	for table, reqs := range in.RequestItems {
		held[table] = reqs[len(reqs)-1:]
		if len(reqs) > 1 {
			send[table] = reqs[:len(reqs)-1]
		}
	}
	if len(send) > 0 {
		if _, err := r.DynamoAPI.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: send}, optFns...); err != nil {
			return nil, err
		}
	}
	return &dynamodb.BatchWriteItemOutput{UnprocessedItems: held}, nil
}

// chunkItems returns n items spread over the given partitions, each with a value of size bytes
// that names it.
func chunkItems(n, size int, pks ...string) []state.Item {
	items := make([]state.Item, n)
	for i := range items {
		value := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(value, fmt.Sprintf("item %03d;", i))
		items[i] = state.Item{Key: state.Key{PK: pks[i%len(pks)], SK: fmt.Sprintf("snap#node-%03d", i)}, Value: value}
	}
	return items
}

func TestDynamoQueryFollowsPages(t *testing.T) {
	client := motoClient(t)
	// 300 KiB values: three fit in one of DynamoDB's 1 MB Query pages.
	const size = 300 << 10
	tests := []struct {
		name         string
		live         int
		expired      int
		wantMinPages int
	}{
		{name: "live items over several 1 MB pages", live: 12, wantMinPages: 4},
		{name: "pages holding only expired items do not end the query", expired: 9, live: 2, wantMinPages: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := statetest.NewClock(time.Now().Truncate(time.Second))
			rec := newRecorder(client)
			s := state.NewDynamo(rec, dynamotest.NewTable(t, client), clock.Now)
			// SKs sort the expired items first, so the first pages filter down to nothing.
			items := chunkItems(tc.expired+tc.live, size, "cluster#big")
			for i := range tc.expired {
				items[i].ExpiresAt = clock.Now().Add(time.Minute)
			}
			if err := s.BatchPut(t.Context(), items); err != nil {
				t.Fatalf("BatchPut: %v", err)
			}
			clock.Advance(time.Minute)
			rec.reset()
			got, err := s.Query(t.Context(), "cluster#big", "snap#")
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			want := items[tc.expired:]
			if len(got) != len(want) {
				t.Fatalf("Query: got %d items, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Key != want[i].Key || !bytes.Equal(got[i].Value, want[i].Value) {
					t.Fatalf("Query item %d: got %s (%d bytes), want %s", i, got[i].Key, len(got[i].Value), want[i].Key)
				}
			}
			if pages := rec.counts()["Query"]; pages < tc.wantMinPages {
				t.Fatalf("Query calls: got %d, want at least %d (one per 1 MB page)", pages, tc.wantMinPages)
			}
		})
	}
}

func TestDynamoClockAheadOfServer(t *testing.T) {
	client := motoClient(t)
	key := state.Key{PK: "cluster#alpha", SK: "cooldown#logs-a"}
	// The item expires in an hour of real time, which moto (and DynamoDB's TTL) will not act on
	// during the test; the store's clock stands two hours ahead, where the item has expired.
	tests := []struct {
		name  string
		check func(t *testing.T, ahead state.Store)
	}{
		{name: "Get finds nothing", check: func(t *testing.T, ahead state.Store) {
			if it, err := ahead.Get(t.Context(), key); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("Get: got version %d err %v, want ErrNotFound", it.Version, err)
			}
		}},
		{name: "Query skips it", check: func(t *testing.T, ahead state.Store) {
			if items, err := ahead.Query(t.Context(), key.PK, ""); err != nil || len(items) != 0 {
				t.Fatalf("Query: got %d items err %v, want none", len(items), err)
			}
		}},
		{name: "IfAbsent claims it at version 1", check: func(t *testing.T, ahead state.Store) {
			if it, err := ahead.Put(t.Context(), state.Item{Key: key, Value: []byte("new")}, state.Condition{IfAbsent: true}); err != nil || it.Version != 1 {
				t.Fatalf("Put IfAbsent: got version %d err %v, want 1 nil", it.Version, err)
			}
		}},
		{name: "unconditional Put restarts at version 1", check: func(t *testing.T, ahead state.Store) {
			if it, err := ahead.Put(t.Context(), state.Item{Key: key, Value: []byte("new")}, state.Condition{}); err != nil || it.Version != 1 {
				t.Fatalf("Put: got version %d err %v, want 1 nil", it.Version, err)
			}
		}},
		{name: "BatchPut restarts at version 1", check: func(t *testing.T, ahead state.Store) {
			if err := ahead.BatchPut(t.Context(), []state.Item{{Key: key, Value: []byte("new")}}); err != nil {
				t.Fatalf("BatchPut: %v", err)
			}
			if it, err := ahead.Get(t.Context(), key); err != nil || it.Version != 1 {
				t.Fatalf("Get after BatchPut: got version %d err %v, want 1 nil", it.Version, err)
			}
		}},
		{name: "IfVersion conflicts with Got 0", check: func(t *testing.T, ahead state.Store) {
			_, err := ahead.Put(t.Context(), state.Item{Key: key, Value: []byte("new")}, state.Condition{IfVersion: 2})
			assertConflictGot(t, err, 0)
		}},
		{name: "Delete IfVersion finds nothing live to delete", check: func(t *testing.T, ahead state.Store) {
			if err := ahead.Delete(t.Context(), key, state.Condition{IfVersion: 2}); err != nil {
				t.Fatalf("Delete IfVersion: got %v, want nil: no live item, so the delete's aim holds", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := dynamotest.NewTable(t, client)
			wall := state.NewDynamo(client, table, time.Now)
			for range 2 {
				if _, err := wall.Put(t.Context(), state.Item{Key: key, Value: []byte("old"), ExpiresAt: time.Now().Add(time.Hour)}, state.Condition{}); err != nil {
					t.Fatalf("Put: %v", err)
				}
			}
			tc.check(t, state.NewDynamo(client, table, func() time.Time { return time.Now().Add(2 * time.Hour) }))
			// The server still holds the item: only the clock made it invisible.
			out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{
				TableName: aws.String(table),
				Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key.PK}, "sk": &types.AttributeValueMemberS{Value: key.SK}},
			})
			if err != nil || len(out.Item) == 0 {
				t.Fatalf("raw GetItem: got %d attributes err %v, want the item still stored", len(out.Item), err)
			}
		})
	}
}

func assertConflictGot(t *testing.T, err error, want int64) {
	t.Helper()
	var ce *state.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("got err %v, want a *ConflictError", err)
	}
	if ce.Got != want {
		t.Fatalf("ConflictError.Got: got %d, want %d", ce.Got, want)
	}
}

// TestDynamoWriteCalls checks that a conflict takes its Got from the failed write's ALL_OLD (no
// second read) and what an unconditional Put costs.
func TestDynamoWriteCalls(t *testing.T) {
	client := motoClient(t)
	key := state.Key{PK: "cluster#alpha", SK: "ledger#move-1"}
	put := func(t *testing.T, s state.Store, it state.Item) {
		t.Helper()
		if _, err := s.Put(t.Context(), it, state.Condition{}); err != nil {
			t.Fatalf("setup Put: %v", err)
		}
	}
	tests := []struct {
		name      string
		setup     func(t *testing.T, s state.Store, clock *statetest.Clock)
		act       func(t *testing.T, s state.Store) error
		wantGot   int64 // ConflictError.Got; -1 when the act must succeed
		wantCalls map[string]int
	}{
		{
			name: "IfAbsent over a live item",
			setup: func(t *testing.T, s state.Store, _ *statetest.Clock) {
				put(t, s, state.Item{Key: key})
				put(t, s, state.Item{Key: key})
			},
			act: func(t *testing.T, s state.Store) error {
				_, err := s.Put(t.Context(), state.Item{Key: key}, state.Condition{IfAbsent: true})
				return err
			},
			wantGot: 2, wantCalls: map[string]int{"PutItem": 1},
		},
		{
			name: "stale IfVersion",
			setup: func(t *testing.T, s state.Store, _ *statetest.Clock) {
				for range 3 {
					put(t, s, state.Item{Key: key})
				}
			},
			act: func(t *testing.T, s state.Store) error {
				_, err := s.Put(t.Context(), state.Item{Key: key}, state.Condition{IfVersion: 1})
				return err
			},
			wantGot: 3, wantCalls: map[string]int{"PutItem": 1},
		},
		{
			name: "IfVersion over an expired item",
			setup: func(t *testing.T, s state.Store, clock *statetest.Clock) {
				put(t, s, state.Item{Key: key, ExpiresAt: clock.Now().Add(time.Minute)})
				clock.Advance(time.Minute)
			},
			act: func(t *testing.T, s state.Store) error {
				_, err := s.Put(t.Context(), state.Item{Key: key}, state.Condition{IfVersion: 1})
				return err
			},
			wantGot: 0, wantCalls: map[string]int{"PutItem": 1},
		},
		{
			name: "stale Delete IfVersion",
			setup: func(t *testing.T, s state.Store, _ *statetest.Clock) {
				put(t, s, state.Item{Key: key})
				put(t, s, state.Item{Key: key})
			},
			act: func(t *testing.T, s state.Store) error {
				return s.Delete(t.Context(), key, state.Condition{IfVersion: 1})
			},
			wantGot: 2, wantCalls: map[string]int{"DeleteItem": 1},
		},
		{
			name:    "unconditional Put of a new key",
			setup:   func(*testing.T, state.Store, *statetest.Clock) {},
			act:     func(t *testing.T, s state.Store) error { return putVersion(t, s, key, 1) },
			wantGot: -1, wantCalls: map[string]int{"PutItem": 1},
		},
		{
			name:    "unconditional Put over a live item",
			setup:   func(t *testing.T, s state.Store, _ *statetest.Clock) { put(t, s, state.Item{Key: key}) },
			act:     func(t *testing.T, s state.Store) error { return putVersion(t, s, key, 2) },
			wantGot: -1, wantCalls: map[string]int{"PutItem": 2},
		},
		{
			name: "unconditional Put over an expired item",
			setup: func(t *testing.T, s state.Store, clock *statetest.Clock) {
				put(t, s, state.Item{Key: key})
				put(t, s, state.Item{Key: key, ExpiresAt: clock.Now().Add(time.Minute)})
				clock.Advance(time.Minute)
			},
			act:     func(t *testing.T, s state.Store) error { return putVersion(t, s, key, 1) },
			wantGot: -1, wantCalls: map[string]int{"PutItem": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := statetest.NewClock(time.Now().Truncate(time.Second))
			rec := newRecorder(client)
			s := state.NewDynamo(rec, dynamotest.NewTable(t, client), clock.Now)
			tc.setup(t, s, clock)
			rec.reset()
			err := tc.act(t, s)
			if tc.wantGot >= 0 {
				assertConflictGot(t, err, tc.wantGot)
			} else if err != nil {
				t.Fatal(err)
			}
			if got := rec.counts(); !maps.Equal(got, tc.wantCalls) {
				t.Fatalf("calls: got %v, want %v", got, tc.wantCalls)
			}
		})
	}
}

func putVersion(t *testing.T, s state.Store, key state.Key, want int64) error {
	it, err := s.Put(t.Context(), state.Item{Key: key, Value: []byte("x")}, state.Condition{})
	if err != nil {
		return err
	}
	if it.Version != want {
		return fmt.Errorf("Put: got version %d, want %d", it.Version, want)
	}
	return nil
}

func TestDynamoBatchPutPages(t *testing.T) {
	client := motoClient(t)
	tests := []struct {
		name           string
		items          int
		wantWriteSizes []int
	}{
		{name: "one full page", items: 25, wantWriteSizes: []int{25}},
		{name: "one over a page", items: 26, wantWriteSizes: []int{25, 1}},
		{name: "two partitions over three pages", items: 60, wantWriteSizes: []int{25, 25, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := statetest.NewClock(time.Now().Truncate(time.Second))
			rec := newRecorder(client)
			s := state.NewDynamo(rec, dynamotest.NewTable(t, client), clock.Now)
			items := chunkItems(tc.items, 64, "cluster#a", "cluster#b")
			// items[0] is live at version 2 and items[1] expired before the batch.
			for _, it := range []state.Item{items[0], items[0], {Key: items[1].Key, ExpiresAt: clock.Now().Add(time.Minute)}} {
				if _, err := s.Put(t.Context(), it, state.Condition{}); err != nil {
					t.Fatalf("setup Put: %v", err)
				}
			}
			clock.Advance(time.Minute)
			rec.reset()
			if err := s.BatchPut(t.Context(), items); err != nil {
				t.Fatalf("BatchPut: %v", err)
			}
			if !slices.Equal(rec.writeSizes, tc.wantWriteSizes) {
				t.Fatalf("BatchWriteItem request counts: got %v, want %v", rec.writeSizes, tc.wantWriteSizes)
			}
			for i, it := range items {
				want := int64(1)
				if i == 0 {
					want = 3
				}
				got, err := s.Get(t.Context(), it.Key)
				if err != nil || got.Version != want || !bytes.Equal(got.Value, it.Value) {
					t.Fatalf("Get %s: got version %d value %.10q err %v, want version %d value %.10q", it.Key, got.Version, got.Value, err, want, it.Value)
				}
			}
		})
	}
}

func TestDynamoBatchPutRetriesUnprocessed(t *testing.T) {
	client := motoClient(t)
	tests := []struct {
		name      string
		withhold  int
		cancelAt  int // the BatchWriteItem call after which the context is cancelled; 0: never
		wantCalls int
		wantErr   bool
	}{
		// Page one (25 items) comes back with one item unprocessed twice, then page two (5).
		{name: "unprocessed twice then written", withhold: 2, wantCalls: 4},
		// The invocation's deadline (here a cancel, counted in calls rather than wall time, so a
		// slow machine changes nothing) cuts the rounds short during the backoff after round 3.
		{name: "unprocessed until the context ends", withhold: 1 << 30, cancelAt: 3, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(client)
			rec.withhold = tc.withhold
			s := state.NewDynamo(rec, dynamotest.NewTable(t, client), nil)
			items := chunkItems(30, 16, "cluster#a")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rec.afterWrite = func(n int) {
				if n == tc.cancelAt {
					cancel()
				}
			}
			err := s.BatchPut(ctx, items)
			stored, qerr := s.Query(t.Context(), "cluster#a", "")
			if qerr != nil {
				t.Fatalf("Query: %v", qerr)
			}
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("BatchPut: %v", err)
				}
				if calls := rec.counts()["BatchWriteItem"]; calls != tc.wantCalls {
					t.Fatalf("BatchWriteItem calls: got %d, want %d", calls, tc.wantCalls)
				}
				if len(stored) != len(items) {
					t.Fatalf("stored %d items, want %d", len(stored), len(items))
				}
				return
			}
			// Whichever round the deadline cut, the items written are the batch's first ones (one
			// partition, so Query returns them in batch order) and the error names the next.
			var ie *state.ItemError
			if !errors.As(err, &ie) || !errors.Is(err, context.Canceled) {
				t.Fatalf("BatchPut: got err %v, want an *ItemError wrapping context.Canceled", err)
			}
			if calls := rec.counts()["BatchWriteItem"]; calls != tc.cancelAt {
				t.Fatalf("BatchWriteItem calls: got %d, want %d: the rounds go on after the context ended", calls, tc.cancelAt)
			}
			n := len(stored)
			if n == len(items) || ie.Key != items[n].Key {
				t.Fatalf("BatchPut: %d items stored, error names %s, want it to name the first missing one", n, ie.Key)
			}
			for i, it := range stored {
				if it.Key != items[i].Key {
					t.Fatalf("stored item %d is %s, want %s: the written items are not the batch's first", i, it.Key, items[i].Key)
				}
			}
		})
	}
}

// fakeHTTP answers every DynamoDB call with its first len(errs) error types in turn (status 400),
// then with an empty success: the SDK's retryer runs unchanged on top of it.
type fakeHTTP struct {
	errs []string

	mu       sync.Mutex
	requests int
}

func (f *fakeHTTP) Do(*http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	status, body := http.StatusOK, `{}`
	if f.requests <= len(f.errs) {
		status = http.StatusBadRequest
		body = fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected"}`, f.errs[f.requests-1])
	}
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}, nil
}

func TestDynamoRetriesThrottling(t *testing.T) {
	const throttle = "ProvisionedThroughputExceededException"
	tests := []struct {
		name         string
		errs         []string
		wantErr      string // error code the Put fails with; "" for success
		wantRequests int
	}{
		{name: "throttled twice then succeeds", errs: slices.Repeat([]string{throttle}, 2), wantRequests: 3},
		// The SDK's DynamoDB default allows 4 attempts; shardwise's retryer allows 10.
		{name: "throttled nine times then succeeds", errs: slices.Repeat([]string{throttle}, 9), wantRequests: 10},
		{name: "throttled on every attempt gives up after 10", errs: slices.Repeat([]string{throttle}, 11), wantErr: throttle, wantRequests: 10},
		{name: "validation error is not retried", errs: []string{"ValidationException"}, wantErr: "ValidationException", wantRequests: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // backoff sleeps dominate; they overlap
			fake := &fakeHTTP{errs: tc.errs}
			client := dynamodb.New(dynamodb.Options{
				Region:       dynamotest.Region,
				BaseEndpoint: aws.String("http://dynamodb.invalid"),
				Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
				HTTPClient:   fake,
			}, state.WithDynamoRetry)
			s := state.NewDynamo(client, "state", nil)
			_, err := s.Put(t.Context(), state.Item{Key: state.Key{PK: "p", SK: "s"}, Value: []byte("x")}, state.Condition{IfAbsent: true})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Put: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Put: got err %v, want %s", err, tc.wantErr)
			}
			if fake.requests != tc.wantRequests {
				t.Fatalf("HTTP requests: got %d, want %d", fake.requests, tc.wantRequests)
			}
		})
	}
}

func TestCreateTable(t *testing.T) {
	client := motoClient(t)
	rawTable := func(keys ...string) func(t *testing.T, name string) {
		return func(t *testing.T, name string) {
			in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
			for i, k := range keys {
				in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(k), AttributeType: types.ScalarAttributeTypeS})
				in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k), KeyType: []types.KeyType{types.KeyTypeHash, types.KeyTypeRange}[i]})
			}
			if _, err := client.CreateTable(t.Context(), in); err != nil {
				t.Fatalf("raw CreateTable: %v", err)
			}
		}
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, name string) // what exists under the name before CreateTable
		wantErr string
	}{
		{name: "creates a new table", setup: func(*testing.T, string) {}},
		{name: "keeps an existing state table", setup: func(t *testing.T, name string) {
			if err := dynamotest.CreateTable(t.Context(), client, name); err != nil {
				t.Fatalf("first CreateTable: %v", err)
			}
		}},
		{name: "enables ttl on a table without it", setup: rawTable("pk", "sk")},
		{name: "refuses a table with another key schema", setup: rawTable("id"), wantErr: "key schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := "shardwise-test-" + strings.ToLower(rand.Text())
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
					t.Errorf("delete table %s: %v", table, err)
				}
			})
			tc.setup(t, table)
			err := dynamotest.CreateTable(t.Context(), client, table)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("CreateTable: got err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("CreateTable: %v", err)
			}
			desc, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
			if err != nil || desc.Table.TableStatus != types.TableStatusActive {
				t.Fatalf("DescribeTable: got %+v err %v, want ACTIVE", desc, err)
			}
			ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
			if err != nil {
				t.Fatalf("DescribeTimeToLive: %v", err)
			}
			if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "expires_at" {
				t.Fatalf("TTL: got %+v, want ENABLED on expires_at", d)
			}
			s := state.NewDynamo(client, table, nil)
			key := state.Key{PK: "p", SK: "s"}
			if it, err := s.Put(t.Context(), state.Item{Key: key}, state.Condition{}); err != nil || it.Version != 1 {
				t.Fatalf("Put: got version %d err %v, want 1 nil", it.Version, err)
			}
			if err := dynamotest.CreateTable(t.Context(), client, table); err != nil {
				t.Fatalf("CreateTable again: %v", err)
			}
			if _, err := s.Get(t.Context(), key); err != nil {
				t.Fatalf("Get after CreateTable again: %v", err)
			}
		})
	}
}

func TestDynamoRejectsMalformedItems(t *testing.T) {
	client := motoClient(t)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	tests := []struct {
		name    string
		attrs   map[string]types.AttributeValue
		getOnly bool
		wantErr string
	}{
		{name: "no version", attrs: map[string]types.AttributeValue{}, wantErr: "ver"},
		{name: "version not an integer", attrs: map[string]types.AttributeValue{"ver": n("1.5")}, wantErr: "ver"},
		{name: "value not binary", attrs: map[string]types.AttributeValue{"ver": n("1"), "v": s("text")}, wantErr: "binary"},
		// Only Get: a Query's filter compares expires_at with a number, which DynamoDB evaluates
		// as false for a string, so the item never reaches the decoder.
		{name: "expiry not a number", attrs: map[string]types.AttributeValue{"ver": n("1"), "expires_at": s("soon")}, getOnly: true, wantErr: "expires_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := dynamotest.NewTable(t, client)
			key := state.Key{PK: "p", SK: "s"}
			item := maps.Clone(tc.attrs)
			item["pk"], item["sk"] = s(key.PK), s(key.SK)
			if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Fatalf("raw PutItem: %v", err)
			}
			store := state.NewDynamo(client, table, nil)
			_, err := store.Get(t.Context(), key)
			errs := map[string]error{"Get": err}
			if !tc.getOnly {
				_, errs["Query"] = store.Query(t.Context(), key.PK, "")
			}
			for op, err := range errs {
				if err == nil || errors.Is(err, state.ErrNotFound) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s: got err %v, want a decode error mentioning %q", op, err, tc.wantErr)
				}
			}
		})
	}
}

func TestNewDynamoNilClockUsesWallTime(t *testing.T) {
	client := motoClient(t)
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
			s := state.NewDynamo(client, dynamotest.NewTable(t, client), nil)
			key := state.Key{PK: "p", SK: "s"}
			if _, err := s.Put(t.Context(), state.Item{Key: key, ExpiresAt: time.Now().Add(tc.ttl)}, state.Condition{}); err != nil {
				t.Fatalf("Put: %v", err)
			}
			_, err := s.Get(t.Context(), key)
			if gotLive := err == nil; gotLive != tc.wantLive {
				t.Fatalf("Get: got live %t (err %v), want live %t", gotLive, err, tc.wantLive)
			}
		})
	}
}
