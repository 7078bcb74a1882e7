package sim

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Running search tasks are of two kinds. The indices' own search load is modelled from each node's
// search pool: one shard-level query task per busy search thread and per queued search (up to the
// search queue_size OpenSearch reports), less the tenants' share of the pool, each under a
// coordinating search task, attributed to the node's copies in proportion to their search load.
// These tasks live for one tick (a query takes tens of milliseconds); their ids change every tick.
// Cancelling one marks it cancelled for the rest of the tick; a single ~20 ms query does not change a
// 30 s tick's load, so cancellation has no effect on the model's load. The tenants' tasks
// (tenants.go) are kept with stable ids until they end, and cancelling them stops their load.

// simTask is one task as _tasks reports it.
type simTask struct {
	n         *node
	id        int64
	parent    int64 // 0: none
	action    string
	desc      string
	start     time.Time
	running   time.Duration
	cancelled bool
	cancelAt  time.Time

	// Set on tenant tasks: the coordinating task's node when it is not n, the request headers,
	// the query and, on a shard-level task, its shard, and the tracked resource use.
	parentNode *node
	headers    map[string]string
	query      *tenantQuery
	shard      *tenantShardTask
	stats      *taskStats
	// cpuShare is the part of a synthetic task's running time it spent on a CPU (tenant tasks carry
	// stats instead).
	cpuShare float64
}

// searchCPUShare is the part of a running search task's time spent on the CPU; coordinatingCPUShare
// the part of a coordinating search task's, which mostly waits for its shard-level tasks.
const (
	searchCPUShare       = 0.8
	coordinatingCPUShare = 0.02
)

func (t *simTask) fullID() string { return t.n.id + ":" + strconv.FormatInt(t.id, 10) }

// tasks lists the tasks running now on the given nodes.
func (s *Sim) tasks(nodes []*node) []*simTask {
	now := s.now()
	base := int64(s.ticks+1) * 1_000_000
	byNode := map[*node][]*shardCopy{}
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if c.node != nil && c.searchDemand > 0 {
					byNode[c.node] = append(byNode[c.node], c)
				}
			}
		}
	}
	var out []*simTask
	for _, n := range nodes {
		active, queued := math.Min(n.search.lastActive, float64(n.search.threads)), math.Min(n.search.lastQueue, searchQueueSize)
		share := 1.0
		if n.tenantLoad > 0 {
			// The tenants' tasks are listed as themselves; these stand for the rest of the pool.
			share = math.Max(0, n.searchLoad-n.tenantLoad) / n.searchLoad
		}
		busy := (active + queued) * share
		count := int(math.Round(busy))
		copies := byNode[n]
		if count == 0 || len(copies) == 0 {
			continue
		}
		per := apportion(count, copies)
		latency := time.Duration((searchTaskSeconds + n.search.lastWait) * float64(time.Second))
		// The first requests hold the pool's threads and the rest wait in its queue, using no CPU;
		// the threads share the node's processors, so the running ones' CPU shares add up to at most
		// the whole node.
		running := int64(math.Round(active * share))
		perThread := searchCPUShare * math.Min(1, float64(n.write.threads)/float64(n.search.threads))
		k := int64(0)
		for ci, c := range copies {
			for range per[ci] {
				h := fnv.New64a()
				fmt.Fprintf(h, "%d/%s/%d", s.ticks, n.id, k)
				frac := float64(h.Sum64()%1_000_000) / 1_000_000
				run := time.Duration(frac * float64(latency))
				parent := &simTask{n: n, id: base + 2*k, action: "indices:data/read/search",
					desc:  fmt.Sprintf(`indices[%s], search_type[QUERY_THEN_FETCH], source[{"query":{"match_all":{}}}]`, c.sh.idx.name),
					start: now.Add(-run - time.Millisecond), running: run + time.Millisecond}
				child := &simTask{n: n, id: base + 2*k + 1, parent: parent.id, action: "indices:data/read/search[phase/query]",
					desc: "shardId[" + c.sh.String() + "]", start: now.Add(-run), running: run}
				if k < running {
					parent.cpuShare, child.cpuShare = coordinatingCPUShare, perThread
				}
				for _, t := range []*simTask{parent, child} {
					if at, ok := s.cancelled[t.fullID()]; ok {
						t.cancelled, t.cancelAt = true, at
					}
				}
				out = append(out, parent, child)
				k++
			}
		}
	}
	return append(out, s.tenantTasks(nodes)...)
}

