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
//
// Ownership. Each taking draws a random owner token, kept in the lease record. The record's item
// is never deleted and never expires in the store, so its version only grows: a release or renewal
// reads the record, checks that the token is its own, and writes conditioned on the version it
// read. A holder that ran past its expiry, whose lease another invocation then took, therefore
// finds a foreign token (or a newer version) and changes nothing: its late release cannot free
// the new holder's lease.
//
// Expiry and clock skew. Expiry is judged from the record (Since + leaseTTL) against the clock of
// the invocation judging it, and invocations run on different hosts. Their clocks may differ by
// up to leaseClockSkew (Lambda hosts keep NTP time within milliseconds; 5 s is ample margin): a
// taker treats a lease as expired only leaseClockSkew after its expiry, and a holder trusts its
// own lease only until leaseClockSkew before it (Renew refuses after that). With clocks further
// apart than leaseClockSkew, two holders could overlap.
const (
	// leaseTTL frees the lease of an invocation that died holding it. It is twice the functions'
	// 25 s Lambda timeout, so a live holder never loses it, and a dead one blocks at most two
	// 30 s cycles.
	leaseTTL = 60 * time.Second
	// leaseClockSkew bounds the difference between two invocations' clocks (see above).
	leaseClockSkew = 5 * time.Second
)

// leaseRecord is who holds a cluster's lease. Holder is the owner token; an empty Holder is a
// released lease.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Purpose string    `json:"purpose"`
	Since   time.Time `json:"since"`
	// Expires is when the holder's claim ends (Since + leaseTTL, moved on by Renew).
	Expires time.Time `json:"expires"`
}

// free reports whether a taker at now may take the lease rec describes.
func (rec leaseRecord) free(now time.Time) bool {
	return rec.Holder == "" || !now.Before(rec.Expires.Add(leaseClockSkew))
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

// errLeaseLost: the lease is no longer this holder's (it expired and another took it, or it was
// released).
var errLeaseLost = errors.New("allocation lease lost")

// lease is one taking of a cluster's lease.
type lease struct {
	e       *Engine
	key     state.Key
	name    string
	purpose string
	token   string
}

// takeLease takes the cluster's lease for purpose, or returns a *LeaseHeldError.
func (e *Engine) takeLease(ctx context.Context, name, purpose string) (*lease, error) {
	l := &lease{e: e, key: state.Key{PK: pk(name), SK: leaseSK}, name: name, purpose: purpose, token: rand.Text()}
	now := e.now()
	rec := leaseRecord{Holder: l.token, Purpose: purpose, Since: now, Expires: now.Add(leaseTTL)}
	cur, version, err := state.GetJSON[leaseRecord](ctx, e.Store, l.key)
	cond := state.Condition{IfAbsent: true}
	switch {
	case errors.Is(err, state.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("lease %s: %w", name, err)
	case !cur.free(now):
		return nil, &LeaseHeldError{Cluster: name, Purpose: cur.Purpose, Since: cur.Since}
	default:
		cond = state.Condition{IfVersion: version}
	}
	// No store expiry: the item's version must only grow (see the ownership note above).
	if _, err := state.PutJSON(ctx, e.Store, l.key, rec, cond, 0, now); err != nil {
		if errors.Is(err, state.ErrConflict) {
			held := &LeaseHeldError{Cluster: name, Purpose: "unknown"}
			if cur, _, gerr := state.GetJSON[leaseRecord](ctx, e.Store, l.key); gerr == nil {
				held.Purpose, held.Since = cur.Purpose, cur.Since
			}
			return nil, held
		}
		return nil, fmt.Errorf("lease %s: %w", name, err)
	}
	return l, nil
}

// own reads the lease record and its version, failing with errLeaseLost unless this holder
// still owns it.
func (l *lease) own(ctx context.Context) (leaseRecord, int64, error) {
	cur, version, err := state.GetJSON[leaseRecord](ctx, l.e.Store, l.key)
	if err != nil {
		return cur, 0, fmt.Errorf("lease %s: %w", l.name, err)
	}
	if cur.Holder != l.token {
		return cur, 0, fmt.Errorf("lease %s: %w: now held for %q since %s", l.name, errLeaseLost, cur.Purpose, cur.Since.UTC().Format(time.RFC3339))
	}
	return cur, version, nil
}

// Renew extends the lease by leaseTTL from now, if this holder still owns it and its expiry, less
// the clock skew, has not passed. An error means the lease may be another's: act no further.
func (l *lease) Renew(ctx context.Context) error {
	cur, version, err := l.own(ctx)
	if err != nil {
		return err
	}
	now := l.e.now()
	if !now.Before(cur.Expires.Add(-leaseClockSkew)) {
		return fmt.Errorf("lease %s: %w: expired at %s (clock skew allowance %s)", l.name, errLeaseLost, cur.Expires.UTC().Format(time.RFC3339), leaseClockSkew)
	}
	cur.Expires = now.Add(leaseTTL)
	if _, err := state.PutJSON(ctx, l.e.Store, l.key, cur, state.Condition{IfVersion: version}, 0, now); err != nil {
		return fmt.Errorf("lease %s: renew: %w", l.name, err)
	}
	return nil
}

// Release gives the lease back if this holder still owns it. It only logs a failure, since the
// lease expires anyway.
func (l *lease) Release() {
	// The invocation's context may be done by now; the release must still go out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(context.Background()), 5*time.Second)
	defer cancel()
	_, version, err := l.own(ctx)
	if err == nil {
		_, err = state.PutJSON(ctx, l.e.Store, l.key, leaseRecord{}, state.Condition{IfVersion: version}, 0, l.e.now())
	}
	if err != nil {
		l.e.log().Warn("lease release skipped or failed; it expires by itself", "cluster", l.name, "purpose", l.purpose,
			"ttl", leaseTTL, "error", err)
	}
}
