package collect_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/engine"
)

// TestConnectionsOneAPIPerCluster: every port of a cluster is the one API dialled for it, however
// many functions ask at once; a failed dial is returned as the error with no port, and the next
// use dials again.
func TestConnectionsOneAPIPerCluster(t *testing.T) {
	var mu sync.Mutex
	dials := map[string]int{}
	failOnce := map[string]bool{"flaky": true}
	errDown := errors.New("connection refused")
	c := &collect.Connections{Dial: func(name string) (*collect.API, error) {
		mu.Lock()
		defer mu.Unlock()
		dials[name]++
		if failOnce[name] {
			failOnce[name] = false
			return nil, fmt.Errorf("cluster %s: %w", name, errDown)
		}
		return collect.New(nil, nil), nil
	}}

	// Each port of each cluster, asked for concurrently.
	type got struct {
		name string
		port any
	}
	results := make(chan got, 60)
	var wg sync.WaitGroup
	for range 10 {
		for _, name := range []string{"prod", "staging"} {
			wg.Go(func() {
				p, err := c.Cluster(name)
				if err != nil {
					t.Error(err)
				}
				results <- got{name, p}
			})
			wg.Go(func() {
				p, err := c.Tenants(name)
				if err != nil {
					t.Error(err)
				}
				results <- got{name, p}
			})
			wg.Go(func() {
				p, err := c.Pushed(name)
				if err != nil {
					t.Error(err)
				}
				results <- got{name, p}
			})
		}
	}
	wg.Wait()
	close(results)
	seen := map[string]any{}
	for r := range results {
		if first, ok := seen[r.name]; ok && first != r.port {
			t.Errorf("%s: ports %p and %p, want one API", r.name, first, r.port)
		}
		seen[r.name] = r.port
	}
	if seen["prod"] == nil || seen["prod"] == seen["staging"] {
		t.Errorf("prod %p, staging %p: want an API each", seen["prod"], seen["staging"])
	}
	if dials["prod"] != 1 || dials["staging"] != 1 {
		t.Errorf("dials %v, want one per cluster", dials)
	}

	p, err := c.Tenants("flaky")
	if !errors.Is(err, errDown) || p != nil {
		t.Fatalf("failed dial: got %v, %v; want the dial's error and no port", p, err)
	}
	if p, err := c.Tenants("flaky"); err != nil || p == nil || dials["flaky"] != 2 {
		t.Errorf("after a failed dial: got %v, %v after %d dials; want a port from a second dial", p, err, dials["flaky"])
	}
}

// TestConnectionsWithoutDial: Connections with no Dial, or a Dial that returns no API, gives an
// error, not a port that panics when used.
func TestConnectionsWithoutDial(t *testing.T) {
	if p, err := (&collect.Connections{}).Cluster("prod"); !errors.Is(err, engine.ErrNotWired) || p != nil {
		t.Errorf("no Dial: got %v, %v; want ErrNotWired", p, err)
	}
	none := &collect.Connections{Dial: func(string) (*collect.API, error) { return nil, nil }}
	if p, err := none.Pushed("prod"); err == nil || p != nil {
		t.Errorf("Dial without an API: got %v, %v; want an error", p, err)
	}
}

// TestOneIsTheSameAPIForEveryName: a process that talks to one cluster hands out that API for
// every port.
func TestOneIsTheSameAPIForEveryName(t *testing.T) {
	api := collect.New(nil, nil)
	c := collect.One(api)
	cl, err1 := c.Cluster("a")
	tn, err2 := c.Tenants("b")
	if err := errors.Join(err1, err2); err != nil || cl != engine.ClusterAPI(api) || tn != engine.TenantCluster(api) {
		t.Errorf("got %p, %p (%v); want %p", cl, tn, err, api)
	}
}
