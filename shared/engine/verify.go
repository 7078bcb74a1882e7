package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Outcomes of the verification a later cycle makes.
const (
	OutcomeArrived    = "arrived"
	OutcomeNotArrived = "not-arrived"
)

// verifyMoves checks, on a new snapshot, every move the ledger says was issued: the copy is STARTED
// on its target (arrived), still relocating (check again next cycle), or neither (it did not
// arrive: cancelled, refused after acceptance, or undone). Each verdict is stored and published.
// It returns the moves still in flight once verified, as ownMovesInFlight reads them, from the
// same read of the ledger: the planner holds their nodes as the breaker does.
func (e *Engine) verifyMoves(ctx context.Context, name string, snap *cluster.Snapshot) ([]allocation.Move, error) {
	items, err := e.Store.Query(ctx, pk(name), ledgerPrefix)
	if err != nil {
		return nil, fmt.Errorf("verify moves: %w", err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	var own []allocation.Move
	var events []bus.Event
	at := indexCopies(snap)
	heads := ledgerHeads.read(pk(name))
	for _, it := range items {
		head, err := heads.head(it)
		if err != nil {
			return nil, fmt.Errorf("verify moves %s: %w", it.Key.SK, err)
		}
		// A claimed entry whose invocation recorded no outcome (it died, or its ledger write failed
		// after the reroute) is verified like an issued one once that invocation is surely over:
		// the copy is where it is whatever the ledger says.
		settled := head.Status == statusClaimed && !head.ClaimedAt.IsZero() && e.now().Sub(head.ClaimedAt) >= leaseTTL
		if (head.Status != statusIssued && !settled) || head.Move.Phase == "" {
			if err := e.keepInFlight(ctx, name, it, head, at); err != nil {
				return nil, err
			}
			own = append(own, entryInFlight(head, at)...)
			continue
		}
		// The entry is rewritten with its outcome: read all of it.
		entry, err := state.DecodeJSON[ledgerEntry](it.Value)
		if err != nil {
			return nil, fmt.Errorf("verify moves %s: %w", it.Key.SK, err)
		}
		m := entry.Move
		onTarget, inFlight := whereIs(entry, at)
		if inFlight {
			if err := e.keepInFlight(ctx, name, it, head, at); err != nil {
				return nil, err
			}
			own = append(own, entryInFlight(head, at)...)
			continue
		}
		outcome, status := OutcomeArrived, statusArrived
		reason := fmt.Sprintf("%s[%d] is STARTED on %s", m.Index, m.Shard, m.ToName)
		if !onTarget {
			outcome, status = OutcomeNotArrived, statusLost
			reason = fmt.Sprintf("%s[%d] is neither relocating to nor started on %s", m.Index, m.Shard, m.ToName)
		}
		entry.Status, entry.Reason = status, reason
		// The group's other moves may still relocate once the first has landed.
		head.Status = status
		own = append(own, entryInFlight(head, at)...)
		if _, err := state.PutJSON(ctx, e.Store, it.Key, entry, state.Condition{IfVersion: it.Version}, e.ttl(), e.now()); err != nil {
			if !errors.Is(err, state.ErrConflict) {
				return nil, fmt.Errorf("verify moves: %s: %w", it.Key.SK, err)
			}
			e.log().Info("move already verified by another invocation", "cluster", name, "key", it.Key.SK)
			continue
		}
		e.log().Info("move verified", "cluster", name, "index", m.Index, "shard", m.Shard, "from", m.FromName, "to", m.ToName,
			"outcome", outcome, "reason", reason)
		e.metric(name, "Moves"+map[bool]string{true: "Arrived", false: "NotArrived"}[onTarget], telemetry.UnitCount, 1)
		events = append(events, bus.Event{DetailType: bus.TypeShardMoveExecuted, Time: e.now(), Detail: bus.ShardMoveExecuted{
			Cluster: name, PlanKey: entry.PlanKey, Move: m, Strategy: "verify", DryRun: false, Outcome: outcome, Reason: reason}})
	}
	heads.done()
	if len(events) == 0 {
		return own, nil
	}
	if err := e.Bus.Publish(ctx, events...); err != nil {
		return nil, fmt.Errorf("verify moves: %w", err)
	}
	return own, nil
}

// ledgerHead is what reading the ledger for verification and for the breaker needs of an entry:
// its moves without their verdicts, which are most of an entry's bytes and of the time decoding
// it (about 7 % of a production-size run's CPU decoded every entry whole, twice a cycle).
type ledgerHead struct {
	Move      headMove            `json:"move"`
	Group     []headMove          `json:"group,omitempty"`
	Status    ledgerStatus        `json:"status"`
	Strategy  config.MoveStrategy `json:"strategy,omitempty"`
	ClaimedAt time.Time           `json:"claimed_at"`
}

// headMove is a move whose verdicts are passed over when decoded.
type headMove struct {
	allocation.Move
	Verdicts skipped `json:"verdicts,omitempty"`
}

// skipped decodes any JSON value to nothing.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// moves is the entry's group, or its move alone, without verdicts.
func (h *ledgerHead) moves() []allocation.Move {
	if len(h.Group) == 0 {
		return []allocation.Move{h.Move.Move}
	}
	out := make([]allocation.Move, len(h.Group))
	for i := range h.Group {
		out[i] = h.Group[i].Move
	}
	return out
}

// copiesByIndex is a snapshot's copies by index, in snapshot order: each ledger entry is checked
// against its own index's copies instead of all of them (300 entries over 30,000 copies, twice a
// cycle, was about 3 % of a production-size run's CPU).
type copiesByIndex struct {
	snap  *cluster.Snapshot
	index map[string][]*cluster.Copy
}

func indexCopies(snap *cluster.Snapshot) *copiesByIndex {
	at := &copiesByIndex{snap: snap, index: map[string][]*cluster.Copy{}}
	for i := range snap.Copies {
		c := &snap.Copies[i]
		at.index[c.Index] = append(at.index[c.Index], c)
	}
	return at
}

// whereIs tells where an issued move stands on a snapshot: arrived on its target, or still in
// flight (relocating, or, with an allocation filter, not yet started by OpenSearch).
func whereIs(entry ledgerEntry, at *copiesByIndex) (onTarget, inFlight bool) {
	m := entry.Move
	// With an allocation filter OpenSearch picks the target: the copy has arrived once it has
	// left the source and another copy is STARTED.
	byFilter := entry.Strategy == config.StrategyAllocationFilter
	var moving, onSource bool
	for _, c := range at.index[m.Index] {
		if c.Shard != m.Shard {
			continue
		}
		if c.State == cluster.StateStarted && (c.Node == m.To || (byFilter && c.Node != m.From)) {
			onTarget = true
		}
		if c.Node == m.From {
			onSource = true
		}
		if c.Node == m.From && c.State == cluster.StateRelocating && (byFilter || c.RelocatingNode == m.To) {
			moving = true
		}
	}
	return onTarget, moving || (byFilter && onSource)
}

// ownMovesInFlight lists the moves the ledger says were issued that are still in flight on a
// fresh snapshot, for the breaker. It reads the ledger only; verification stays with Detect.
func (e *Engine) ownMovesInFlight(ctx context.Context, name string, snap *cluster.Snapshot) ([]allocation.Move, error) {
	items, err := e.Store.Query(ctx, pk(name), ledgerPrefix)
	if err != nil {
		return nil, fmt.Errorf("own moves in flight: %w", err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	var out []allocation.Move
	at := indexCopies(snap)
	heads := ledgerHeads.read(pk(name))
	for _, it := range items {
		entry, err := heads.head(it)
		if err != nil {
			return nil, fmt.Errorf("own moves in flight %s: %w", it.Key.SK, err)
		}
		out = append(out, entryInFlight(entry, at)...)
	}
	heads.done()
	return out, nil
}

// entryInFlight lists the moves of one ledger entry (and, under allocation filtering, the other
// copies its exclusion pushes off) that a snapshot shows still in flight.
func entryInFlight(entry ledgerHead, at *copiesByIndex) []allocation.Move {
	// A claimed entry is one whose invocation has not recorded an outcome: it is acting now
	// (under the lease, so not beside this caller) or it died, perhaps after its reroute or
	// exclusion went out. Until verification settles it, its copies count as in flight
	// wherever they are bound, as an exclusion's would: on their source or leaving it.
	claimed := entry.Status == statusClaimed
	issued := entry.Status == statusIssued || entry.Status == statusArrived || entry.Status == statusLost || claimed
	if !issued || entry.Move.Phase == "" {
		return nil
	}
	var out []allocation.Move
	// Verification settles the entry by its first move; the rest of its group may still be
	// relocating, and only a copy still on its way counts then.
	for _, m := range entry.moves() {
		if entry.Strategy == config.StrategyAllocationFilter && m.Phase == allocation.PhaseSwapReturn {
			// With a filter OpenSearch picks the target and no return is issued.
			continue
		}
		e := ledgerEntry{Move: m, Strategy: entry.Strategy}
		switch entry.Status {
		case statusIssued:
		case statusClaimed:
			e.Strategy = config.StrategyAllocationFilter
		default:
			e.Strategy = ""
		}
		if _, inFlight := whereIs(e, at); inFlight {
			out = append(out, m)
		}
		if entry.Strategy == config.StrategyAllocationFilter {
			out = append(out, filterCollateral(m, at)...)
		}
	}
	return out
}

// ledgerInFlightMaxAge bounds how long a ledger entry is kept alive by its moves being seen in
// flight, from when it was claimed. A relocation outlasts snapshot_ttl (2 h by default): with the
// translog replay a 20 GiB copy written at 4.2 WRITE threads takes 2 h 44 min, and OpenSearch
// takes as long. Seven days copies about 23 TiB at OpenSearch's default 40 MiB/s recovery rate,
// far past any shard; a relocation still running then is stuck, and its entry is left to expire.
const ledgerInFlightMaxAge = 7 * 24 * time.Hour

// keepAlive is whether a ledger entry's expiry is pushed on, and why.
type keepAlive struct {
	Refresh   bool
	ExpiresAt time.Time
	Reason    string
}

// ledgerKeepAlive decides whether a ledger entry whose moves a snapshot shows inFlight (of them)
// is written again to live ttl more from now. The breaker holds a node while one of shardwise's
// moves from or to it is in flight, and it knows those moves from the ledger alone: an entry that
// expired while its copy still relocates would let another move touch the same nodes. An entry
// is rewritten once less than half of ttl is left, so an entry in flight costs one write per ttl/2
// (and ttl is at least two refresh periods, so some cycle falls in that half); it stops being
// rewritten once none of its moves is in flight, or ledgerInFlightMaxAge after it was claimed.
func ledgerKeepAlive(inFlight int, claimedAt, expiresAt, now time.Time, ttl time.Duration) keepAlive {
	switch {
	case inFlight == 0:
		return keepAlive{Reason: "no move of the entry is in flight: it expires snapshot_ttl after its last write"}
	case expiresAt.IsZero():
		return keepAlive{Reason: "the entry never expires"}
	case !claimedAt.IsZero() && now.Sub(claimedAt) >= ledgerInFlightMaxAge:
		return keepAlive{Reason: fmt.Sprintf("%d of its moves still in flight %s after the claim, past the %s bound: the relocation is taken as stuck and the entry is left to expire at %s",
			inFlight, now.Sub(claimedAt).Round(time.Minute), ledgerInFlightMaxAge, expiresAt.Format(time.RFC3339))}
	case expiresAt.Sub(now) > ttl/2:
		return keepAlive{Reason: fmt.Sprintf("%d of its moves in flight; the entry lives until %s, more than half of snapshot_ttl %s",
			inFlight, expiresAt.Format(time.RFC3339), ttl)}
	}
	next := now.Add(ttl)
	return keepAlive{Refresh: true, ExpiresAt: next, Reason: fmt.Sprintf("%d of its moves still in flight: kept until %s (snapshot_ttl %s on), so the breaker goes on holding their nodes",
		inFlight, next.Format(time.RFC3339), ttl)}
}

// keepInFlight writes ledger entry it again, its bytes unchanged, to live snapshot_ttl more when
// ledgerKeepAlive says so. A conflict means another invocation rewrote the entry meanwhile, and
// so gave it a fresh expiry; any other failure is returned, so that the cycle plans nothing on a
// ledger that may forget a move in flight.
func (e *Engine) keepInFlight(ctx context.Context, name string, it state.Item, head ledgerHead, at *copiesByIndex) error {
	moves := entryInFlight(head, at)
	ka := ledgerKeepAlive(len(moves), head.ClaimedAt, it.ExpiresAt, e.now(), e.ttl())
	if !ka.Refresh {
		if len(moves) > 0 && !head.ClaimedAt.IsZero() && e.now().Sub(head.ClaimedAt) >= ledgerInFlightMaxAge {
			e.log().Warn("ledger entry in flight past its bound", "cluster", name, "key", it.Key.SK, "reason", ka.Reason)
		}
		return nil
	}
	if _, err := e.Store.Put(ctx, state.Item{Key: it.Key, Value: it.Value, ExpiresAt: ka.ExpiresAt}, state.Condition{IfVersion: it.Version}); err != nil {
		if errors.Is(err, state.ErrConflict) {
			e.log().Info("ledger entry rewritten by another invocation meanwhile", "cluster", name, "key", it.Key.SK)
			return nil
		}
		return fmt.Errorf("verify moves: keeping %s: %w", it.Key.SK, err)
	}
	e.log().Info("ledger entry kept", "cluster", name, "key", it.Key.SK, "reason", ka.Reason)
	return nil
}

// filterCollateral lists the other copies of m's index relocating off m's source node: an
// index-level exclusion moves every copy of the index that the node holds, not only the one
// planned, and each of those relocations is shardwise's doing too. The breaker holds their nodes
// as it holds the planned move's, so that no later move starts from or to a node that one of them
// still occupies. The planned copy itself goes where OpenSearch's allocator sends it, which may
// not be the planned target: its actual target is held too (random fault seed 195).
func filterCollateral(m allocation.Move, at *copiesByIndex) []allocation.Move {
	var out []allocation.Move
	for _, c := range at.index[m.Index] {
		if c.Node != m.From || c.State != cluster.StateRelocating || c.RelocatingNode == "" || c.Shard == m.Shard && c.RelocatingNode == m.To {
			continue
		}
		to := c.RelocatingNode
		if n := at.snap.NodeByID(c.RelocatingNode); n != nil {
			to = n.Name
		}
		out = append(out, allocation.NewMove(c, c.Node, m.FromName, c.RelocatingNode, to, 0, m.Phase))
	}
	return out
}
