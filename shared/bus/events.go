// Package bus holds shardwise's events — their detail types and JSON shapes — and the publishers that
// put them on an EventBridge bus (source "shardwise") or keep them in memory for the local runner.
// Every event carries its reasons, so the bus is the audit log.
package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/sandbox"
)

// Source is the EventBridge source of every shardwise event.
const Source = "shardwise"

// Detail types.
const (
	TypeStatsIngested     = "Stats Ingested"
	TypeMovesPlanned      = "Moves Planned"
	TypeShardMoveExecuted = "Shard Move Executed"
	TypeReplicasChanged   = "Replicas Changed"
	TypeScaleUpNeeded     = "Scale Up Needed"
	// TypeHotspotUnrelieved: hot nodes the planner found no step for, without a capacity proof.
	TypeHotspotUnrelieved = "Hotspot Unrelieved"
	TypeSandboxEnforced   = "Sandbox Enforced"
)

// Event is one event to publish.
type Event struct {
	DetailType string
	Detail     any
	Time       time.Time
}

// StatsIngested says a snapshot is stored; it carries the snapshot's key, not the snapshot.
type StatsIngested struct {
	Cluster     string    `json:"cluster"`
	SnapshotKey string    `json:"snapshot_key"`
	At          time.Time `json:"at"`
	Nodes       int       `json:"nodes"`
	Copies      int       `json:"copies"`
	// Stale lists figures older than the freshness limit, with their age.
	Stale []string `json:"stale,omitempty"`
}

// MovesPlanned carries a plan's key and its moves with their reasons.
type MovesPlanned struct {
	Cluster     string               `json:"cluster"`
	PlanKey     string               `json:"plan_key"`
	SnapshotKey string               `json:"snapshot_key"`
	Hotspots    []allocation.Hotspot `json:"hotspots"`
	Moves       []allocation.Move    `json:"moves"`
	Notes       []allocation.Note    `json:"notes,omitempty"`
}

// ShardMoveExecuted reports what the move function did with one planned move.
type ShardMoveExecuted struct {
	Cluster  string          `json:"cluster"`
	PlanKey  string          `json:"plan_key"`
	Move     allocation.Move `json:"move"`
	Strategy string          `json:"strategy"`
	DryRun   bool            `json:"dry_run"`
	// Outcome: executed, dry-run, refused (by OpenSearch), skipped (decider re-check, budget, ledger).
	Outcome string         `json:"outcome"`
	Reason  string         `json:"reason"`
	Breaker safety.Verdict `json:"breaker"`
}

// ReplicaChange is one index's change in a ReplicasChanged event.
type ReplicaChange struct {
	Index   string  `json:"index"`
	Setting string  `json:"setting"`
	From    int     `json:"from"`
	To      int     `json:"to"`
	Kind    string  `json:"kind"`
	L       float64 `json:"l"`
	N       int     `json:"n"`
	S       int     `json:"s"`
	Reason  string  `json:"reason"`
}

// ReplicasChanged reports replica changes applied (or that would be, in dry-run).
type ReplicasChanged struct {
	Cluster string          `json:"cluster"`
	DryRun  bool            `json:"dry_run"`
	Changes []ReplicaChange `json:"changes"`
}

// ScaleUpNeeded says moving shards cannot fix the write load, naming the bound that proves it and
// its numbers.
type ScaleUpNeeded struct {
	Cluster string   `json:"cluster"`
	Nodes   []string `json:"nodes"`
	Reason  string   `json:"reason"`
	Bound   string   `json:"bound,omitempty"`
	Value   float64  `json:"value,omitempty"`
	Limit   float64  `json:"limit,omitempty"`
	Notice
}

// Notice says whether an event of a standing signal is for people now: every plan that finds the
// signal publishes its event (the bus is the audit log), and only those with Notify set reach
// the alert topic, when the signal starts or changes and not within the cluster's cool-down of the
// last notification (notify_cooldown). NotifyReason says which.
type Notice struct {
	Notify       bool   `json:"notify"`
	NotifyReason string `json:"notify_reason,omitempty"`
}

