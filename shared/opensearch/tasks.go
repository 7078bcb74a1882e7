package opensearch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// Task is one running task from GET _tasks?detailed=true.
type Task struct {
	// ID is "<node id>:<number>", the form CancelTask takes.
	ID          string
	Node        string
	Type        string
	Action      string
	Description string
	StartTime   time.Time
	RunningTime time.Duration
	Cancellable bool
	Canceled    bool
	// ParentTaskID is empty for a top-level task.
	ParentTaskID string
	// Headers are the request headers OpenSearch keeps, e.g. X-Opaque-Id.
	Headers map[string]string
	// Resources is nil when OpenSearch reported no resource_stats (before 2.9, or task resource
	// tracking off).
	Resources *TaskResources
}

// TaskResources is resource_stats.total: what the task used on all its threads so far.
type TaskResources struct {
	CPUTimeNanos int64
	MemoryBytes  int64
	// ThreadExecutions is resource_stats.thread_info.thread_executions: how many times a thread
	// has run the task. A shard-level search task at 0 is still in its node's search queue.
	// -1 when the listing carries no thread_info.
	ThreadExecutions int
}

// TaskList is the running tasks, sorted by node, start time and ID, and the nodes or tasks that
// failed to report.
type TaskList struct {
	Tasks    []Task
	Failures []Failure
}

var tasksFilter = joinFilters(
	[]string{"node_failures", "task_failures"},
	prefixed("nodes.*.tasks.*.", "node", "type", "action", "description", "start_time_in_millis",
		"running_time_in_nanos", "cancellable", "cancelled", "parent_task_id", "headers", "resource_stats.total", "resource_stats.thread_info.thread_executions"),
)

// Tasks reads GET _tasks?detailed=true&actions=<actions>; actions is a comma-separated list of
// action patterns ("indices:data/read/search*"), empty for all.
func (c *Client) Tasks(ctx context.Context, actions string) (TaskList, error) {
	req := opensearchapi.TasksListReq{Params: opensearchapi.TasksListParams{
		Actions:    splitList(actions),
		Detailed:   new(true),
		FilterPath: tasksFilter,
	}}
	return get(ctx, c, "tasks", req, decodeTasks)
}

// tasksWire is TaskListResponseBase grouped by node, OpenSearch's default.
type tasksWire struct {
	Nodes map[string]struct {
		Tasks map[string]struct {
			Node               string            `json:"node"`
			Type               string            `json:"type"`
			Action             string            `json:"action"`
			Description        string            `json:"description"`
			StartTimeInMillis  int64             `json:"start_time_in_millis"`
			RunningTimeInNanos int64             `json:"running_time_in_nanos"`
			Cancellable        bool              `json:"cancellable"`
			Canceled           bool              `json:"cancelled"`
			ParentTaskID       string            `json:"parent_task_id"`
			Headers            map[string]string `json:"headers"`
			ResourceStats      *struct {
				Total *struct {
					CPUTimeInNanos int64 `json:"cpu_time_in_nanos"`
					MemoryInBytes  int64 `json:"memory_in_bytes"`
				} `json:"total"`
				ThreadInfo *struct {
					ThreadExecutions int `json:"thread_executions"`
				} `json:"thread_info"`
			} `json:"resource_stats"`
		} `json:"tasks"`
	} `json:"nodes"`
	NodeFailures []errorCause `json:"node_failures"`
	TaskFailures []struct {
		NodeID string     `json:"node_id"`
		Reason errorCause `json:"reason"`
	} `json:"task_failures"`
}

func (w tasksWire) failures() []Failure {
	out := failuresFrom(w.NodeFailures)
	for _, f := range w.TaskFailures {
		out = append(out, Failure{NodeID: f.NodeID, Type: f.Reason.Type, Reason: f.Reason.describe()})
	}
	return out
}

func decodeTasks(body []byte) (TaskList, error) {
	var wire tasksWire
	if err := json.Unmarshal(body, &wire); err != nil {
		return TaskList{}, fmt.Errorf("decode: %w", err)
	}
	out := TaskList{Failures: wire.failures()}
	for nodeID, node := range wire.Nodes {
		for id, t := range node.Tasks {
			task := Task{
				ID:           id,
				Node:         cmp.Or(t.Node, nodeID),
				Type:         t.Type,
				Action:       t.Action,
				Description:  t.Description,
				StartTime:    millisToTime(t.StartTimeInMillis),
				RunningTime:  time.Duration(t.RunningTimeInNanos),
				Cancellable:  t.Cancellable,
				Canceled:     t.Canceled,
				ParentTaskID: t.ParentTaskID,
				Headers:      t.Headers,
			}
			if t.ResourceStats != nil && t.ResourceStats.Total != nil {
				task.Resources = &TaskResources{
					CPUTimeNanos:     t.ResourceStats.Total.CPUTimeInNanos,
					MemoryBytes:      t.ResourceStats.Total.MemoryInBytes,
					ThreadExecutions: -1,
				}
				if ti := t.ResourceStats.ThreadInfo; ti != nil {
					task.Resources.ThreadExecutions = ti.ThreadExecutions
				}
			}
			out.Tasks = append(out.Tasks, task)
		}
	}
	slices.SortFunc(out.Tasks, func(a, b Task) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), a.StartTime.Compare(b.StartTime), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CancelTask sends POST _tasks/<id>/_cancel. A failure OpenSearch lists inside its 200 answer
// (the task's node could not cancel it) is returned as an *APIError with Status 200 and the
// innermost cause's type, so IsNotFound recognizes a task that already finished.
func (c *Client) CancelTask(ctx context.Context, id string) error {
	name := "cancel task " + id
	if id == "" {
		return errors.New("cancel task: empty task id")
	}
	body, err := c.call(ctx, name, http.MethodPost, opensearchapi.TasksCancelReq{TaskID: id})
	if err != nil {
		return err
	}
	if err := decodeCancelTask(body); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func decodeCancelTask(body []byte) error {
	var wire tasksWire
	if err := json.Unmarshal(body, &wire); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	var cause *errorCause
	switch {
	case len(wire.NodeFailures) > 0:
		cause = &wire.NodeFailures[0]
	case len(wire.TaskFailures) > 0:
		cause = &wire.TaskFailures[0].Reason
	default:
		return nil
	}
	return &APIError{Status: http.StatusOK, Type: cause.innermostType(), Reason: cause.describe(), Body: truncate(body, maxErrorBody)}
}
