package opensearch

import (
	"encoding/json"
	"reflect"
	"testing"
)

// sameWire fails t unless the plain read and the general decode of body agree.
func sameWire(t *testing.T, body []byte, plain, general clusterStateWire) {
	t.Helper()
	if !reflect.DeepEqual(plain, general) {
		t.Fatalf("plain cluster state of %q:\n got %+v\nwant %+v", body, plain, general)
	}
}

// TestPlainClusterState: plainClusterState reads the plain form of the cluster state answer into
// what the general decode gives, and leaves anything else to it; decodeClusterState gives what
// encoding/json gives either way. Each refused body fails this test if its check is taken out.
func TestPlainClusterState(t *testing.T) {
	const plain = `{"version":12,"state_uuid":"u1",` +
		`"nodes":{"n2":{"name":"b","transport_address":"10.0.0.2:9300","attributes":{"zone":"z2"}},"n1":{"name":"a","transport_address":"10.0.0.1:9300","attributes":{}}},` +
		`"metadata":{"indices":{"y":{"state":"open","settings":{"index":{"number_of_shards":"2","number_of_replicas":"1","creation_date":"1700000000000","routing":{"allocation":{"include":{"zone":"z1,z2"}}}}}},` +
		`"x":{"state":"close","settings":{"index":{"number_of_shards":"1","number_of_replicas":"0","hidden":"true","n":[1,-2.5e3,true,null,{}]}}}}},` +
		`"routing_table":{"indices":{"y":{"shards":{"1":[{"state":"STARTED","primary":true,"searchOnly":false,"node":"n2","relocating_node":null,"unassigned_info":null},` +
		`{"state":"UNASSIGNED","primary":false,"node":null,"unassigned_info":{"reason":"NODE_LEFT"}}],"0":[{"state":"RELOCATING","primary":true,"node":"n1","relocating_node":"n2"}]}},` +
		`"x":{"shards":{"0":[]}},"z":{}}}}`
	for _, tt := range []struct {
		name  string
		body  string
		plain bool
	}{
		{"plain", plain, true},
		{"empty", `{}`, true},
		{"whitespace", " { \"version\" : 1 ,\n\"nodes\" : { } }\t", true},
		{"a node twice", `{"nodes":{"n1":{"name":"a"},"n1":{"name":"b"}}}`, false},
		{"an attribute twice", `{"nodes":{"n1":{"attributes":{"zone":"a","zone":"b"}}}}`, false},
		{"a null attribute", `{"nodes":{"n1":{"attributes":{"zone":null}}}}`, false},
		{"null attributes", `{"nodes":{"n1":{"attributes":null}}}`, false},
		{"a name twice", `{"nodes":{"n1":{"name":"a","name":"b"}}}`, false},
		{"an index twice in the metadata", `{"metadata":{"indices":{"x":{"state":"open"},"x":{"state":"close"}}}}`, false},
		{"settings twice", `{"metadata":{"indices":{"x":{"settings":{},"settings":{"index":{}}}}}}`, false},
		{"null settings", `{"metadata":{"indices":{"x":{"settings":null}}}}`, false},
		{"settings with an escape", `{"metadata":{"indices":{"x":{"settings":{"index":{"number_of_replicas":"\u0031"}}}}}}`, false},
		{"settings not JSON", `{"metadata":{"indices":{"x":{"settings":{"index":01}}}}}`, false},
		{"settings cut short", `{"metadata":{"indices":{"x":{"settings":{"index":1.}}}}}`, false},
		{"an index twice in the routing table", `{"routing_table":{"indices":{"x":{"shards":{"0":[]}},"x":{"shards":{"1":[]}}}}}`, false},
		{"a shard twice", `{"routing_table":{"indices":{"x":{"shards":{"0":[{"node":"a"}],"0":[{"node":"b"}]}}}}}`, false},
		{"a copy's field twice", `{"routing_table":{"indices":{"x":{"shards":{"0":[{"node":"a","node":"b"}]}}}}}`, false},
		{"a reason twice", `{"routing_table":{"indices":{"x":{"shards":{"0":[{"unassigned_info":{"reason":"a","reason":"b"}}]}}}}}`, false},
		{"another case", `{"routing_table":{"indices":{"x":{"shards":{"0":[{"Node":"a"}]}}}}}`, false},
		{"an unknown name", `{"cluster_name":"c","version":1}`, false},
		{"version twice", `{"version":1,"version":2}`, false},
		{"a version with a fraction", `{"version":1.0}`, false},
		{"non-ASCII", `{"nodes":{"n1":{"name":"é"}}}`, false},
		{"trailing bytes", `{"version":1}x`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := plainClusterState([]byte(tt.body))
			if ok != tt.plain {
				t.Fatalf("plain = %v, want %v", ok, tt.plain)
			}
			if ok {
				var general clusterStateWire
				if err := unmarshalLarge([]byte(tt.body), &general); err != nil {
					t.Fatalf("the general decode failed where the plain one did not: %v", err)
				}
				sameWire(t, []byte(tt.body), w, general)
			}
			got, gotErr := decodeClusterState([]byte(tt.body))
			want, wantErr := decodeClusterStateWith([]byte(tt.body), json.Unmarshal)
			if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
				t.Fatalf("decodeClusterState = %+v, %v; encoding/json's %+v, %v", got, gotErr, want, wantErr)
			}
		})
	}
}
