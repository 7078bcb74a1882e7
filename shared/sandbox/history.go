package sandbox

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The sandbox function keeps a history: one Record per invocation, aggregated over its passes, so
// that `shardwise sandbox report` can show usage over time, what was cancelled and what would be.
// A record holds figures per node, sandbox and resource and per sandbox, never per task, except
// for a bounded sample of the last pass's plan.

// History bounds.
const (
	// DefaultHistoryRetention is how long a record is kept when the configuration says nothing.
	DefaultHistoryRetention = 24 * time.Hour
	// MinHistoryRetention and MaxHistoryRetention bound sandbox.history_retention: less than an
	// hour cannot answer `report --since 1h`, and a week of records at one per 30 s is 20,160 items
	// per cluster, which a report reads with one Query per hour.
	MinHistoryRetention = time.Hour
	MaxHistoryRetention = 7 * 24 * time.Hour
	// MaxRecordRows bounds the usage rows of a record (nodes × sandboxes × resources). Past it, the
	// rows closest to their limit are kept and the rest counted in Record.DroppedRows, so a record
	// stays a few tens of KB whatever the cluster's size.
	MaxRecordRows = 400
	// MaxRecordPlan bounds the planned cancellations a record keeps of its last pass.
	MaxRecordPlan = 20
	// ReportBuckets is how many time buckets a report splits its window into.
	ReportBuckets = 12
)

// Record is one invocation of the sandbox function, aggregated over its passes.
type Record struct {
	Start time.Time `json:"start"`
	At    time.Time `json:"at"`
	// Passes counts the looks at the cluster's tasks.
	Passes int  `json:"passes"`
	DryRun bool `json:"dry_run"`
	// Enforcer is who contains the sandboxes: EnforcerShardwise (the function's own passes) or
	// EnforcerWLM (the workload-management plugin; the function only measures).
	Enforcer string     `json:"enforcer"`
	Usage    []UsageRow `json:"usage,omitempty"`
	// DroppedRows counts the usage rows left out past MaxRecordRows.
	DroppedRows int `json:"dropped_rows,omitempty"`
	// Cancelled tallies the invocation's cancellations per sandbox and resource.
	Cancelled []Tally `json:"cancelled,omitempty"`
	// Plan is the last pass's planned cancellations, at most MaxRecordPlan of them (the largest
	// shares first); PlanTotal counts them all.
	Plan      []Planned `json:"plan,omitempty"`
	PlanTotal int       `json:"plan_total,omitempty"`
}

// Enforcers.
const (
	EnforcerShardwise = "shardwise"
	EnforcerWLM       = "wlm"
)

// UsageRow is one sandbox's usage of one resource on one node over an invocation's passes.
type UsageRow struct {
	Node     string      `json:"node"`
	Sandbox  string      `json:"sandbox"`
	Resource Resource    `json:"resource"`
	Mode     Enforcement `json:"mode"`
	// Peak is the highest usage of any pass, Mean the mean over the passes; Limit is the
	// cancellation limit (allocation × threshold), Over the passes above it.
	Peak  float64 `json:"peak"`
	Mean  float64 `json:"mean"`
	Limit float64 `json:"limit"`
	Over  int     `json:"over,omitempty"`
	// passes is how many passes saw the row, for Mean.
	passes int
}

// Tally counts one sandbox's cancellations of one resource by outcome, with the shares of the
// nodes' resource they freed (executed) or would have freed (the other outcomes).
type Tally struct {
	Sandbox  string             `json:"sandbox"`
	Resource Resource           `json:"resource"`
	Count    map[string]int     `json:"count"`
	Freed    map[string]float64 `json:"freed"`
}

// Planned is one request a pass planned to cancel, and what became of it.
type Planned struct {
	Task     string   `json:"task"`
	OpaqueID string   `json:"opaque_id,omitempty"`
	Sandbox  string   `json:"sandbox"`
	Node     string   `json:"node"`
	Resource Resource `json:"resource"`
	Kind     string   `json:"kind"`
	Freed    float64  `json:"freed"`
	Outcome  string   `json:"outcome"`
	Reason   string   `json:"reason"`
}

