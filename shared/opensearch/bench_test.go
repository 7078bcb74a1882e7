package opensearch

import (
	"fmt"
	"strings"
	"testing"
)

// shardStatsBody builds a filtered _stats?level=shards body for copies shard copies over the
// given nodes: 2 copies per shard, 5 shards per index.
func shardStatsBody(copies, nodes int) []byte {
	const shardsPerIndex, copiesPerShard = 5, 2
	var b strings.Builder
	b.WriteString(`{"_shards":{"total":`)
	fmt.Fprintf(&b, "%d,\"successful\":%d,\"failed\":0},\"indices\":{", copies, copies)
	indices := copies / (shardsPerIndex * copiesPerShard)
	n := 0
	for i := range indices {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"logs-%05d":{"shards":{`, i)
		for s := range shardsPerIndex {
			if s > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d":[`, s)
			for c := range copiesPerShard {
				if c > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"routing":{"state":"STARTED","primary":%t,"node":"node-id-%016d","relocating_node":null},`+
					`"indexing":{"index_time_in_millis":%d,"index_total":%d},`+
					`"search":{"query_time_in_millis":%d,"fetch_time_in_millis":%d,"query_total":%d},`+
					`"store":{"size_in_bytes":%d},"docs":{"count":%d}}`,
					c == 0, n%nodes, 1000000+n, 500000+n, 20000+n, 4000+n, 9000+n, 1073741824+n, 100000+n)
				n++
			}
			b.WriteByte(']')
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// BenchmarkDecodeShardStats30k decodes the stats of a 30,000-shard-copy cluster on 100 nodes.
func BenchmarkDecodeShardStats30k(b *testing.B) {
	body := shardStatsBody(30000, 100)
	got, err := decodeShardStats(body)
	if err != nil {
		b.Fatal(err)
	}
	if len(got.Copies) != 30000 {
		b.Fatalf("decoded %d copies, want 30000", len(got.Copies))
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeShardStats(body); err != nil {
			b.Fatal(err)
		}
	}
}
