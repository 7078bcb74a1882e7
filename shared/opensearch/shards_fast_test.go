package opensearch

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeShardStatsPlain: decodeShardStatsPlain takes the plain form of the answer and gives
// exactly what the general decode gives, copies in the same order; anything outside the plain
// form, where a careless reader would decode otherwise than encoding/json, it leaves to the
// general decode. Each refused body fails this test if its check is taken out of the reader.
func TestDecodeShardStatsPlain(t *testing.T) {
	const copyA = `{"routing":{"state":"STARTED","primary":true,"node":"n1","relocating_node":null},` +
		`"indexing":{"index_time_in_millis":5,"index_total":7},"search":{"query_time_in_millis":1,"fetch_time_in_millis":2,"query_total":3},` +
		`"store":{"size_in_bytes":1024},"docs":{"count":-0}}`
	for _, tt := range []struct {
		name  string
		body  string
		plain bool
	}{
		{"plain", `{"_shards":{"total":4,"successful":3,"failed":1},"indices":{"b":{"shards":{"1":[` + copyA + `],"0":[{"routing":{"primary":false,"node":"n2"}},` + copyA + `]}},"a":{"shards":{"10":[{}],"2":[null]}}}}`, true},
		{"whitespace and an empty answer", " {\n\t\"indices\" : { } , \"_shards\" : null }\r\n", true},
		{"relocating", `{"indices":{"a":{"shards":{"0":[{"routing":{"state":"RELOCATING","primary":true,"node":"n1","relocating_node":"n2"}}]}}}}`, true},
		{"an index twice", `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}]}},"a":{"shards":{"0":[{"routing":{"node":"n2"}}]}}}}`, false},
		{"a shard twice", `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1"}}],"0":[{"routing":{"node":"n2"}}]}}}}`, false},
		{"shards twice", `{"indices":{"a":{"shards":{"0":[{}]},"shards":{"1":[{}]}}}}`, false},
		{"a field twice", `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1","node":"n2"}}]}}}}`, false},
		{"an object twice", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1},"docs":{}}]}}}}`, false},
		{"a count twice", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1,"count":2}}]}}}}`, false},
		{"_shards twice", `{"_shards":{"total":1},"_shards":{"failed":1}}`, false},
		{"a total twice", `{"_shards":{"total":1,"total":2}}`, false},
		{"indices twice", `{"indices":{"a":{"shards":{"0":[{}]}}},"indices":{}}`, false},
		{"a name in another case", `{"indices":{"a":{"shards":{"0":[{"Routing":{"node":"n1"}}]}}}}`, false},
		{"an unknown name", `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n1","allocation_id":"x"}}]}}}}`, false},
		{"an escaped string", `{"indices":{"a":{"shards":{"0":[{"routing":{"node":"n\u0031"}}]}}}}`, false},
		{"an escaped name", `{"indices":{"a":{"shards":{"0":[{"routing":{"n\u006fde":"n1"}}]}}}}`, false},
		{"non-ASCII", `{"indices":{"aé":{"shards":{"0":[{}]}}}}`, false},
		{"a fraction", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1.0}}]}}}}`, false},
		{"an exponent", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1e3}}]}}}}`, false},
		{"19 digits", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":9223372036854775807}}]}}}}`, false},
		{"a leading zero", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":01}}]}}}}`, false},
		{"a shard key with a leading zero", `{"indices":{"a":{"shards":{"00":[{}]}}}}`, false},
		{"a shard key not a number", `{"indices":{"a":{"shards":{"x":[{}]}}}}`, false},
		{"a string for a number", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":"1"}}]}}}}`, false},
		{"a bool run on", `{"indices":{"a":{"shards":{"0":[{"routing":{"primary":truex}}]}}}}`, false},
		{"a number run on", `{"indices":{"a":{"shards":{"0":[{"docs":{"count":1x}}]}}}}`, false},
		{"null indices", `{"indices":null}`, false},
		{"null shards", `{"indices":{"a":{"shards":null}}}`, false},
		{"trailing bytes", `{"indices":{}} {}`, false},
		{"cut short", `{"indices":{"a":{"shards":{"0":[{}]}}}`, false},
		{"a trailing comma", `{"indices":{"a":{"shards":{"0":[{},]}}}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeShardStatsPlain([]byte(tt.body))
			if ok != tt.plain {
				t.Fatalf("plain = %v, want %v", ok, tt.plain)
			}
			want, err := decodeShardStatsWith([]byte(tt.body), unmarshalLarge)
			if ok {
				if err != nil {
					t.Fatalf("the general decode failed where the plain one did not: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("plain decode\n got %+v\nwant %+v", got, want)
				}
			}
			// Whichever way it went, decodeShardStats gives what encoding/json gives.
			all, allErr := decodeShardStats([]byte(tt.body))
			std, stdErr := decodeShardStatsWith([]byte(tt.body), json.Unmarshal)
			if (allErr == nil) != (stdErr == nil) || (allErr == nil && !reflect.DeepEqual(all, std)) {
				t.Fatalf("decodeShardStats = %+v, %v; encoding/json's %+v, %v", all, allErr, std, stdErr)
			}
		})
	}
}

// TestDecodeShardStatsPlainBench: the benchmark's answer, in the form the simulator and
// OpenSearch give it, takes the plain decode and decodes as the general decode does.
func TestDecodeShardStatsPlainBench(t *testing.T) {
	body := shardStatsBody(3000, 7)
	got, ok := decodeShardStatsPlain(body)
	if !ok {
		t.Fatal("the benchmark's answer is not plain")
	}
	want, err := decodeShardStatsWith(body, unmarshalLarge)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("plain decode differs from the general one (err %v)", err)
	}
}