type rowKey struct {
	node, sandbox string
	resource      Resource
}

type tallyKey struct {
	sandbox  string
	resource Resource
}

// Recorder builds an invocation's Record pass by pass.
type Recorder struct {
	rec     Record
	rows    map[rowKey]*UsageRow
	tallies map[tallyKey]*Tally
	// names are the last pass's node loads, by id, for the nodes' names.
	names map[string]NodeLoad
}

// NewRecorder starts the record of an invocation that started at start.
func NewRecorder(start time.Time, dryRun bool, enforcer string) *Recorder {
	return &Recorder{rec: Record{Start: start, DryRun: dryRun, Enforcer: enforcer},
		rows: map[rowKey]*UsageRow{}, tallies: map[tallyKey]*Tally{}}
}

// Pass adds one pass's findings and starts its plan: the Outcomes that follow replace the
// previous pass's. Nodes are recorded by the name their load gives, else by id.
func (r *Recorder) Pass(rep Report, loads []NodeLoad) {
	r.rec.Passes++
	r.names = map[string]NodeLoad{}
	for _, n := range loads {
		r.names[n.Node] = n
	}
	for _, f := range rep.Findings {
		node := nodeName(r.names, f.Node)
		k := rowKey{node, f.Sandbox, f.Resource}
		row := r.rows[k]
		if row == nil {
			row = &UsageRow{Node: node, Sandbox: f.Sandbox, Resource: f.Resource}
			r.rows[k] = row
		}
		row.Mode, row.Limit = f.Mode, f.CancelAbove
		row.Peak = max(row.Peak, f.Usage)
		row.Mean = (row.Mean*float64(row.passes) + f.Usage) / float64(row.passes+1)
		row.passes++
		if f.Usage > f.CancelAbove+allocationSlack {
			row.Over++
		}
	}
	r.rec.Plan, r.rec.PlanTotal = nil, 0
}

// Outcome adds one planned cancellation of the current pass and its outcome.
func (r *Recorder) Outcome(c Cancellation, outcome string) {
	k := tallyKey{c.Sandbox, c.Resource}
	t := r.tallies[k]
	if t == nil {
		t = &Tally{Sandbox: c.Sandbox, Resource: c.Resource, Count: map[string]int{}, Freed: map[string]float64{}}
		r.tallies[k] = t
	}
	t.Count[outcome]++
	t.Freed[outcome] += c.Freed
	r.rec.PlanTotal++
	r.rec.Plan = append(r.rec.Plan, Planned{Task: c.Task, OpaqueID: c.OpaqueID, Sandbox: c.Sandbox, Node: nodeName(r.names, c.Node),
		Resource: c.Resource, Kind: c.Kind, Freed: c.Freed, Outcome: outcome, Reason: c.Reason})
}

// Record returns the invocation's record as of at, within its bounds.
func (r *Recorder) Record(at time.Time) Record {
	rec := r.rec
	rec.At = at
	rows := make([]UsageRow, 0, len(r.rows))
	for _, row := range r.rows {
		rows = append(rows, *row)
	}
	// Closest to (or furthest over) the limit first, so a bound drops the idlest rows.
	slices.SortFunc(rows, func(a, b UsageRow) int {
		return cmp.Or(cmp.Compare(ratio(b.Peak, b.Limit), ratio(a.Peak, a.Limit)), cmp.Compare(a.Sandbox, b.Sandbox),
			cmp.Compare(a.Node, b.Node), cmp.Compare(a.Resource, b.Resource))
	})
	if len(rows) > MaxRecordRows {
		rec.DroppedRows = len(rows) - MaxRecordRows
		rows = rows[:MaxRecordRows]
	}
	rec.Usage = rows
	rec.Cancelled = nil
	for _, t := range r.tallies {
		rec.Cancelled = append(rec.Cancelled, *t)
	}
	slices.SortFunc(rec.Cancelled, func(a, b Tally) int {
		return cmp.Or(cmp.Compare(a.Sandbox, b.Sandbox), cmp.Compare(a.Resource, b.Resource))
	})
	rec.Plan = slices.Clone(rec.Plan)
	slices.SortStableFunc(rec.Plan, func(a, b Planned) int { return cmp.Compare(b.Freed, a.Freed) })
	if len(rec.Plan) > MaxRecordPlan {
		rec.Plan = rec.Plan[:MaxRecordPlan]
	}
	return rec
}

