package sim

import (
	"fmt"
	"testing"
)

func TestScratchShow(t *testing.T) {
	s := mustSim(t, rerouteScenario)
	_, b := call(t, s, "POST", "/_cluster/reroute", commands(move("y", 0, "a", "d")))
	fmt.Println(b)
	_, b = call(t, s, "POST", "/_cluster/reroute?explain=true&metric=none", commands(move("x", 0, "a", "c")))
	fmt.Println(b)
	_, b = call(t, s, "GET", "/_cat/shards?v", "")
	fmt.Println(b)
	_, b = call(t, s, "GET", "/_cluster/state/routing_nodes,routing_table/x?pretty", "")
	fmt.Println(b)
	_, b = call(t, s, "GET", "/_cat/nodes?v", "")
	fmt.Println(b)
	_, b = call(t, s, "GET", "/_cat/indices?v", "")
	fmt.Println(b)
	_, b = call(t, s, "POST", "/_cluster/allocation/explain?pretty", `{"index":"x","shard":1,"primary":false}`)
	fmt.Println(b)
}
