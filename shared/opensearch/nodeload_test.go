package opensearch

import "testing"

func TestDecodeNodeLoads(t *testing.T) {
	stats := []byte(`{"_nodes":{"total":3,"successful":2,"failed":1,"failures":[{"type":"failed_node_exception","reason":"node n3 gone"}]},
	 "nodes":{
	  "id2":{"name":"b","os":{"cpu":{"percent":40}},"process":{"cpu":{"percent":37}},"jvm":{"mem":{"heap_used_in_bytes":300,"heap_max_in_bytes":1000}}},
	  "id1":{"name":"a","os":{"cpu":{"percent":90}},"jvm":{"mem":{"heap_used_in_bytes":600,"heap_max_in_bytes":1000}}}}}`)
	info := []byte(`{"_nodes":{"total":2,"successful":2,"failed":0},"nodes":{"id1":{"os":{"allocated_processors":4,"available_processors":8}},"id2":{"os":{"available_processors":2}}}}`)
	got, err := decodeNodeLoads(stats, info)
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeLoad{
		{ID: "id1", Name: "a", ProcessCPUPercent: -1, OSCPUPercent: 90, HeapUsedBytes: 600, HeapMaxBytes: 1000, Processors: 4},
		{ID: "id2", Name: "b", ProcessCPUPercent: 37, OSCPUPercent: 40, HeapUsedBytes: 300, HeapMaxBytes: 1000, Processors: 2},
	}
	if len(got.Nodes) != 2 || got.Nodes[0] != want[0] || got.Nodes[1] != want[1] {
		t.Errorf("nodes got %+v, want %+v", got.Nodes, want)
	}
	if len(got.Failures) != 1 {
		t.Errorf("failures got %+v, want the failed node", got.Failures)
	}
	if _, err := decodeNodeLoads([]byte(`{"nodes":[]}`), info); err == nil {
		t.Error("a malformed stats answer decoded without error")
	}
}
