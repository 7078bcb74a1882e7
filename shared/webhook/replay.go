package webhook

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/state"
)

// ReplayGuard remembers the signatures of HMAC-signed requests carried out, for as long as their
// timestamp is accepted, so that each signed request is carried out once.
type ReplayGuard interface {
	// Claim records sum until expires. A sum recorded before and not yet expired is an error
	// wrapping errReplay; failing to record is an error wrapping errReplayCheck.
	Claim(ctx context.Context, sum []byte, expires time.Time) error
}

// StoreReplays is a ReplayGuard over the state store: one item per signature, in a partition of its
// own, written only if absent and expiring when the signature's timestamp no longer verifies.
type StoreReplays struct{ Store state.Store }

var _ ReplayGuard = StoreReplays{}

// replayPKPrefix starts the partition key of a recorded signature; the hex sum follows.
const replayPKPrefix = "webhook#sig#"

// Claim implements ReplayGuard.
func (s StoreReplays) Claim(ctx context.Context, sum []byte, expires time.Time) error {
	key := state.Key{PK: replayPKPrefix + hex.EncodeToString(sum), SK: "seen"}
	_, err := s.Store.Put(ctx, state.Item{Key: key, Value: []byte("1"), ExpiresAt: expires}, state.Condition{IfAbsent: true})
	switch {
	case errors.Is(err, state.ErrConflict):
		return fmt.Errorf("%w: this signature was already used; sign each delivery anew", errReplay)
	case err != nil:
		return fmt.Errorf("%w: record signature: %w", errReplayCheck, err)
	}
	return nil
}

// replayExpiry is when a signature made at at stops verifying: verify accepts a timestamp up to
// and including MaxClockSkew old, and stores round expiry up to whole seconds.
func replayExpiry(at time.Time) time.Time { return at.Add(MaxClockSkew + time.Second) }
