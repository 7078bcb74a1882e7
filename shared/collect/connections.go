package collect

import (
	"fmt"
	"sync"

	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
)

// Connections holds one API per cluster, dialled on first use and kept (a warm Lambda reuses it).
// Cluster, Tenants and Pushed each hand out that same API as one port the engine declares, typed
// as the port, so a composition root wires every function from one connection per cluster and the
// compiler checks that the API has each port: Cluster for ingest, detect, move and replicas
// (engine.Engine.Cluster), Tenants for sandbox (engine.Engine.Tenants), Pushed for the metrics
// webhook (engine.IngestPushed). It is safe for concurrent use.
type Connections struct {
	// Dial builds the API of a cluster. A failure is returned and not kept: the next use dials
	// again.
	Dial func(name string) (*API, error)

	mu   sync.Mutex
	apis map[string]*API
}

// One is the Connections of a process that talks to one cluster through api, whatever its name.
func One(api *API) *Connections {
	return &Connections{Dial: func(string) (*API, error) { return api, nil }}
}

// API returns the cluster's API, dialling it on first use.
func (c *Connections) API(name string) (*API, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.apis[name]; ok {
		return a, nil
	}
	if c.Dial == nil {
		return nil, fmt.Errorf("%w: collect.Connections has no Dial, so nothing connects to cluster %q", engine.ErrNotWired, name)
	}
	a, err := c.Dial(name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("cluster %s: Dial returned no API", name)
	}
	if c.apis == nil {
		c.apis = map[string]*API{}
	}
	c.apis[name] = a
	return a, nil
}

// Cluster is the port of ingest, detect, move and replicas.
func (c *Connections) Cluster(name string) (engine.ClusterAPI, error) {
	a, err := c.API(name)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Tenants is the sandbox function's port.
func (c *Connections) Tenants(name string) (engine.TenantCluster, error) {
	a, err := c.API(name)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Pushed is the metrics webhook's port.
func (c *Connections) Pushed(name string) (engine.PushReader[opensearch.NodesStats], error) {
	a, err := c.API(name)
	if err != nil {
		return nil, err
	}
	return a, nil
}
