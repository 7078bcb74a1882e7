//go:build integration

package it

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// bulkBody returns docs documents for a _bulk request on one index (the index is in the URL).
// Documents vary in their words and numbers so the analyzer and doc values do real work.
func bulkBody(docs int) []byte {
	var b bytes.Buffer
	for i := range docs {
		fmt.Fprintf(&b, "{\"index\":{}}\n{\"msg\":\"user%d did something with item%d at step %d\",\"n\":%d,\"tag\":\"t%d\"}\n",
			i%97, i%1013, i, i, i%17)
	}
	return b.Bytes()
}

// bulkFilter keeps only what says whether a bulk request failed: a 1,000-item answer would cost
// both OpenSearch and the load generator CPU the cluster's WRITE threads need.
var bulkFilter = []string{"errors", "items.*.error"}

// sendBulk sends one _bulk request and returns an error for a failed request or any failed item.
func (a *admin) sendBulk(ctx context.Context, index string, body []byte) error {
	resp, err := a.api.Bulk(ctx, opensearchapi.BulkReq{Index: index, Body: bytes.NewReader(body),
		Params: opensearchapi.BulkParams{FilterPath: bulkFilter}})
	if err != nil {
		return fmt.Errorf("bulk %s: %w", index, err)
	}
	if resp.Errors {
		for _, item := range resp.Items {
			for _, r := range item {
				if r.Error != nil {
					return fmt.Errorf("bulk %s: item failed: %s: %s", index, r.Error.Type, r.Error.Reason)
				}
			}
		}
		return fmt.Errorf("bulk %s: errors reported without a failed item", index)
	}
	return nil
}

// fill indexes requests × docs documents into index and refreshes it.
func (a *admin) fill(t *testing.T, index string, requests, docs int) {
	t.Helper()
	body := bulkBody(docs)
	for range requests {
		if err := a.sendBulk(t.Context(), index, body); err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	if _, err := a.api.Indices.Refresh(t.Context(), &opensearchapi.IndicesRefreshReq{Index: []string{index}}); err != nil {
		t.Fatalf("refresh %s: %v", index, err)
	}
}

// bulkLoad drives _bulk requests at one index. By default it is open-loop, like real producers:
// requests leave at the set rate whether or not the cluster keeps up, so an overloaded node builds
// a WRITE queue and a relieved one drains it. inFlight caps the requests outstanding; a request
// that would pass the cap is dropped and counted, which bounds the queue (and the test's memory)
// if the node stalls. With closedLoop, inFlight workers send back to back instead, which measures
// what the node can take.
type bulkLoad struct {
	admin      *admin
	index      string
	docs       int
	inFlight   int
	closedLoop bool

	// rate is the open loop's requests per second as float64 bits, so it can change while the
	// load runs.
	rate                  atomic.Uint64
	done, failed, dropped atomic.Int64
	mu                    sync.Mutex
	firstErr              error
}

func (l *bulkLoad) setRate(perSecond float64) { l.rate.Store(math.Float64bits(perSecond)) }

func (l *bulkLoad) perSecond() float64 { return math.Float64frombits(l.rate.Load()) }

func (l *bulkLoad) send(ctx context.Context, body []byte) {
	err := l.admin.sendBulk(ctx, l.index, body)
	switch {
	case err == nil:
		l.done.Add(1)
	case ctx.Err() != nil:
		// Stopped while in flight: not a failure of the cluster.
	default:
		l.failed.Add(1)
		l.mu.Lock()
		if l.firstErr == nil {
			l.firstErr = err
		}
		l.mu.Unlock()
	}
}

// pacing is how often the open loop releases the requests that are due: fine enough that a
// rate of tens per second leaves evenly.
const pacing = 10 * time.Millisecond

// start runs the load until the returned stop is first called; stop waits for the senders and
// fails the test if any request failed.
func (l *bulkLoad) start(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := bulkBody(l.docs)
	var wg sync.WaitGroup
	if l.closedLoop {
		for range l.inFlight {
			wg.Go(func() {
				for ctx.Err() == nil {
					l.send(ctx, body)
				}
			})
		}
	} else {
		slots := make(chan struct{}, l.inFlight)
		wg.Go(func() {
			tick := time.NewTicker(pacing)
			defer tick.Stop()
			due, last := 0.0, time.Now()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					due += l.perSecond() * now.Sub(last).Seconds()
					last = now
				}
				for ; due >= 1; due-- {
					select {
					case slots <- struct{}{}:
						wg.Go(func() {
							defer func() { <-slots }()
							l.send(ctx, body)
						})
					default:
						l.dropped.Add(1)
					}
				}
			}
		})
	}
	return sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		t.Logf("bulk load on %s: %d requests of %d documents done, %d failed, %d dropped at the in-flight cap of %d",
			l.index, l.done.Load(), l.docs, l.failed.Load(), l.dropped.Load(), l.inFlight)
		if l.firstErr != nil {
			t.Errorf("bulk load on %s: %d requests failed, the first: %v", l.index, l.failed.Load(), l.firstErr)
		}
	})
}