// ratio is usage over limit; a zero limit counts usage as far over.
func ratio(usage, limit float64) float64 {
	if limit <= 0 {
		return usage * 1e6
	}
	return usage / limit
}

// AllNodes is the node of a report's total rows.
const AllNodes = "(all nodes)"

// Summary is the history of one cluster's sandboxes over a window.
type Summary struct {
	Cluster string    `json:"cluster"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	// Invocations and Passes count the records in the window and their passes.
	Invocations int `json:"invocations"`
	Passes      int `json:"passes"`
	// BucketSeconds is the width of each point of a usage series.
	BucketSeconds float64         `json:"bucket_seconds"`
	Usage         []UsageSummary  `json:"usage"`
	Cancellations []CancelSummary `json:"cancellations"`
	// Plan is the latest record's last pass's plan: who would be cancelled now, as the function
	// last saw the cluster (PlanAt); PlanTotal counts it whole.
	Plan      []Planned `json:"plan"`
	PlanAt    time.Time `json:"plan_at,omitzero"`
	PlanTotal int       `json:"plan_total"`
	DryRun    bool      `json:"dry_run"`
	// DroppedRows counts usage rows the records left out (MaxRecordRows).
	DroppedRows int `json:"dropped_rows,omitempty"`
}

// UsageSummary is one sandbox's usage of one resource on one node, or on all nodes (AllNodes:
// the mean share of the nodes' resource), over the window.
type UsageSummary struct {
	Sandbox  string      `json:"sandbox"`
	Node     string      `json:"node"`
	Resource Resource    `json:"resource"`
	Mode     Enforcement `json:"mode"`
	Limit    float64     `json:"limit"`
	Mean     float64     `json:"mean"`
	Peak     float64     `json:"peak"`
	// OverShare is the share of the invocations in which the sandbox was over its limit (on the
	// node; for AllNodes, on some node) in some pass.
	OverShare float64 `json:"over_share"`
	// Series is the peak of each of ReportBuckets buckets, oldest first; null where no record fell.
	Series []*float64 `json:"series"`
}

// CancelSummary is one sandbox's cancellations over the window.
type CancelSummary struct {
	Sandbox string `json:"sandbox"`
	// Count and Freed are per outcome; Freed sums, per resource, the shares of a node's resource
	// the requests held (1 is one whole node's CPU or heap).
	Count map[string]int                  `json:"count"`
	Freed map[string]map[Resource]float64 `json:"freed"`
}

// Summarize aggregates the cluster's records in [from, to]; records outside are ignored.
func Summarize(cluster string, records []Record, from, to time.Time) Summary {
	s := Summary{Cluster: cluster, From: from, To: to, Usage: []UsageSummary{}, Cancellations: []CancelSummary{}, Plan: []Planned{}}
	width := to.Sub(from) / ReportBuckets
	s.BucketSeconds = width.Seconds()
	bucket := func(at time.Time) int {
		if width <= 0 {
			return ReportBuckets - 1
		}
		return min(int(at.Sub(from)/width), ReportBuckets-1)
	}
	in := make([]Record, 0, len(records))
	for _, r := range records {
		if !r.At.Before(from) && !r.At.After(to) {
			in = append(in, r)
		}
	}
	slices.SortStableFunc(in, func(a, b Record) int { return a.At.Compare(b.At) })

	type acc struct {
		UsageSummary
		sum         float64
		n, overRecs int
	}
	accs := map[rowKey]*acc{}
	get := func(k rowKey, mode Enforcement) *acc {
		a := accs[k]
		if a == nil {
			a = &acc{UsageSummary: UsageSummary{Sandbox: k.sandbox, Node: k.node, Resource: k.resource, Series: make([]*float64, ReportBuckets)}}
			accs[k] = a
		}
		a.Mode = mode
		return a
	}
	add := func(a *acc, b int, mean, peak, limit float64, over bool) {
		a.sum += mean
		a.n++
		a.Peak = max(a.Peak, peak)
		a.Limit = limit
		if over {
			a.overRecs++
		}
		if a.Series[b] == nil || *a.Series[b] < peak {
			a.Series[b] = &peak
		}
	}
	cancels := map[string]*CancelSummary{}
	for _, r := range in {
		s.Invocations++
		s.Passes += r.Passes
		s.DroppedRows += r.DroppedRows
		s.DryRun = r.DryRun
		b := bucket(r.At)
		type total struct {
			mean, peak, limit float64
			nodes             int
			over              bool
			mode              Enforcement
		}
		totals := map[rowKey]*total{}
		for _, u := range r.Usage {
			add(get(rowKey{u.Node, u.Sandbox, u.Resource}, u.Mode), b, u.Mean, u.Peak, u.Limit, u.Over > 0)
			tk := rowKey{AllNodes, u.Sandbox, u.Resource}
			t := totals[tk]
			if t == nil {
				t = &total{}
				totals[tk] = t
			}
			t.mean += u.Mean
			t.peak += u.Peak
			t.limit += u.Limit
			t.nodes++
			t.over = t.over || u.Over > 0
			t.mode = u.Mode
		}
		for k, t := range totals {
			n := float64(t.nodes)
			add(get(k, t.mode), b, t.mean/n, t.peak/n, t.limit/n, t.over)
		}
		for _, t := range r.Cancelled {
			c := cancels[t.Sandbox]
			if c == nil {
				c = &CancelSummary{Sandbox: t.Sandbox, Count: map[string]int{}, Freed: map[string]map[Resource]float64{}}
				cancels[t.Sandbox] = c
			}
			for o, n := range t.Count {
				c.Count[o] += n
			}
			for o, f := range t.Freed {
				if c.Freed[o] == nil {
					c.Freed[o] = map[Resource]float64{}
				}
				c.Freed[o][t.Resource] += f
			}
		}
	}
	for _, a := range accs {
		a.Mean = a.sum / float64(a.n)
		a.OverShare = float64(a.overRecs) / float64(a.n)
		s.Usage = append(s.Usage, a.UsageSummary)
	}
	// Per sandbox and resource: the total first, then the nodes by name.
	slices.SortFunc(s.Usage, func(a, b UsageSummary) int {
		return cmp.Or(cmp.Compare(a.Sandbox, b.Sandbox), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(nodeRank(a.Node), nodeRank(b.Node)), cmp.Compare(a.Node, b.Node))
	})
	for _, k := range slices.Sorted(maps.Keys(cancels)) {
		s.Cancellations = append(s.Cancellations, *cancels[k])
	}
	if len(in) > 0 {
		last := in[len(in)-1]
		s.Plan, s.PlanAt, s.PlanTotal = append(s.Plan, last.Plan...), last.At, last.PlanTotal
	}
	return s
}

// nodeRank puts the total row before the nodes'.
func nodeRank(node string) int {
	if node == AllNodes {
		return 0
	}
	return 1
}

// ParseSince reads a report window: a Go duration ("90m", "1h30m") or a whole number of days
// ("2d"), more than zero and at most MaxHistoryRetention, the longest any record is kept.
func ParseSince(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("--since: empty; want a duration such as 30m, 1h or 2d")
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("--since %q: want a duration such as 30m, 1h or 2d (whole days only)", s)
		}
		if n > int(MaxHistoryRetention/(24*time.Hour)) {
			return 0, fmt.Errorf("--since %q: history is kept at most 7d (sandbox.history_retention), so a longer window shows nothing more", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("--since %q: want a duration such as 30m, 1h or 2d", s)
		}
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("--since %q: want a window longer than 0, such as 30m, 1h or 2d", s)
	case d > MaxHistoryRetention:
		return 0, fmt.Errorf("--since %q: history is kept at most 7d (sandbox.history_retention), so a longer window shows nothing more", s)
	}
	return d, nil
}
