//go:build integration

// Package it runs shardwise against a real three-node OpenSearch 2.19 cluster: the engine end to
// end (ingest → detect → move, replica scaling, the circuit breaker) on real bulk and search load,
// and contract tests holding the simulator to OpenSearch's response shapes. `make it` starts the
// cluster with scripts/opensearch.sh, runs these tests and stops it; then, as `make it-wlm`, it
// starts one OpenSearch 3.8 node with the workload-management plugin (scripts/opensearch-wlm.sh)
// and runs the TestWLM* tests on it. The build tag keeps them out of `go test ./...`.
package it

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// clusterURLs are the real nodes' HTTP addresses, from SHARDWISE_OPENSEARCH_URLS.
var clusterURLs []string

func TestMain(m *testing.M) {
	raw := os.Getenv("SHARDWISE_OPENSEARCH_URLS")
	if raw == "" {
		// Failing, not skipping: an integration run without a cluster has proved nothing.
		fmt.Fprintln(os.Stderr, "it: SHARDWISE_OPENSEARCH_URLS is not set; run `make it`, which starts OpenSearch, "+
			"or eval \"$(scripts/opensearch.sh start)\" first")
		os.Exit(2)
	}
	clusterURLs = strings.Split(raw, ",")
	fmt.Printf("it: OpenSearch %s, %d nodes at %s, started in %ss\n",
		os.Getenv("SHARDWISE_OPENSEARCH_VERSION"), len(clusterURLs), raw, os.Getenv("SHARDWISE_OPENSEARCH_STARTUP_SECONDS"))
	os.Exit(m.Run())
}
