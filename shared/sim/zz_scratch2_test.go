package sim

import (
	"os"
	"strings"
	"testing"
)

func TestScratchDump(t *testing.T) {
	s := mustSim(t, strings.Replace(rerouteScenario, `"placement": [["a"]]}`, `"search_load": {"kind":"constant","value":3}, "placement": [["a"]]}`, 1))
	stepN(s, 3)
	mustReroute(t, s, commands(move("x", 0, "a", "c")))
	call(t, s, "PUT", "/y/_settings", `{"number_of_replicas":4}`)
	s.Step()
	reqs := map[string][2]string{
		"info":                   {"GET", "/"},
		"health":                 {"GET", "/_cluster/health?level=shards"},
		"state":                  {"GET", "/_cluster/state"},
		"get_settings":           {"GET", "/_cluster/settings?include_defaults=true"},
		"nodes_info":             {"GET", "/_nodes"},
		"nodes_stats":            {"GET", "/_nodes/stats"},
		"nodes_stats_shards":     {"GET", "/_nodes/stats?level=shards"},
		"nodes_stats_indices":    {"GET", "/_nodes/stats?level=indices"},
		"stats":                  {"GET", "/_stats?level=shards"},
		"index_settings":         {"GET", "/x/_settings"},
		"cat_shards":             {"GET", "/_cat/shards?format=json"},
		"cat_nodes":              {"GET", "/_cat/nodes?format=json"},
		"cat_indices":            {"GET", "/_cat/indices?format=json"},
		"tasks":                  {"GET", "/_tasks?detailed"},
		"tasks_parents":          {"GET", "/_tasks?group_by=parents"},
		"tasks_none":             {"GET", "/_tasks?group_by=none"},
		"explain_unassigned":     {"GET", "/_cluster/allocation/explain?include_yes_decisions=true"},
		"error_404":              {"GET", "/nope/_stats"},
	}
	for name, r := range reqs {
		_, body := call(t, s, r[0], r[1], "")
		os.WriteFile("/tmp/simscratch/resp/"+name+".json", []byte(body), 0o644)
	}
	_, body := call(t, s, "POST", "/_cluster/allocation/explain?include_yes_decisions=true", `{"index":"x","shard":1,"primary":true}`)
	os.WriteFile("/tmp/simscratch/resp/explain_started.json", []byte(body), 0o644)
	s.Step(); s.Step(); s.Step(); s.Step(); s.Step(); s.Step()
	_, body = call(t, s, "POST", "/_cluster/reroute?explain=true", commands(move("x", 0, "c", "a")))
	os.WriteFile("/tmp/simscratch/resp/reroute.json", []byte(body), 0o644)
	_, body = call(t, s, "PUT", "/_cluster/settings", `{"persistent":{"cluster.routing.allocation.exclude._name":"d"}}`)
	os.WriteFile("/tmp/simscratch/resp/put_settings.json", []byte(body), 0o644)
	_, body = call(t, s, "PUT", "/x/_settings", `{"index.routing.allocation.exclude._name":"d"}`)
	os.WriteFile("/tmp/simscratch/resp/put_index_settings.json", []byte(body), 0o644)
	_, tasks := callJSON(t, s, "GET", "/_tasks?group_by=none", "")
	id := dig(tasks, "tasks", 0, "node").(string) + ":" + itoa(int(dig(tasks, "tasks", 0, "id").(float64)))
	_, body = call(t, s, "POST", "/_tasks/"+id+"/_cancel", "")
	os.WriteFile("/tmp/simscratch/resp/tasks_cancel.json", []byte(body), 0o644)
}
