package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/apispec"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// tenantDoc is three nodes of 4 search threads and one index of 3 shards searched by three
// tenants: hog wants 0.1 × 60 × 3 = 18 search threads of 12, good 20 × 0.05 × 3 = 3, watch 1.5.
func tenantDoc(hogQPS string, ticks int) string {
	return `{
  "name": "tenants", "seed": 3, "tick_seconds": 30, "duration_seconds": ` + strconv.Itoa(30*ticks) + `,
  "node_defaults": {"write_threads": 4, "search_threads": 4},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "shop", "primaries": 3, "replicas": 1, "shard_bytes": 1048576,
    "write_load": {"kind": "constant", "value": 0.3}, "search_load": {"kind": "constant", "value": 1}}],
  "tenants": [
    {"name": "hog", "opaque_id": "hog-id", "index": "shop", "search_load": {"kind": "constant", "value": ` + hogQPS + `},
     "task_seconds": 60, "task_heap_bytes": 100000000},
    {"name": "good", "opaque_id": "good-id", "index": "shop", "search_load": {"kind": "constant", "value": 20},
     "task_seconds": 0.05, "task_heap_bytes": 1000000},
    {"name": "watch", "opaque_id": "watch-id", "index": "shop", "search_load": {"kind": "constant", "value": 0.5},
     "task_seconds": 1, "task_heap_bytes": 2000000}
  ]
}`
}