// apportion splits count over copies in proportion to their search demand (largest remainder).
func apportion(count int, copies []*shardCopy) []int {
	total := 0.0
	for _, c := range copies {
		total += c.searchDemand
	}
	per := make([]int, len(copies))
	rem := make([]float64, len(copies))
	given := 0
	for i, c := range copies {
		exact := float64(count) * c.searchDemand / total
		per[i] = int(exact)
		rem[i] = exact - float64(per[i])
		given += per[i]
	}
	order := make([]int, len(copies))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for i := 0; given < count; i++ {
		per[order[i%len(order)]]++
		given++
	}
	return per
}

// taskFilter reads the actions, nodes and parent_task_id parameters.
func (s *Sim) taskFilter(rq *request) ([]*node, func(*simTask) bool) {
	var nodes []*node
	if v := rq.param("nodes"); v != "" {
		nodes = s.matchNodes(strings.Split(v, ","))
	} else {
		nodes = s.presentNodes()
	}
	actions := rq.param("actions")
	parent := rq.param("parent_task_id")
	return nodes, func(t *simTask) bool {
		if actions != "" {
			ok := false
			for a := range strings.SplitSeq(actions, ",") {
				if cluster.SimpleMatch(strings.TrimSpace(a), t.action) {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		if parent != "" && parent != "-1" {
			return t.parent != 0 && t.parentID() == parent
		}
		return true
	}
}

func (t *simTask) render(detailed bool) object {
	o := object{{"node", t.n.id}, {"id", t.id}, {"type", "transport"}, {"action", t.action}}
	if detailed {
		o = append(o, field{"description", t.desc})
	}
	o = append(o,
		field{"start_time_in_millis", t.start.UnixMilli()}, field{"running_time_in_nanos", t.running.Nanoseconds()},
		field{"cancellable", true}, field{"cancelled", t.cancelled},
	)
	if t.parent != 0 {
		o = append(o, field{"parent_task_id", t.parentID()})
	}
	headers := object{}
	for _, k := range slices.Sorted(maps.Keys(t.headers)) {
		headers = append(headers, field{k, t.headers[k]})
	}
	o = append(o, field{"headers", headers})
	st := t.stats
	if st == nil {
		// Resource tracking (OpenSearch 2.x search tasks): CPU is most of the running time, memory a few MiB.
		st = &taskStats{cpu: time.Duration(t.cpuShare * float64(t.running.Nanoseconds())), mem: int64(1<<20) + t.id%(4<<20), executions: 1, active: 1}
	}
	o = append(o, field{"resource_stats", st.render()})
	if t.cancelled {
		o = append(o, field{"cancellation_time_millis", t.cancelAt.UnixMilli()})
	}
	return o
}

// renderTasks groups tasks as group_by asks: nodes (default), parents or none.
func (s *Sim) renderTasks(list []*simTask, groupBy string, detailed bool) (object, *apiError) {
	switch groupBy {
	case "", "nodes":
		nodes := object{}
		idx := map[*node]int{}
		for _, t := range list {
			i, ok := idx[t.n]
			if !ok {
				i = len(nodes)
				idx[t.n] = i
				n := t.n
				nodes = append(nodes, field{n.id, append(nodeBase(n),
					field{"roles", []string{"data", "ingest"}}, field{"attributes", stringMap(n.attrs())}, field{"tasks", object{}})})
			}
			no := nodes[i].Val.(object)
			tasks := no[len(no)-1].Val.(object)
			tasks = append(tasks, field{t.fullID(), t.render(detailed)})
			no[len(no)-1].Val = tasks
		}
		return object{{"nodes", nodes}}, nil
	case "none":
		out := make([]any, 0, len(list))
		for _, t := range list {
			out = append(out, t.render(detailed))
		}
		return object{{"tasks", out}}, nil
	case "parents":
		children := map[string][]any{}
		for _, t := range list {
			if t.parent != 0 {
				key := t.parentID()
				children[key] = append(children[key], t.render(detailed))
			}
		}
		out := object{}
		for _, t := range list {
			if t.parent != 0 {
				continue
			}
			o := t.render(detailed)
			if c := children[t.fullID()]; len(c) > 0 {
				o = append(o, field{"children", c})
			}
			out = append(out, field{t.fullID(), o})
		}
		return object{{"tasks", out}}, nil
	}
	return nil, illegalArgument(fmt.Sprintf("unknown group_by value [%s], must be one of [nodes, parents, none]", groupBy))
}

func (s *Sim) handleTasks(rq *request) (reply, *apiError) {
	nodes, keep := s.taskFilter(rq)
	var list []*simTask
	for _, t := range s.tasks(nodes) {
		if keep(t) {
			list = append(list, t)
		}
	}
	o, err := s.renderTasks(list, rq.param("group_by"), rq.flag("detailed"))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(o), nil
}

// taskNotFound is the answer for a task id no node runs.
func taskNotFound(id string) *apiError {
	nodeID, _, _ := strings.Cut(id, ":")
	return &apiError{status: http.StatusNotFound, body: object{{"node_failures", []any{object{
		{"type", "failed_node_exception"}, {"reason", "Failed node [" + nodeID + "]"}, {"node_id", nodeID},
		{"caused_by", object{{"type", "resource_not_found_exception"}, {"reason", "task [" + id + "] is not found"}}},
	}}}}}
}

func (s *Sim) handleGetTask(rq *request) (reply, *apiError) {
	id := rq.segs[1]
	for _, t := range s.tasks(s.presentNodes()) {
		if t.fullID() == id {
			return jsonReply(object{{"completed", false}, {"task", t.render(true)}}), nil
		}
	}
	return reply{}, newError(http.StatusNotFound, "resource_not_found_exception",
		"task ["+id+"] isn't running and hasn't stored its results", nil)
}

// handleCancelTasks is POST _tasks/_cancel (by actions/nodes) and POST _tasks/{task_id}/_cancel.
func (s *Sim) handleCancelTasks(rq *request) (reply, *apiError) {
	nodes, keep := s.taskFilter(rq)
	var id string
	if len(rq.segs) == 3 {
		id = rq.segs[1]
		nodes = s.presentNodes()
	}
	var hit []*simTask
	cancelled := 0
	for _, t := range s.tasks(nodes) {
		if (id != "" && t.fullID() != id) || (id == "" && !keep(t)) {
			continue
		}
		if t.query != nil && (t.query.cancelled || (t.shard != nil && t.shard.cancelled)) {
			// Cancelled already, alone or with its coordinating task: named by id, OpenSearch lists it again.
			t.cancelled = true
		}
		if t.cancelled {
			if id != "" {
				hit = append(hit, t)
			}
			continue
		}
		if t.query != nil {
			s.cancelTenantTask(t)
		} else {
			s.cancelled[t.fullID()] = s.now()
		}
		t.cancelled, t.cancelAt = true, s.now()
		hit = append(hit, t)
		cancelled++
	}
	if id != "" && len(hit) == 0 {
		return reply{}, taskNotFound(id)
	}
	s.res.TasksCancelled += cancelled
	o, err := s.renderTasks(hit, rq.param("group_by"), rq.flag("detailed"))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(o), nil
}