// HotspotUnrelieved reports hot nodes the planner found no step for this cycle while nothing was
// relocating off them and no bound proved the cluster short of room. It is the planner's shortfall,
// for the people who watch it; it never asks for nodes.
type HotspotUnrelieved struct {
	Cluster    string                  `json:"cluster"`
	PlanKey    string                  `json:"plan_key"`
	Unrelieved []allocation.Unrelieved `json:"unrelieved"`
	Notice
}

// SandboxEnforced reports what the sandbox function found and did: a workload-management sync,
// or one sandbox's cancellations of one invocation (one event per sandbox per invocation, however
// many passes its loop made).
type SandboxEnforced struct {
	Cluster string   `json:"cluster"`
	Mode    string   `json:"mode"`
	Actions []string `json:"actions"`
	Reason  string   `json:"reason"`
	// Cancellations summarizes the sandbox's cancellations, with each request's figures and
	// reason in a bounded list.
	Cancellations *SandboxCancellations `json:"cancellations,omitempty"`
}

// MaxEnforcedRequests bounds the requests one Sandbox Enforced event lists, so that the event
// stays far below EventBridge's 256 KB whatever the flood: the counts and shares cover them all.
const MaxEnforcedRequests = 25

// SandboxCancellations is one sandbox's cancelled (or, in dry-run, would-be cancelled) search
// requests over one invocation.
type SandboxCancellations struct {
	Sandbox string `json:"sandbox"`
	DryRun  bool   `json:"dry_run"`
	// Passes is the invocation's looks at the cluster's tasks; Count the requests planned for
	// cancellation over them, Outcomes those by outcome (executed, dry-run, skipped, gone, failed).
	Passes   int            `json:"passes"`
	Count    int            `json:"count"`
	Outcomes map[string]int `json:"outcomes"`
	// Freed sums, per resource, the shares of a node's resource the executed cancellations freed
	// (1 is one whole node's CPU or heap); WouldFree those of the others.
	Freed     map[string]float64 `json:"freed"`
	WouldFree map[string]float64 `json:"would_free,omitempty"`
	// Requests are the first MaxEnforcedRequests requests, in the order they were planned;
	// Omitted counts the rest.
	Requests []SandboxCancellation `json:"requests"`
	Omitted  int                   `json:"omitted,omitempty"`
}

// SandboxCancellation is one cancelled (or, in dry-run, would-be cancelled) search request and
// the figures that chose it: the sandbox's share of the node's resource before and after, and
// its limit there.
type SandboxCancellation struct {
	Task     string `json:"task"`
	OpaqueID string `json:"opaque_id,omitempty"`
	Node     string `json:"node"`
	Resource string `json:"resource"`
	Enforce  string `json:"enforcement"`
	// Kind is cancel (running) or reject (queued).
	Kind string `json:"kind"`
	sandbox.Figures
	Outcome string `json:"outcome"`
	// Reason is why the request was chosen, Why why its outcome is what it is.
	Reason string `json:"reason"`
	Why    string `json:"why"`
}

// Publisher puts events on a bus.
type Publisher interface {
	Publish(ctx context.Context, events ...Event) error
}

// Memory keeps published events in order; the local runner and tests read them back.
type Memory struct {
	mu     sync.Mutex
	events []Recorded
}

// Recorded is an event as published, with its detail as JSON.
type Recorded struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

var _ Publisher = (*Memory)(nil)

// Publish records the events.
func (m *Memory) Publish(_ context.Context, events ...Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range events {
		b, err := json.Marshal(e.Detail)
		if err != nil {
			return fmt.Errorf("publish %s: %w", e.DetailType, err)
		}
		m.events = append(m.events, Recorded{DetailType: e.DetailType, Source: Source, Time: e.Time, Detail: b})
	}
	return nil
}

// Record appends events published elsewhere, as they were recorded there.
func (m *Memory) Record(events ...Recorded) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, events...)
}

// Events returns a copy of what was published.
func (m *Memory) Events() []Recorded {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Recorded(nil), m.events...)
}

// Drain returns what was published and forgets it.
func (m *Memory) Drain() []Recorded {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.events
	m.events = nil
	return out
}
