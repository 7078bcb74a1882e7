package engine_test

import "testing"

// ingestPetabyte is 750 nodes holding 10,000 indices × 5 primaries × (1 + 1 replica) = 100,000
// copies of 20 GiB (2.7 TiB a node on 8 TiB disks), half their WRITE threads busy: 1,500 threads of
// index load, borne by both copies of each shard. The target is ingest and plan together under 10 s
// and 1 GiB.
var ingestPetabyte = ingestShape{
	name:  "petabyte",
	nodes: 750, indices: 10000, primaries: 5, replicas: 1,
	shardBytes: 20 << 30, diskBytes: 8 << 40,
	writeLoad: 1500, searchLoad: 3000,
}

// BenchmarkIngestPetabyte measures one ingest of the 750-node, 100,000-copy cluster (see
// benchIngest).
func BenchmarkIngestPetabyte(b *testing.B) { benchIngest(b, ingestPetabyte) }
