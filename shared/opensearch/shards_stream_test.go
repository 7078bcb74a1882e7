package opensearch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestStreamShardStatsMatches: streamShardStats takes the answers OpenSearch and the simulator
// give, and gives for them what the general decode gives with encoding/json; any body it does not
// take, decodeShardStats decodes the general way, so it gives what encoding/json gives, or fails
// where encoding/json fails.
func TestStreamShardStatsMatches(t *testing.T) {
	const copyA = `{"routing":{"state":"STARTED","primary":true,"node":"n1","relocating_node":null},` +
		`"indexing":{"index_time_in_millis":5,"index_total":7},"search":{"query_time_in_millis":1,"fetch_time_in_millis":2,"query_total":3},` +
		`"store":{"size_in_bytes":1024},"docs":{"count":-0}}`
	fixture, err := os.ReadFile(filepath.Join("testdata", "shard_stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body string
		// streamed is whether streamShardStats takes the body rather than leave it to the general
		// decode.
		streamed bool
		wantErr  bool
	}{
		{name: "the OpenSearch fixture, every metric", body: string(fixture), streamed: true},
		{name: "the benchmark's answer", body: string(shardStatsBody(3000, 7)), streamed: true},
		{name: "indices and shards out of order", body: `{"_shards":{"total":4,"successful":3,"failed":1},"indices":{"b":{"shards":{"1":[` + copyA + `],"0":[{"routing":{"primary":false,"node":"n2"}},` + copyA + `]}},"a":{"shards":{"10":[{}],"2":[null],"9":[]}}}}`, streamed: true},
		{name: "copies within a shard out of order", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"primary":false,"node":"n2"}},{"routing":{"primary":false,"node":"n1"}},{"routing":{"primary":true,"node":"n3"}}]}}}}`, streamed: true},
		{name: "relocating", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"state":"RELOCATING","primary":true,"node":"n1","relocating_node":"n2"}}]}}}}`, streamed: true},
		{name: "nulls", body: `{"_shards":null,"indices":{"a":{"shards":{"0":[null,{"routing":null,"store":{"size_in_bytes":null},"docs":null}],"1":null}},"b":null,"c":{"shards":null}}}`, streamed: true},
		{name: "null indices", body: `{"indices":null}`, streamed: true},
		{name: "no indices", body: `{"_shards":{"total":0,"successful":0,"failed":0}}`, streamed: true},
		{name: "empty indices", body: `{"indices":{}}`, streamed: true},
		{name: "whitespace", body: " {\n\t\"indices\" : { } , \"_shards\" : null }\r\n", streamed: true},
		{name: "unknown names", body: `{"_all":{"primaries":{}},"indices":{"a":{"uuid":"u","primaries":{"docs":{"count":1}},"shards":{"0":[{"routing":{"node":"n1","allocation_id":{"id":[1,"x",null]}},"merges":{"total":1},"docs":{"count":2,"deleted":1}}]}}}}`, streamed: true},
		{name: "escaped strings and names", body: `{"indices":{"a\u00e9\"b":{"shards":{"0":[{"routing":{"node":"n\u0031","n\u006fde_x":1,"state":"S\ud83d\ude00"}}]}}}}`, streamed: true},
		{name: "an escaped name that is a field", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"n\u006fde":"n1"}}]}}}}`, streamed: true},
		{name: "int64's bounds", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":9223372036854775807},"indexing":{"index_total":-9223372036854775808}}]}}}}`},
		{name: "eighteen digits", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":999999999999999999},"indexing":{"index_total":-999999999999999999}}]}}}}`, streamed: true},

		// Left to the general decode.
		{name: "a name in another case", body: `{"indices":{"a":{"shards":{"0":[{"Routing":{"NODE":"n1"}}]}}}}`},
		{name: "a field name in another case", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"NODE":"n1"}}]}}}}`},
		{name: "a name folded past ASCII", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"\u017ftate":"STARTED"}}]}}}}`},
		{name: "a name without its underscore", body: `{"indices":{"a":{"shards":{"0":[{"indexing":{"indextotal":3}}]}}}}`},
		{name: "_shards in another case", body: `{"_SHARDS":{"total":1}}`},
		{name: "a field twice", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1","node":"n2"}}]}}}}`},
		{name: "an object twice", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1},"docs":{}}]}}}}`},
		{name: "an index twice", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}]}},"a":{"shards":{"0":[{"routing":{"node":"n2"}}]}}}}`},
		{name: "a shard twice", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}],"0":[{"routing":{"node":"n2"}}]}}}}`},
		{name: "shards twice", body: `{"indices":{"a":{"shards":{"0":[{}]},"shards":{"1":[{}]}}}}`},
		{name: "indices twice", body: `{"indices":{"a":{"shards":{"0":[{}]}}},"indices":{}}`},
		{name: "a shard key 00", body: `{"indices":{"a":{"shards":{"00":[{}]}}}}`},
		{name: "invalid UTF-8", body: "{\"indices\":{\"a\xff\":{\"shards\":{\"0\":[{\"routing\":{\"node\":\"n\xfe1\"}}]}}}}"},
		{name: "a top-level null", body: `null`},
		{name: "past int64", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":9223372036854775808}}]}}}}`, wantErr: true},
		{name: "a fraction", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1.0}}]}}}}`, wantErr: true},
		{name: "an exponent", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1e3}}]}}}}`, wantErr: true},
		{name: "a string for a number", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":"1"}}]}}}}`, wantErr: true},
		{name: "a number for a string", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"node":5}}]}}}}`, wantErr: true},
		{name: "a string for a bool", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"primary":"true"}}]}}}}`, wantErr: true},
		{name: "a list for an object", body: `{"indices":{"a":{"shards":{"0":[{"routing":[]}]}}}}`, wantErr: true},
		{name: "a fraction in _shards", body: `{"_shards":{"total":-1,"successful":2,"failed":0.0},"indices":{}}`, wantErr: true},
		{name: "a shard key not a number", body: `{"indices":{"a":{"shards":{"x":[{}]}}}}`, wantErr: true},
		{name: "a negative shard key", body: `{"indices":{"a":{"shards":{"-1":[{}]}}}}`, wantErr: true},
		{name: "a leading zero", body: `{"indices":{"a":{"shards":{"0":[{"docs":{"count":01}}]}}}}`, wantErr: true},
		{name: "a bool run on", body: `{"indices":{"a":{"shards":{"0":[{"routing":{"primary":truex}}]}}}}`, wantErr: true},
		{name: "trailing bytes", body: `{"indices":{}} {}`, wantErr: true},
		{name: "trailing text", body: `{"indices":{"a":{"shards":{"0":[]}}}} trailing`, wantErr: true},
		{name: "cut short", body: `{"indices":{"a":{"shards":{"0":[{}]}}}`, wantErr: true},
		{name: "a trailing comma", body: `{"indices":{"a":{"shards":{"0":[{},]}}}}`, wantErr: true},
		{name: "not an object", body: `[]`, wantErr: true},
		{name: "empty", body: ``, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			want, wantErr := decodeShardStatsWith(body, json.Unmarshal)
			if (wantErr != nil) != tc.wantErr {
				t.Fatalf("encoding/json's error %v, the case says error %t", wantErr, tc.wantErr)
			}
			streamed, ok := streamShardStats(body)
			if ok != tc.streamed {
				t.Fatalf("streamed %t, want %t", ok, tc.streamed)
			}
			if ok && !reflect.DeepEqual(streamed, want) {
				t.Fatalf("streamed:\n got %+v\nwant %+v", streamed, want)
			}
			got, err := decodeShardStats(body)
			sameResult(t, "shard stats", body, got, err, want, wantErr)
		})
	}
}

// TestStreamShardStatsInterns: the streamed copies share one string per node ID and state, as
// the general decode's do, so 30,000 copies hold a few dozen strings.
func TestStreamShardStatsInterns(t *testing.T) {
	got, ok := streamShardStats(shardStatsBody(100, 3))
	if !ok {
		t.Fatal("the benchmark's answer was not streamed")
	}
	ids := map[string]*byte{}
	for _, c := range got.Copies {
		p := unsafe.StringData(c.Node)
		if q, seen := ids[c.Node]; seen && q != p {
			t.Fatalf("node %q held twice", c.Node)
		}
		ids[c.Node] = p
	}
	if len(ids) != 3 || !strings.HasPrefix(got.Copies[0].Node, "node-id-") {
		t.Fatalf("got %d node IDs (%q…), want 3", len(ids), got.Copies[0].Node)
	}
}
