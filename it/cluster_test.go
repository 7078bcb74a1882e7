//go:build integration

package it

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	osgo "github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/state"
)

// clusterName is the name the engine knows the real cluster by.
const clusterName = "it"

// admin is the test's own view of the real cluster, for set-up and load: opensearch-go's typed API,
// separate from the shardwise client under test.
type admin struct {
	api *opensearchapi.Client
	// ids maps node names (it-0, it-1, it-2, from scripts/opensearch.sh) to node ids.
	ids map[string]string
}

func newAdmin(t *testing.T) *admin {
	t.Helper()
	api, err := opensearchapi.NewClient(opensearchapi.Config{Client: osgo.Config{
		Addresses: clusterURLs,
		// Load goroutines share these connections; the default two idle ones per host would make
		// every bulk request open a new one.
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}})
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(func() {
		if err := api.Client.Close(); err != nil {
			t.Errorf("close admin client: %v", err)
		}
	})
	a := &admin{api: api, ids: map[string]string{}}
	info, err := api.Nodes.Info(t.Context(), nil)
	if err != nil {
		t.Fatalf("nodes info: %v", err)
	}
	for id, n := range info.Nodes {
		a.ids[n.Name] = id
	}
	if len(a.ids) != len(clusterURLs) {
		t.Fatalf("nodes: got %d (%v), want %d", len(a.ids), a.ids, len(clusterURLs))
	}
	return a
}

func jsonBody(t *testing.T, v any) io.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return bytes.NewReader(b)
}

// indexSpec is one index the tests create: its shard counts and, when Node is set, the node its
// copies must start on (index.routing.allocation.require._name, lifted once they are there).
type indexSpec struct {
	Name      string
	Primaries int
	Replicas  int
	Node      string
}

// testMapping indexes the text field several ways (prefixes, phrases, two more analyzers), as
// search-heavy mappings do. It makes each document cost more WRITE time for the same request bytes,
// so the hot node's queue holds seconds of work while the requests in flight stay small next to
// OpenSearch's indexing-pressure limit.
var testMapping = map[string]any{"properties": map[string]any{
	"msg": map[string]any{"type": "text", "index_prefixes": map[string]any{"min_chars": 1, "max_chars": 10}, "index_phrases": true,
		"fields": map[string]any{
			"simple":     map[string]any{"type": "text", "analyzer": "simple"},
			"whitespace": map[string]any{"type": "text", "analyzer": "whitespace"},
		}},
	"n":   map[string]any{"type": "long"},
	"tag": map[string]any{"type": "keyword"},
}}

// createIndices creates the indices with their placement filters, waits for green, then lifts the
// filters: the copies stay where they are unless OpenSearch's own balancer moves them.
func (a *admin) createIndices(t *testing.T, specs ...indexSpec) {
	t.Helper()
	ctx := t.Context()
	for _, s := range specs {
		settings := map[string]any{
			"index.number_of_shards":   s.Primaries,
			"index.number_of_replicas": s.Replicas,
		}
		if s.Node != "" {
			settings["index.routing.allocation.require._name"] = s.Node
		}
		body := jsonBody(t, map[string]any{"settings": settings, "mappings": testMapping})
		if _, err := a.api.Indices.Create(ctx, opensearchapi.IndicesCreateReq{Index: s.Name, Body: body}); err != nil {
			t.Fatalf("create index %s: %v", s.Name, err)
		}
	}
	a.waitSettled(t, 2*time.Minute)
	for _, s := range specs {
		if s.Node == "" {
			continue
		}
		body := jsonBody(t, map[string]any{"index.routing.allocation.require._name": nil})
		if _, err := a.api.Indices.Settings.Put(ctx, opensearchapi.SettingsPutReq{Indices: []string{s.Name}, Body: body}); err != nil {
			t.Fatalf("lift the placement filter of %s: %v", s.Name, err)
		}
	}
	a.waitSettled(t, 2*time.Minute)
}

