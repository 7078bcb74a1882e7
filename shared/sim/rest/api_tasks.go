package rest

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/plugins"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// tasks lists the tasks running now on the given nodes.
func (s *Server) tasks(nodes []*model.Node) []*plugins.SimTask {
	now := s.NowLocked()
	base := int64(s.Ticks+1) * 1_000_000
	byNode := map[*model.Node][]*model.ShardCopy{}
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.Node != nil && c.SearchDemand > 0 {
					byNode[c.Node] = append(byNode[c.Node], c)
				}
			}
		}
	}
	var out []*plugins.SimTask
	for _, n := range nodes {
		active, queued := math.Min(n.Search.LastActive, float64(n.Search.Threads)), math.Min(n.Search.LastQueue, model.SearchQueueSize)
		share := 1.0
		if n.TenantLoad > 0 {
			// The tenants' tasks are listed as themselves; these stand for the rest of the pool.
			share = math.Max(0, n.SearchLoad-n.TenantLoad) / n.SearchLoad
		}
		busy := (active + queued) * share
		count := int(math.Round(busy))
		copies := byNode[n]
		if count == 0 || len(copies) == 0 {
			continue
		}
		per := plugins.Apportion(count, copies)
		latency := time.Duration((model.SearchTaskSeconds + n.Search.LastWait) * float64(time.Second))
		// The first requests hold the pool's threads and the rest wait in its queue, using no CPU;
		// the threads share the node's processors, so the running ones' CPU shares add up to at most
		// the whole node.
		running := int64(math.Round(active * share))
		perThread := plugins.ThreadCPU(n)
		k := int64(0)
		for ci, c := range copies {
			for range per[ci] {
				h := fnv.New64a()
				fmt.Fprintf(h, "%d/%s/%d", s.Ticks, n.ID, k)
				frac := float64(h.Sum64()%1_000_000) / 1_000_000
				run := time.Duration(frac * float64(latency))
				parent := &plugins.SimTask{N: n, ID: base + 2*k, Action: "indices:data/read/search",
					Desc:  fmt.Sprintf(`indices[%s], search_type[QUERY_THEN_FETCH], source[{"query":{"match_all":{}}}]`, c.Sh.Idx.Name),
					Start: now.Add(-run - time.Millisecond), Running: run + time.Millisecond}
				child := &plugins.SimTask{N: n, ID: base + 2*k + 1, Parent: parent.ID, Action: "indices:data/read/search[phase/query]",
					Desc: "shardId[" + c.Sh.String() + "]", Start: now.Add(-run), Running: run}
				if k < running {
					parent.CPUShare, child.CPUShare = plugins.CoordinatingCPUShare, perThread
				}
				for _, t := range []*plugins.SimTask{parent, child} {
					if at, ok := s.Cancelled[t.FullID()]; ok {
						t.Cancelled, t.CancelAt = true, at
					}
				}
				out = append(out, parent, child)
				k++
			}
		}
	}
	return append(out, s.Plugins.TenantTasks(nodes)...)
}

