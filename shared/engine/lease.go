package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/state"
)

// The per-cluster lease: one invocation at a time may act on a cluster's allocation. Plans come
// every 30 s and also from the webhook and alarms, EventBridge may deliver an event twice, and the
// breaker is check-then-act: without the lease two move runs could both read "nothing in flight"
// and both act, so the budgets would hold per run instead of per cluster.
const (
	// leaseTTL frees the lease of an invocation that died holding it. It is twice the functions'
	// 25 s Lambda timeout, so a live holder never loses it, and a dead one blocks at most two
	// 30 s cycles.
	leaseTTL = 60 * time.Second
)

// leaseRecord is who holds a cluster's lease, for the reason a loser reports.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Purpose string    `json:"purpose"`
	Since   time.Time `json:"since"`
}

// LeaseHeldError says another invocation holds the cluster's lease. It is no failure: the holder acts.
type LeaseHeldError struct {
	Cluster string
	Purpose string
	Since   time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("another invocation holds %s's allocation lease (%s, since %s)", e.Cluster, e.Purpose, e.Since.UTC().Format(time.RFC3339))
}

// takeLease takes the cluster's lease for purpose, or returns a *LeaseHeldError. release gives it
// back; it only logs a failure, since the lease expires anyway.
func (e *Engine) takeLease(ctx context.Context, name, purpose string) (release func(), err error) {
	key := state.Key{PK: pk(name), SK: leaseSK}
	rec := leaseRecord{Holder: rand.Text(), Purpose: purpose, Since: e.now()}
	version, err := state.PutJSON(ctx, e.Store, key, rec, state.Condition{IfAbsent: true}, leaseTTL, e.now())
	if errors.Is(err, state.ErrConflict) {
		held := &LeaseHeldError{Cluster: name, Purpose: "unknown"}
		if cur, _, gerr := state.GetJSON[leaseRecord](ctx, e.Store, key); gerr == nil {
			held.Purpose, held.Since = cur.Purpose, cur.Since
		}
		return nil, held
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", name, err)
	}
	return func() {
		// The invocation's context may be done by now; the release must still go out.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := e.Store.Delete(rctx, key, state.Condition{IfVersion: version}); err != nil {
			e.log().Warn("lease release failed; it expires by itself", "cluster", name, "purpose", purpose,
				"ttl", leaseTTL, "error", err)
		}
	}, nil
}