func (a *admin) deleteIndices(t *testing.T, names ...string) {
	t.Helper()
	// Cleanup runs after the test's context is done.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.api.Indices.Delete(ctx, opensearchapi.IndicesDeleteReq{Indices: names,
		Params: opensearchapi.IndicesDeleteParams{IgnoreUnavailable: new(true)}}); err != nil {
		t.Errorf("delete indices %v: %v", names, err)
	}
}

// waitSettled waits for green with nothing relocating or initializing.
func (a *admin) waitSettled(t *testing.T, limit time.Duration) {
	t.Helper()
	h, err := a.api.Cluster.Health(t.Context(), &opensearchapi.ClusterHealthReq{Params: opensearchapi.ClusterHealthParams{
		WaitForStatus: "green", WaitForNoRelocatingShards: new(true), WaitForNoInitializingShards: new(true),
		WaitForNodes: fmt.Sprint(len(clusterURLs)), Timeout: limit}})
	if err != nil {
		t.Fatalf("wait for a settled green cluster: %v", err)
	}
	if h.TimedOut {
		t.Fatalf("cluster not settled within %s: %s, %d relocating, %d initializing", limit, h.Status, h.RelocatingShards, h.InitializingShards)
	}
}

// copyNodes returns, per index, the names of the nodes holding its copies, from _cat/shards.
func (a *admin) copyNodes(t *testing.T, indices ...string) map[string][]string {
	t.Helper()
	resp, err := a.api.Cat.Shards(t.Context(), &opensearchapi.CatShardsReq{Indices: indices})
	if err != nil {
		t.Fatalf("cat shards: %v", err)
	}
	out := map[string][]string{}
	for _, s := range resp.Shards {
		if s.Node != nil {
			out[s.Index] = append(out[s.Index], *s.Node)
		}
	}
	for _, nodes := range out {
		slices.Sort(nodes)
	}
	return out
}

func (a *admin) replicas(t *testing.T, index string) int {
	t.Helper()
	resp, err := a.api.Indices.Settings.Get(t.Context(), &opensearchapi.SettingsGetReq{Indices: []string{index},
		Params: opensearchapi.SettingsGetParams{FlatSettings: new(true)}})
	if err != nil {
		t.Fatalf("settings of %s: %v", index, err)
	}
	var flat map[string]string
	if err := json.Unmarshal(resp.GetIndices()[index].Settings, &flat); err != nil {
		t.Fatalf("settings of %s: %v", index, err)
	}
	var n int
	if _, err := fmt.Sscan(flat["index.number_of_replicas"], &n); err != nil {
		t.Fatalf("settings of %s: index.number_of_replicas %q: %v", index, flat["index.number_of_replicas"], err)
	}
	return n
}

// newEngine builds the engine the way cmd/shardwise/live.go does: the production client and
// cluster API over HTTP, an in-memory state store and bus, the real clock. Its logs go to the test
// log, so a CI run shows every hotspot, move and breaker check with its reason.
func newEngine(t *testing.T, cfg config.Config) (*engine.Engine, *bus.Memory) {
	t.Helper()
	cfg.Clusters = []config.Cluster{{Name: clusterName, URLs: clusterURLs, Auth: string(opensearch.AuthNone)}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	oc, err := cfg.Clusters[0].OpenSearch()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	client, err := opensearch.New(t.Context(), oc)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	conns := collect.One(collect.New(client, time.Now))
	events := &bus.Memory{}
	e := &engine.Engine{Store: state.NewMemory(time.Now), Bus: events, Clock: time.Now, Config: cfg,
		Cluster: conns.Cluster,
		Tenants: conns.Tenants,
		Log:     slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))}
	return e, events
}

// eventsOf returns the details of the published events of one type.
func eventsOf[T any](t *testing.T, events *bus.Memory, detailType string) []T {
	t.Helper()
	var out []T
	for _, r := range events.Events() {
		if r.DetailType != detailType {
			continue
		}
		var v T
		if err := json.Unmarshal(r.Detail, &v); err != nil {
			t.Fatalf("decode %s: %v", detailType, err)
		}
		out = append(out, v)
	}
	return out
}