// taskFilter reads the actions, nodes and parent_task_id parameters.
func (s *Server) taskFilter(rq *wire.Request) ([]*model.Node, func(*plugins.SimTask) bool) {
	var nodes []*model.Node
	if v := rq.Param("nodes"); v != "" {
		nodes = s.MatchNodes(strings.Split(v, ","))
	} else {
		nodes = s.PresentNodes()
	}
	actions := rq.Param("actions")
	parent := rq.Param("parent_task_id")
	return nodes, func(t *plugins.SimTask) bool {
		if actions != "" {
			ok := false
			for a := range strings.SplitSeq(actions, ",") {
				if cluster.SimpleMatch(strings.TrimSpace(a), t.Action) {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		if parent != "" && parent != "-1" {
			return t.Parent != 0 && t.ParentID() == parent
		}
		return true
	}
}

// renderTask is one task as _tasks lists it.
func renderTask(t *plugins.SimTask, detailed bool) wire.Object {
	o := wire.Object{{"node", t.N.ID}, {"id", t.ID}, {"type", "transport"}, {"action", t.Action}}
	if detailed {
		o = append(o, wire.Field{"description", t.Desc})
	}
	o = append(o,
		wire.Field{"start_time_in_millis", t.Start.UnixMilli()}, wire.Field{"running_time_in_nanos", t.Running.Nanoseconds()},
		wire.Field{"cancellable", true}, wire.Field{"cancelled", t.Cancelled},
	)
	if t.Parent != 0 {
		o = append(o, wire.Field{"parent_task_id", t.ParentID()})
	}
	headers := wire.Object{}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		headers = append(headers, wire.Field{k, t.Headers[k]})
	}
	o = append(o, wire.Field{"headers", headers})
	st := t.Stats
	if st == nil {
		// Resource tracking (OpenSearch 2.x search tasks): CPU is most of the running time, memory a few MiB.
		st = &plugins.TaskStats{CPU: time.Duration(t.CPUShare * float64(t.Running.Nanoseconds())), Mem: int64(1<<20) + t.ID%(4<<20), Executions: 1, Active: 1}
	}
	o = append(o, wire.Field{"resource_stats", st.Render()})
	if t.Cancelled {
		o = append(o, wire.Field{"cancellation_time_millis", t.CancelAt.UnixMilli()})
	}
	return o
}

// renderTasks groups tasks as group_by asks: nodes (default), parents or none.
func (s *Server) renderTasks(list []*plugins.SimTask, groupBy string, detailed bool) (wire.Object, *wire.APIError) {
	switch groupBy {
	case "", "nodes":
		nodes := wire.Object{}
		idx := map[*model.Node]int{}
		for _, t := range list {
			i, ok := idx[t.N]
			if !ok {
				i = len(nodes)
				idx[t.N] = i
				n := t.N
				nodes = append(nodes, wire.Field{n.ID, append(nodeBase(n),
					wire.Field{"roles", []string{"data", "ingest"}}, wire.Field{"attributes", stringMap(n.Attrs())}, wire.Field{"tasks", wire.Object{}})})
			}
			no := nodes[i].Val.(wire.Object)
			tasks := no[len(no)-1].Val.(wire.Object)
			tasks = append(tasks, wire.Field{t.FullID(), renderTask(t, detailed)})
			no[len(no)-1].Val = tasks
		}
		return wire.Object{{"nodes", nodes}}, nil
	case "none":
		out := make([]any, 0, len(list))
		for _, t := range list {
			out = append(out, renderTask(t, detailed))
		}
		return wire.Object{{"tasks", out}}, nil
	case "parents":
		children := map[string][]any{}
		for _, t := range list {
			if t.Parent != 0 {
				key := t.ParentID()
				children[key] = append(children[key], renderTask(t, detailed))
			}
		}
		out := wire.Object{}
		for _, t := range list {
			if t.Parent != 0 {
				continue
			}
			o := renderTask(t, detailed)
			if c := children[t.FullID()]; len(c) > 0 {
				o = append(o, wire.Field{"children", c})
			}
			out = append(out, wire.Field{t.FullID(), o})
		}
		return wire.Object{{"tasks", out}}, nil
	}
	return nil, wire.IllegalArgument(fmt.Sprintf("unknown group_by value [%s], must be one of [nodes, parents, none]", groupBy))
}

func (s *Server) handleTasks(rq *wire.Request) (wire.Reply, *wire.APIError) {
	nodes, keep := s.taskFilter(rq)
	var list []*plugins.SimTask
	for _, t := range s.tasks(nodes) {
		if keep(t) {
			list = append(list, t)
		}
	}
	o, err := s.renderTasks(list, rq.Param("group_by"), rq.Flag("detailed"))
	if err != nil {
		return wire.Reply{}, err
	}
	return wire.JSONReply(o), nil
}

// taskNotFound is the answer for a task id no node runs.
func taskNotFound(id string) *wire.APIError {
	nodeID, _, _ := strings.Cut(id, ":")
	return &wire.APIError{Status: http.StatusNotFound, Body: wire.Object{{"node_failures", []any{wire.Object{
		{"type", "failed_node_exception"}, {"reason", "Failed node [" + nodeID + "]"}, {"node_id", nodeID},
		{"caused_by", wire.Object{{"type", "resource_not_found_exception"}, {"reason", "task [" + id + "] is not found"}}},
	}}}}}
}

func (s *Server) handleGetTask(rq *wire.Request) (wire.Reply, *wire.APIError) {
	id := rq.Segs[1]
	for _, t := range s.tasks(s.PresentNodes()) {
		if t.FullID() == id {
			return wire.JSONReply(wire.Object{{"completed", false}, {"task", renderTask(t, true)}}), nil
		}
	}
	return wire.Reply{}, wire.NewError(http.StatusNotFound, "resource_not_found_exception",
		"task ["+id+"] isn't running and hasn't stored its results", nil)
}

// handleCancelTasks is POST _tasks/_cancel (by actions/nodes) and POST _tasks/{task_id}/_cancel.
func (s *Server) handleCancelTasks(rq *wire.Request) (wire.Reply, *wire.APIError) {
	nodes, keep := s.taskFilter(rq)
	var id string
	if len(rq.Segs) == 3 {
		id = rq.Segs[1]
		nodes = s.PresentNodes()
	}
	var hit []*plugins.SimTask
	cancelled := 0
	for _, t := range s.tasks(nodes) {
		if (id != "" && t.FullID() != id) || (id == "" && !keep(t)) {
			continue
		}
		if t.Query != nil && (t.Query.Cancelled || (t.Shard != nil && t.Shard.Cancelled)) {
			// Cancelled already, alone or with its coordinating task: named by id, OpenSearch lists it again.
			t.Cancelled = true
		}
		if t.Cancelled {
			if id != "" {
				hit = append(hit, t)
			}
			continue
		}
		if t.Query != nil {
			s.Plugins.CancelTenantTask(t)
		} else {
			s.Cancelled[t.FullID()] = s.NowLocked()
		}
		t.Cancelled, t.CancelAt = true, s.NowLocked()
		hit = append(hit, t)
		cancelled++
	}
	if id != "" && len(hit) == 0 {
		return wire.Reply{}, taskNotFound(id)
	}
	s.Res.TasksCancelled += cancelled
	o, err := s.renderTasks(hit, rq.Param("group_by"), rq.Flag("detailed"))
	if err != nil {
		return wire.Reply{}, err
	}
	return wire.JSONReply(o), nil
}
