package opensearch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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

// TestDecodeLargeMatchesStd: decodeShardStats and decodeClusterState give what encoding/json
// gives for the same answer (the same copies in the same order) and fail where it fails, on the
// answers as OpenSearch and the simulator send them and on the bodies where a decoder is most
// likely to differ from encoding/json: names repeated, in another case or escaped, unknown
// names, null, invalid UTF-8, numbers of the wrong kind or past int64, bad or trailing bytes.
func TestDecodeLargeMatchesStd(t *testing.T) {
	const copyA = `{"routing":{"state":"STARTED","primary":true,"node":"n1","relocating_node":null},` +
		`"indexing":{"index_time_in_millis":5,"index_total":7},"search":{"query_time_in_millis":1,"fetch_time_in_millis":2,"query_total":3},` +
		`"store":{"size_in_bytes":1024},"docs":{"count":-0}}`
	bodies := map[string]string{
		"stats":                    `{"_shards":{"total":4,"successful":3,"failed":1},"indices":{"b":{"shards":{"1":[` + copyA + `],"0":[{"routing":{"primary":false,"node":"n2"}},` + copyA + `]}},"a":{"shards":{"10":[{}],"2":[null]}}}}`,
		"whitespace":               " {\n\t\"indices\" : { } , \"_shards\" : null }\r\n",
		"relocating":               `{"indices":{"a":{"shards":{"0":[{"routing":{"state":"RELOCATING","primary":true,"node":"n1","relocating_node":"n2"}}]}}}}`,
		"an index twice":           `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}]}},"a":{"shards":{"0":[{"routing":{"node":"n2"}}]}}}}`,
		"a shard twice":            `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}],"0":[{"routing":{"node":"n2"}}]}}}}`,
		"shards twice":             `{"indices":{"a":{"shards":{"0":[{}]},"shards":{"1":[{}]}}}}`,
		"a field twice":            `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1","node":"n2"}}]}}}}`,
		"an object twice":          `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1},"docs":{}}]}}}}`,
		"_shards twice":            `{"_shards":{"total":1},"_shards":{"failed":1}}`,
		"indices twice":            `{"indices":{"a":{"shards":{"0":[{}]}}},"indices":{}}`,
		"another case":             `{"indices":{"a":{"shards":{"0":[{"Routing":{"NODE":"n1"}}]}}}}`,
		"an unknown name":          `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1","allocation_id":{"id":[1,"x",null]}}}]}}}}`,
		"an escaped string":        `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n\u0031"}}]}}}}`,
		"an escaped name":          `{"indices":{"a":{"shards":{"0":[{"routing":{"n\u006fde":"n1"}}]}}}}`,
		"non-ASCII":                `{"indices":{"aé":{"shards":{"0":[{}]}}}}`,
		"a fraction":               `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1.0}}]}}}}`,
		"an exponent":              `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1e3}}]}}}}`,
		"int64's largest":          `{"indices":{"a":{"shards":{"0":[{"docs":{"count":9223372036854775807}}]}}}}`,
		"past int64":               `{"indices":{"a":{"shards":{"0":[{"docs":{"count":9223372036854775808}}]}}}}`,
		"a leading zero":           `{"indices":{"a":{"shards":{"0":[{"docs":{"count":01}}]}}}}`,
		"a shard key 00":           `{"indices":{"a":{"shards":{"00":[{}]}}}}`,
		"a shard key not a number": `{"indices":{"a":{"shards":{"x":[{}]}}}}`,
		"a string for a number":    `{"indices":{"a":{"shards":{"0":[{"docs":{"count":"1"}}]}}}}`,
		"a bool run on":            `{"indices":{"a":{"shards":{"0":[{"routing":{"primary":truex}}]}}}}`,
		"null indices":             `{"indices":null}`,
		"null shards":              `{"indices":{"a":{"shards":null}}}`,
		"trailing bytes":           `{"indices":{}} {}`,
		"cut short":                `{"indices":{"a":{"shards":{"0":[{}]}}}`,
		"a trailing comma":         `{"indices":{"a":{"shards":{"0":[{},]}}}}`,
		"not an object":            `[]`,
		"null":                     `null`,
		"empty":                    ``,
		"cluster state": `{"version":12,"state_uuid":"u1",` +
			`"nodes":{"n2":{"name":"b","transport_address":"10.0.0.2:9300","attributes":{"zone":"z2"}},"n1":{"name":"a","transport_address":"10.0.0.1:9300","attributes":{}}},` +
			`"metadata":{"indices":{"y":{"state":"open","settings":{"index":{"number_of_shards":"2","number_of_replicas":"1","creation_date":"1700000000000","routing":{"allocation":{"include":{"zone":"z1,z2"}}}}}},` +
			`"x":{"state":"close","settings":{"index":{"number_of_shards":"1","number_of_replicas":"0","hidden":"true"}}}}},` +
			`"routing_table":{"indices":{"y":{"shards":{"1":[{"state":"STARTED","primary":true,"searchOnly":false,"node":"n2","relocating_node":null,"unassigned_info":null},` +
			`{"state":"UNASSIGNED","primary":false,"node":null,"unassigned_info":{"reason":"NODE_LEFT"}}],"0":[{"state":"RELOCATING","primary":true,"node":"n1","relocating_node":"n2"}]}},` +
			`"x":{"shards":{"0":[]}},"z":{}}}}`,
		"a node twice":              `{"nodes":{"n1":{"name":"a"},"n1":{"name":"b"}}}`,
		"an attribute twice":        `{"nodes":{"n1":{"attributes":{"zone":"a","zone":"b"}}}}`,
		"a null attribute":          `{"nodes":{"n1":{"attributes":{"zone":null}}}}`,
		"settings twice":            `{"metadata":{"indices":{"x":{"settings":{},"settings":{"index":{"number_of_replicas":"2"}}}}}}`,
		"null settings":             `{"metadata":{"indices":{"x":{"settings":null}}}}`,
		"settings with an escape":   `{"metadata":{"indices":{"x":{"settings":{"index":{"number_of_replicas":"\u0031"}}}}}}`,
		"a version with a fraction": `{"version":1.0}`,
		"a cluster name":            `{"cluster_name":"c","version":1}`,
	}
	for _, f := range []string{"shard_stats.json", "cluster_state.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		bodies[f] = string(b)
	}
	bodies["the benchmark's answer"] = string(shardStatsBody(3000, 7))
	for i, s := range largeEdgeCases {
		bodies[fmt.Sprintf("edge case %d", i)] = s
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) { decodesAsStd(t, []byte(body)) })
	}
}

// FuzzDecodeLargeMatchesStd: decodeShardStats and decodeClusterState give what encoding/json
// gives, and fail where encoding/json fails, whatever the bytes.
func FuzzDecodeLargeMatchesStd(f *testing.F) {
	addFixtures(f, "shard_stats.json", "cluster_state.json")
	for _, s := range largeEdgeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(decodesAsStd)
}

// decodesAsStd fails t unless both answers' decodes of b give what encoding/json's do.
func decodesAsStd(t *testing.T, b []byte) {
	gotS, errS := decodeShardStats(b)
	wantS, wantErrS := decodeShardStatsWith(b, json.Unmarshal)
	sameResult(t, "shard stats", b, gotS, errS, wantS, wantErrS)
	gotC, errC := decodeClusterState(b)
	wantC, wantErrC := decodeClusterStateWith(b, json.Unmarshal)
	sameResult(t, "cluster state", b, gotC, errC, wantC, wantErrC)
}

func sameResult[T any](t *testing.T, what string, body []byte, got T, err error, want T, wantErr error) {
	t.Helper()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s of %q: error %v, encoding/json's %v", what, body, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s of %q:\n got %+v\nwant %+v", what, body, got, want)
	}
}
