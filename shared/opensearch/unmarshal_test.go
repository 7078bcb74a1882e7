package opensearch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// largeEdgeCases are bodies where a decoder other than encoding/json is most likely to differ:
// names in another case, duplicate keys, nulls, escapes, invalid UTF-8, numbers of the wrong
// kind, and trailing bytes.
var largeEdgeCases = []string{
	`{"indices":{"a":{"shards":{"0":[{"ROUTING":{"State":"STARTED","PRIMARY":true,"node":"n1"},"Indexing":{"INDEX_TOTAL":3}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"state":"STARTED","node":"n1","node":"n2"}}]}},"a":{"shards":{"1":[{}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"node":null,"relocating_node":null},"store":null,"docs":{"count":null}}]}}}}`,
	`{"indices":{"a\u00e9\"b":{"shards":{"0":[{"routing":{"node":"n\ud83d\ude00"}}]}}}}`,
	"{\"indices\":{\"a\xff\":{\"shards\":{\"0\":[{\"routing\":{\"node\":\"n\xfe1\"}}]}}}}",
	`{"indices":{"a":{"shards":{"0":[{"store":{"size_in_bytes":1.5}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"store":{"size_in_bytes":1e3}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"store":{"size_in_bytes":99999999999999999999}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"store":{"size_in_bytes":"5"}}]}}}}`,
	`{"indices":{"a":{"shards":{"x":[{}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[]}}}} trailing`,
	`{"indices":{"a":{"shards":{"0":[{}]}}}}{}`,
	`{"_shards":{"total":-1,"successful":2,"failed":0.0},"indices":{}}`,
	`{"nodes":{"n1":{"name":"a","NAME":"b","attributes":{"zone":"z","zone":"y"}}},"metadata":{"indices":{"a":{"state":"open","settings":{"index":{"number_of_replicas":"1"}}}}}}`,
	`{"routing_table":{"indices":{"a":{"shards":{"0":[{"state":"STARTED","primary":true,"node":"n1","searchOnly":true,"unassigned_info":null}]}}}}}`,
	`{"routing_table":{"indices":{"a":{"shards":{"0":[{"state":"UNASSIGNED","primary":false,"node":null,"unassigned_info":{"reason":"NODE_LEFT"}}]}}}}}`,
	`{"version":1.0,"state_uuid":null}`,
	`{"metadata":{"indices":{"a":{"settings":"not an object"}}}}`,
	// Inside a copy: names escaped or folded, null copies, duplicate objects that merge, values of
	// the wrong kind, integers at and past int64's bounds, duplicate indices.
	`{"indices":{"a":{"shards":{"0":[{"\u0072outing":{"\u017ftate":"STARTED","Primary":true,"n\u006fde":"n\u00e9"}},null,{}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"},"docs":{"count":7},"routing":{"state":"RELOCATING"},"docs":{"count":8,"extra":[1,{"a":null}]}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":[]}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":5}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"primary":"true"}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"node":5}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"docs":{"count":-0},"store":{"size_in_bytes":9223372036854775807},"indexing":{"index_total":-9223372036854775808}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"indexing":{"index_total":9223372036854775808}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"indexing":{"index_total":-9223372036854775809}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"search":{"query_total":true}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}]}},"a":{"shards":{"0":[{"routing":{"node":"n2"}}]}}}}`,
	`{"indices":{"a":{"shards":{"0":[5]}}}}`,
	`{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}]}}}}`,
	`{"routing_table":{"indices":{"a":{"shards":{"0":[{"state":"UNASSIGNED","SEARCHONLY":true,"unassigned_info":{"reason":"NODE_LEFT","reason":null,"at":"x"}},null]}}}}}`,
	`{"routing_table":{"indices":{"a":{"shards":{"0":[{"unassigned_info":[]}]}}}}}`,
	`{"routing_table":{"indices":{"a":{"shards":{"0":[{"searchOnly":"yes"}]}}}}}`,
	"{\"routing_table\":{\"indices\":{\"a\":{\"shards\":{\"0\":[{\"node\":\"n\xff\",\"st\xffate\":\"X\"}]}}}}}",
}

// FuzzDecodeLargeMatchesStd: decoding _stats?level=shards and _cluster/state with unmarshalLarge
// gives what encoding/json gives, and fails where encoding/json fails.
func FuzzDecodeLargeMatchesStd(f *testing.F) {
	addFixtures(f, "shard_stats.json", "cluster_state.json")
	for _, s := range largeEdgeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gotS, errS := decodeShardStatsWith(b, unmarshalLarge)
		wantS, wantErrS := decodeShardStatsWith(b, json.Unmarshal)
		if plain, ok := decodeShardStatsPlain(b); ok {
			// The plain decode gives the general decode's copies in the same order.
			if errS != nil || !reflect.DeepEqual(plain, gotS) {
				t.Fatalf("plain decode of %q:\n got %+v\nwant %+v, %v", b, plain, gotS, errS)
			}
		}
		sameResult(t, "shard stats", b, gotS, errS, wantS, wantErrS, func(s *ShardStats) {
			slices.SortFunc(s.Copies, func(x, y ShardCopyStats) int { return cmp.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		})
		gotC, errC := decodeClusterStateWith(b, unmarshalLarge)
		wantC, wantErrC := decodeClusterStateWith(b, json.Unmarshal)
		sameResult(t, "cluster state", b, gotC, errC, wantC, wantErrC, func(*ClusterState) {})
		if w, ok := plainClusterState(b); ok {
			// The plain read gives what the general decode gives.
			var general clusterStateWire
			if err := unmarshalLarge(b, &general); err != nil {
				t.Fatalf("plain cluster state of %q read, the general decode failed: %v", b, err)
			}
			sameWire(t, b, w, general)
		}
		gotP, errP := decodeClusterState(b)
		sameResult(t, "cluster state (plain or general)", b, gotP, errP, wantC, wantErrC, func(*ClusterState) {})
	})
}

func sameResult[T any](t *testing.T, what string, body []byte, got T, err error, want T, wantErr error, norm func(*T)) {
	t.Helper()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s of %q: error %v, encoding/json's %v", what, body, err, wantErr)
	}
	if err != nil {
		return
	}
	norm(&got)
	norm(&want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s of %q:\n got %+v\nwant %+v", what, body, got, want)
	}
}
