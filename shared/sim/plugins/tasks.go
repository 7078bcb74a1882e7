package plugins

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/shardwise/shardwise/shared/sim/model"
)

// Running search tasks are of two kinds. The indices' own search load is modelled from each node's
// search pool: one shard-level query task per busy search thread and per queued search (up to the
// search queue_size OpenSearch reports), less the tenants' share of the pool, each under a
// coordinating search task, attributed to the node's copies in proportion to their search load.
// These tasks live for one tick (a query takes tens of milliseconds); their ids change every tick.
// Cancelling one marks it cancelled for the rest of the tick; a single ~20 ms query does not change a
// 30 s tick's load, so cancellation has no effect on the model's load. The tenants' tasks
// (tenants.go) are kept with stable ids until they end, and cancelling them stops their load.

// SimTask is one task as _tasks reports it.
type SimTask struct {
	N         *model.Node
	ID        int64
	Parent    int64 // 0: none
	Action    string
	Desc      string
	Start     time.Time
	Running   time.Duration
	Cancelled bool
	CancelAt  time.Time

	// Set on tenant tasks: the coordinating task's node when it is not n, the request headers,
	// the query and, on a shard-level task, its shard, and the tracked resource use.
	parentNode *model.Node
	Headers    map[string]string
	Query      *tenantQuery
	Shard      *tenantShardTask
	Stats      *TaskStats
	// CPUShare is the part of a synthetic task's running time it spent on a CPU (tenant tasks carry
	// stats instead).
	CPUShare float64
}

// SearchCPUShare is the part of a running search task's time spent on the CPU; CoordinatingCPUShare
// the part of a coordinating search task's, which mostly waits for its shard-level tasks.
const (
	SearchCPUShare       = 0.8
	CoordinatingCPUShare = 0.02
)

// ThreadCPU is the CPU seconds a running search thread of node n uses per second: SearchCPUShare,
// less where the node has more search threads than processors, since its threads share them. On
// make it-wlm's real node (2 processors, 4 search threads) a flood holding every thread kept each
// of its searches at about half a core, which is what its usage, cpu_time over its age, is built
// from (docs/sandboxes.md).
func ThreadCPU(n *model.Node) float64 {
	return SearchCPUShare * math.Min(1, float64(n.Write.Threads)/float64(max(n.Search.Threads, 1)))
}

// FullID is the task id as OpenSearch prints it: node id, colon, task number.
func (t *SimTask) FullID() string { return t.N.ID + ":" + strconv.FormatInt(t.ID, 10) }

// Apportion splits count over copies in proportion to their search demand (largest remainder).
func Apportion(count int, copies []*model.ShardCopy) []int {
	total := 0.0
	for _, c := range copies {
		total += c.SearchDemand
	}
	per := make([]int, len(copies))
	rem := make([]float64, len(copies))
	given := 0
	for i, c := range copies {
		exact := float64(count) * c.SearchDemand / total
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