func TestTenantValidation(t *testing.T) {
	base := tenantDoc("0.1", 10)
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown index", `"index": "shop", "search_load": {"kind": "constant", "value": 0.1}`,
			`"index": "shops", "search_load": {"kind": "constant", "value": 0.1}`, `tenants[0].index: unknown index "shops"`},
		{"duplicate name", `"name": "good"`, `"name": "hog"`, `tenants[1].name: duplicate tenant name "hog"`},
		{"duplicate opaque id", `"opaque_id": "good-id"`, `"opaque_id": "hog-id"`, `tenants[1].opaque_id: "hog-id" is already another tenant's`},
		{"no opaque id", `"opaque_id": "good-id", `, ``, `tenants[1].opaque_id: required`},
		{"spaces in opaque id", `"opaque_id": "good-id"`, `"opaque_id": " good"`, `tenants[1].opaque_id: " good"`},
		{"no name", `"name": "watch", `, ``, `tenants[2].name: required`},
		{"negative heap", `"task_heap_bytes": 1000000}`, `"task_heap_bytes": -1}`, `tenants[1].task_heap_bytes: must not be negative, got -1`},
		{"zero task seconds", `"task_seconds": 0.05`, `"task_seconds": 0`, `tenants[1].task_seconds: must be in (0, 86400], got 0`},
		{"negative task seconds", `"task_seconds": 0.05`, `"task_seconds": -2`, `tenants[1].task_seconds: must be in (0, 86400]`},
		{"negative load", `"value": 20}`, `"value": -20}`, `tenants[1].search_load.value: must be a non-negative load, got -20`},
		{"no load", `"search_load": {"kind": "constant", "value": 20},`, ``, `tenants[1].search_load: required`},
		{"bad profile", `"value": 20}`, `"value": 20, "to": 3}`, `tenants[1].search_load.to: not a field of kind "constant"`},
		{"unknown field", `"task_seconds": 1,`, `"task_seconds": 1, "qps": 3,`, `tenants[2].qps: unknown field`},
		{"too many tasks at once", `"value": 0.1}`, `"value": 1000}`, `tenants[0]: search_load's peak 1000 queries per second × 3 shards × task_seconds 60 is over 100000`},
		{"too many tasks a second", `"value": 20}`, `"value": 40000}`, `tenants[1].search_load: peaks at 40000 queries per second on 3 shards`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(base, tc.from, tc.to, 1)
			if doc == base {
				t.Fatalf("case does not change the scenario: %q", tc.from)
			}
			_, err := scenario.ParseScenario([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("valid round trip", func(t *testing.T) {
		sc, err := scenario.ParseScenario([]byte(base))
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		again, err := scenario.ParseScenario(out)
		if err != nil {
			t.Fatalf("encoded scenario does not parse: %v\n%s", err, out)
		}
		twice, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Tenants) != 3 || !bytes.Equal(out, twice) {
			t.Errorf("tenants change in a round trip:\n%s\n%s", out, twice)
		}
	})
}

// tenantTask is a task of a _tasks?group_by=none answer.
type tenantTask struct {
	Node         string            `json:"node"`
	ID           int64             `json:"id"`
	Action       string            `json:"action"`
	Description  string            `json:"description"`
	Running      int64             `json:"running_time_in_nanos"`
	Cancelled    bool              `json:"cancelled"`
	ParentTaskID string            `json:"parent_task_id"`
	Headers      map[string]string `json:"headers"`
	Stats        struct {
		Total struct {
			CPU int64 `json:"cpu_time_in_nanos"`
			Mem int64 `json:"memory_in_bytes"`
		} `json:"total"`
		Thread struct {
			Active int `json:"active_threads"`
		} `json:"thread_info"`
	} `json:"resource_stats"`
}

func (t tenantTask) fullID() string { return t.Node + ":" + strconv.FormatInt(t.ID, 10) }

// listTasks lists every search task with its X-Opaque-Id, by id.
func listTasks(t *testing.T, s *sim.Sim, opaque string) map[string]tenantTask {
	t.Helper()
	code, raw := simtest.Call(t, s, "GET", "/_tasks?detailed=true&group_by=none&actions=indices:data/read/search*", "")
	if code != 200 {
		t.Fatalf("list tasks: %d %s", code, raw)
	}
	var v struct {
		Tasks []tenantTask `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]tenantTask{}
	for _, tk := range v.Tasks {
		if tk.Headers["X-Opaque-Id"] == opaque {
			out[tk.fullID()] = tk
		}
	}
	return out
}

func parents(tasks map[string]tenantTask) []string {
	var out []string
	for id, tk := range tasks {
		if tk.ParentTaskID == "" {
			out = append(out, id)
		}
	}
	return out
}

func TestTenantTasksInTasksAPI(t *testing.T) {
	s := simtest.MustSim(t, tenantDoc("0.1", 20))
	for range 4 {
		s.Step()
	}
	hog := listTasks(t, s, "hog-id")
	ps := parents(hog)
	// 0.1 queries a second living at least 60 s: six or more running, each with a task per shard
	// not yet done (shards on less busy nodes finish first).
	if shardTasks := len(hog) - len(ps); len(ps) < 6 || shardTasks < len(ps) || shardTasks > 3*len(ps) {
		t.Fatalf("hog: %d coordinating tasks and %d shard tasks, want 6 or more, each with 1 to 3 shard tasks", len(ps), shardTasks)
	}
	crossNode := 0
	for id, tk := range hog {
		if tk.ParentTaskID == "" {
			if tk.Action != "indices:data/read/search" || !strings.Contains(tk.Description, "indices[shop]") {
				t.Errorf("coordinating task %s: %+v", id, tk)
			}
			continue
		}
		p, ok := hog[tk.ParentTaskID]
		if !ok {
			t.Errorf("task %s: parent %s is not listed", id, tk.ParentTaskID)
			continue
		}
		if tk.Action != "indices:data/read/search[phase/query]" || !strings.HasPrefix(tk.Description, "shardId[[shop][") {
			t.Errorf("shard task %s: %+v", id, tk)
		}
		if p.Node != tk.Node {
			crossNode++
		}
		if tk.Stats.Total.Mem > 100000000 || tk.Stats.Total.CPU > tk.Running {
			t.Errorf("shard task %s uses more than it can: %+v", id, tk.Stats)
		}
	}
	if crossNode == 0 {
		t.Error("no shard task runs on another node than its coordinating task")
	}
	// The oldest have run: heap and CPU show, and one search thread each.
	used := 0
	for _, tk := range hog {
		if tk.ParentTaskID != "" && tk.Stats.Total.Mem > 0 && tk.Stats.Total.CPU > 0 && tk.Stats.Thread.Active == 1 {
			used++
		}
	}
	if used == 0 {
		t.Error("no hog shard task reports resource use")
	}
	// Ids stay across ticks and running time grows by the tick.
	s.Step()
	after := listTasks(t, s, "hog-id")
	kept := 0
	for id, tk := range hog {
		if a, ok := after[id]; ok {
			kept++
			if a.Running-tk.Running != 30e9 {
				t.Errorf("task %s ran %d ns more over a 30 s tick", id, a.Running-tk.Running)
			}
		}
	}
	if kept == 0 {
		t.Error("no hog task is still listed a tick later")
	}

	// The answers match the API specification.
	spec := apispec.Shared(t)
	for _, target := range []string{"/_tasks?detailed=true", "/_tasks?group_by=parents", "/_tasks?group_by=none&actions=*search*"} {
		validate(t, spec, s, "GET", target)
	}
	validate(t, spec, s, "POST", "/_tasks/"+parents(after)[0]+"/_cancel")
}

func validate(t *testing.T, spec *apispec.Spec, s *sim.Sim, method, target string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.REST.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), method, target, nil))
	if rec.Code != 200 {
		t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
	}
	req := httptest.NewRequestWithContext(context.Background(), method, target, bytes.NewReader(nil))
	if err := spec.Validate(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		t.Errorf("%s %s does not match the specification: %v", method, target, err)
	}
}

func searchUtil(rep model.TickReport) float64 {
	sum := 0.0
	for _, n := range rep.Nodes {
		sum += n.SearchUtil
	}
	return sum
}

func TestTenantCancelStopsLoad(t *testing.T) {
	doc := tenantDoc("0.1", 20)
	kept, cut := simtest.MustSim(t, doc), simtest.MustSim(t, doc)
	for range 4 {
		kept.Step()
		cut.Step()
	}
	hog := listTasks(t, cut, "hog-id")
	backlog := func(s *sim.Sim) float64 {
		b := 0.0
		for _, n := range s.Nodes {
			b += n.Search.Backlog
		}
		return b
	}
	if backlog(cut) == 0 {
		t.Fatal("the hog does not fill the search queues")
	}
	ps := parents(hog)
	for _, id := range ps {
		code, out := simtest.CallJSON(t, cut, "POST", "/_tasks/"+id+"/_cancel", "")
		node, _, _ := strings.Cut(id, ":")
		if code != 200 || simtest.Dig(out, "nodes", node, "tasks", id, "cancelled") != true {
			t.Fatalf("cancel %s: %d %v", id, code, out)
		}
	}
	// The children went with their parents, and the work they had queued left the queues at once.
	for id, tk := range listTasks(t, cut, "hog-id") {
		if !tk.Cancelled {
			t.Errorf("task %s is not cancelled with its parent", id)
		}
	}
	if backlog(cut) >= backlog(kept) {
		t.Errorf("search backlog after cancelling: %v, without: %v", backlog(cut), backlog(kept))
	}
	r := cut.Result()
	if r.TasksCancelledByTenant["hog"] != len(ps) || r.TasksCancelledByTenant["good"] != 0 || r.TasksCancelled != len(ps) {
		t.Errorf("cancelled by tenant: %v, in all %d, want hog %d", r.TasksCancelledByTenant, r.TasksCancelled, len(ps))
	}
	// Cancelling again names the task again and counts nothing; an unknown task is OpenSearch's 404.
	if code, out := simtest.CallJSON(t, cut, "POST", "/_tasks/"+ps[0]+"/_cancel", ""); code != 200 || len(out) == 0 {
		t.Errorf("second cancel: %d %v", code, out)
	}
	node, _, _ := strings.Cut(ps[0], ":")
	if code, body := simtest.Call(t, cut, "POST", "/_tasks/"+node+":999/_cancel", ""); code != 404 || !strings.Contains(body, "resource_not_found_exception") {
		t.Errorf("unknown task: %d %s", code, body)
	}
	if got := cut.Result().TasksCancelledByTenant["hog"]; got != len(ps) {
		t.Errorf("hog cancellations after a repeat: %d, want %d", got, len(ps))
	}
	// The next tick: the cancelled tasks are gone and their load with them.
	rk, rc := kept.Step(), cut.Step()
	if searchUtil(rc) >= searchUtil(rk)-1 {
		t.Errorf("search utilisation with the hog's tasks cancelled: %.2f, without: %.2f", searchUtil(rc), searchUtil(rk))
	}
	if code, _ := simtest.Call(t, cut, "GET", "/_tasks/"+ps[0], ""); code != 404 {
		t.Errorf("a cancelled task is still there a tick later: %d", code)
	}

	// Cancelling one shard task takes that task alone.
	hog = listTasks(t, cut, "hog-id")
	var child tenantTask
	for _, tk := range hog {
		if tk.ParentTaskID != "" && !tk.Cancelled {
			child = tk
			break
		}
	}
	if child.ID == 0 {
		t.Fatal("no running hog shard task")
	}
	if code, body := simtest.Call(t, cut, "POST", "/_tasks/"+child.fullID()+"/_cancel", ""); code != 200 {
		t.Fatalf("cancel a shard task: %d %s", code, body)
	}
	after := listTasks(t, cut, "hog-id")
	if !after[child.fullID()].Cancelled || after[child.ParentTaskID].Cancelled {
		t.Errorf("shard task cancelled: %v, its parent: %v", after[child.fullID()].Cancelled, after[child.ParentTaskID].Cancelled)
	}
	if got := cut.Result().TasksCancelledByTenant["hog"]; got != len(ps)+1 {
		t.Errorf("hog cancellations: %d, want %d", got, len(ps)+1)
	}
}

// cancelTenant cancels every coordinating task of a tenant through the API.
func cancelTenant(t *testing.T, s *sim.Sim, opaque string) {
	t.Helper()
	for _, id := range parents(listTasks(t, s, opaque)) {
		if code, body := simtest.Call(t, s, "POST", "/_tasks/"+id+"/_cancel", ""); code != 200 {
			t.Fatalf("cancel %s: %d %s", id, code, body)
		}
	}
}

func TestTenantLatencyReflectsContention(t *testing.T) {
	run := func(hogQPS string, cancel bool) model.Result {
		s := simtest.MustSim(t, tenantDoc(hogQPS, 30))
		for !s.Done() {
			s.Step()
			if cancel {
				cancelTenant(t, s, "hog-id")
			}
		}
		return s.Result()
	}
	alone, hogged, contained := run("0", false), run("0.1", false), run("0.1", true)
	good := func(r model.Result) float64 { return r.TenantP99SearchLatencyMs["good"] }
	t.Logf("good p99: alone %.1f ms, with the hog %.1f ms, with the hog's tasks cancelled every tick %.1f ms",
		good(alone), good(hogged), good(contained))
	if good(alone) < 50 || good(alone) > 60 {
		t.Errorf("good alone: p99 %v ms, want 50 ms and a short wait", good(alone))
	}
	if good(hogged) < 2*good(contained) {
		t.Errorf("good's p99 with the hog, %v ms, is not twice that with the hog's tasks cancelled, %v ms", good(hogged), good(contained))
	}
	if good(contained) < good(alone) {
		t.Errorf("good's p99 with the hog cancelled (%v ms) is below that without it (%v ms)", good(contained), good(alone))
	}
	if n := contained.TasksCancelledByTenant; n["hog"] == 0 || n["good"] != 0 || n["watch"] != 0 {
		t.Errorf("cancelled by tenant: %v", n)
	}
	if hogged.TenantP99SearchLatencyMs["hog"] < 60_000 {
		t.Errorf("hog p99: %v ms, want its 60 s and its wait", hogged.TenantP99SearchLatencyMs["hog"])
	}
	if again := run("0.1", true); !reflect.DeepEqual(again, contained) {
		t.Errorf("the same run gave another result:\n%+v\n%+v", again, contained)
	}
}

// The project's scenario shows the contention it is there for.
func TestSandboxNoisyTenantScenario(t *testing.T) {
	s, err := sim.New(simtest.LoadShared(t, "sandbox-noisy-tenant"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for !s.Done() {
		s.Step()
	}
	r := s.Result()
	if len(r.TenantP99SearchLatencyMs) != 3 || r.TenantP99SearchLatencyMs["storefront"] < 1000 {
		t.Errorf("storefront's p99 with nothing cancelled: %v", r.TenantP99SearchLatencyMs)
	}
}
