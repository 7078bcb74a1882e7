package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestEncodeFilteredMatchesApply holds the streaming filter to the tree filter: the same bytes for
// every filter, on an answer large enough that output is flushed between values that are kept and
// keys that are taken back.
func TestEncodeFilteredMatchesApply(t *testing.T) {
	var indices Object
	for i := range 3000 {
		var shards Object
		for s := range 3 {
			var copies []any
			for c := range 2 {
				copies = append(copies, LazyObject(func() Object {
					return Object{
						{"routing", Object{{"state", "STARTED"}, {"primary", c == 0}, {"node", fmt.Sprintf("node-%d", (i+s+c)%7)}, {"relocating_node", nil}}},
						{"docs", Object{{"count", i * s}, {"deleted", 0}}},
						{"store", Object{{"size_in_bytes", int64(i) << 20}, {"reserved_in_bytes", 0}}},
						{"padding", strings.Repeat("x", i%50)},
					}
				}))
			}
			shards = append(shards, Field{fmt.Sprint(s), copies})
		}
		indices = append(indices, Field{fmt.Sprintf("logs-%04d", i), Object{{"uuid", "u"}, {"shards", shards}}})
	}
	doc := Object{{"_shards", Object{{"total", 18000}, {"failed", 0}}}, {"indices", indices}}
	filters := []struct{ name, filter string }{
		{"none", ""},
		{"the client's shard stats", "_shards.total,_shards.failed,indices.*.shards.*.routing.state,indices.*.shards.*.routing.node,indices.*.shards.*.docs.count,indices.*.shards.*.store.size_in_bytes"},
		{"one index in the middle", "indices.logs-1500.shards.*.routing.node"},
		{"the last index only", "indices.logs-2999.uuid"},
		{"a leaf that never appears", "indices.*.shards.*.routing.nope"},
		{"nothing", "nope"},
		{"sparse, by value shape", "indices.logs-*5.shards.1.docs"},
		{"double star", "**.primary"},
		{"exclusions only", "-indices.*.shards.*.padding,-indices.*.uuid"},
		{"exclusions and inclusions", "indices.*.shards.*.docs,-indices.*.shards.*.docs.deleted"},
	}
	for _, tc := range filters {
		t.Run(tc.name, func(t *testing.T) {
			fp := ParseFilterPath(tc.filter)
			want, err := AppendJSON(nil, fp.apply(doc))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := encodeFiltered(&got, doc, fp); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("filter_path=%q: got %d bytes, want %d; first difference at %d", tc.filter, got.Len(), len(want), firstDiff(got.Bytes(), want))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