// capacity measures how many requests of docs documents per second, in all, the node holding the
// indices takes when they are written together: the rate the open-loop load is then set against.
// Closed loops with enough requests outstanding to keep the node's WRITE pool busy run for
// capacityWarmUp (the JIT compiles the indexing path; measured cold, the node serves a third less)
// and are measured over capacityMeasure.
func (a *admin) capacity(t *testing.T, docs int, indices ...string) float64 {
	t.Helper()
	loads := make([]*bulkLoad, len(indices))
	stops := make([]func(), len(indices))
	for i, ix := range indices {
		loads[i] = &bulkLoad{admin: a, index: ix, docs: docs, inFlight: capacityInFlight, closedLoop: true}
		stops[i] = loads[i].start(t)
	}
	done := func() int64 {
		n := int64(0)
		for _, l := range loads {
			n += l.done.Load()
		}
		return n
	}
	time.Sleep(capacityWarmUp)
	before, at := done(), time.Now()
	time.Sleep(capacityMeasure)
	rate := float64(done()-before) / time.Since(at).Seconds()
	for _, stop := range stops {
		stop()
	}
	if rate <= 0 {
		t.Fatalf("capacity of the node holding %v: no bulk request completed in %s", indices, capacityMeasure)
	}
	return rate
}

const (
	capacityInFlight = 16
	capacityWarmUp   = 10 * time.Second
	capacityMeasure  = 5 * time.Second
)

// searchLoad runs searches at one index from a few workers, back to back.
type searchLoad struct {
	admin   *admin
	index   string
	workers int

	done, failed atomic.Int64
	mu           sync.Mutex
	firstErr     error
}

// searchBody matches on the text field and aggregates a keyword: work in both the query and the
// fetch phase, as real searches do.
const searchBody = `{"size":20,"query":{"bool":{"should":[{"match":{"msg":"user1 item7 step"}},{"range":{"n":{"gte":100}}}]}},` +
	`"aggs":{"tags":{"terms":{"field":"tag","size":20}},"n":{"stats":{"field":"n"}}}}`

func (l *searchLoad) start(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range l.workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := l.admin.api.Search(ctx, &opensearchapi.SearchReq{Indices: []string{l.index}, Body: strings.NewReader(searchBody)})
				switch {
				case err == nil:
					l.done.Add(1)
				case errors.Is(ctx.Err(), context.Canceled):
				default:
					l.failed.Add(1)
					l.mu.Lock()
					if l.firstErr == nil {
						l.firstErr = err
					}
					l.mu.Unlock()
				}
			}
		})
	}
	return sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		t.Logf("search load on %s: %d searches done, %d failed", l.index, l.done.Load(), l.failed.Load())
		if l.firstErr != nil {
			t.Errorf("search load on %s: %d searches failed, the first: %v", l.index, l.failed.Load(), l.firstErr)
		}
	})
}
