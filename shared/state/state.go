// Package state holds shardwise's durable state: snapshots, hotspot streaks, plans, the move ledger
// and replica cooldowns. In AWS it is one DynamoDB table; locally and in tests it is Memory.
//
// The Store interface is shaped so that DynamoDB maps onto it one to one:
//
//   - Key is the table's string partition key (pk) and sort key (sk).
//   - Item.Value is one binary attribute, Item.Version a number attribute that every write sets,
//     Item.ExpiresAt the table's TTL attribute expires_at (epoch seconds).
//   - Condition becomes a ConditionExpression: IfAbsent is
//     "attribute_not_exists(pk) OR expires_at <= :now", IfVersion is "version = :v AND the item is
//     live"; a failed condition reports the stored version through
//     ReturnValuesOnConditionCheckFailure=ALL_OLD, which is what ConflictError.Got carries.
//   - Every Put stamps the item with a token of its own. The SDK retries a write whose response
//     was lost (a timeout, a dropped connection) although the write landed; the retry then fails
//     its condition against that very write. A failed condition whose ALL_OLD carries the call's
//     own token is therefore the call's success, never a conflict.
//   - Query is a Query on pk with begins_with(sk, :prefix), following LastEvaluatedKey, with
//     expired items filtered out.
//   - MaxValueBytes keeps an item under DynamoDB's 400 KB item limit.
//   - Version restarts at 1 when a write finds no live item, which one UpdateExpression cannot
//     express for an expired item still in the table; an unconditional Put or BatchPut there
//     reads the live version and writes conditioned on it, retrying on conflict.
//
// DynamoDB's TTL deletes expired items late (typically within days), so every store treats an
// item as gone from the moment its ExpiresAt passes, whether or not it is still physically there.
package state

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Limits. They are DynamoDB's, so that Memory rejects exactly what the table would.
const (
	// MaxValueBytes is the largest Item.Value. DynamoDB's item limit is 400 KB including attribute
	// names and the key; 350 KiB leaves room for pk, sk, version and expires_at with margin.
	MaxValueBytes = 350 * 1024
	// MaxPKBytes is DynamoDB's limit on a partition key value (2048 bytes).
	MaxPKBytes = 2048
	// MaxSKBytes is DynamoDB's limit on a sort key value (1024 bytes).
	MaxSKBytes = 1024
	// ExpiryResolution is the precision of Item.ExpiresAt: DynamoDB's TTL attribute holds epoch
	// seconds, so stores round ExpiresAt up to the next whole second (never expiring early).
	ExpiryResolution = time.Second
)

var (
	// ErrNotFound is returned by Get when no live item has the key.
	ErrNotFound = errors.New("state: item not found")
	// ErrConflict is matched (errors.Is) by every *ConflictError: a write's Condition did not hold.
	ErrConflict = errors.New("state: condition failed")
	// ErrTooLarge is returned when an Item.Value exceeds MaxValueBytes.
	ErrTooLarge = errors.New("state: value too large")
	// ErrInvalid is returned for requests no store can serve: an empty or oversized key, a
	// malformed Condition, duplicate keys in one batch. It is a caller bug, never retried.
	ErrInvalid = errors.New("state: invalid request")
)

// Key addresses one item. Both parts are required, non-empty UTF-8 (DynamoDB key attributes
// cannot be empty).
type Key struct{ PK, SK string }

func (k Key) String() string { return fmt.Sprintf("pk=%q sk=%q", k.PK, k.SK) }

// Validate reports, wrapping ErrInvalid, why DynamoDB would refuse k as a key.
func (k Key) Validate() error {
	if err := checkKeyPart("pk", k.PK, MaxPKBytes); err != nil {
		return err
	}
	return checkKeyPart("sk", k.SK, MaxSKBytes)
}

func checkKeyPart(name, v string, maxBytes int) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: empty %s", ErrInvalid, name)
	case len(v) > maxBytes:
		return fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", ErrInvalid, name, len(v), maxBytes)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, name)
	}
	return nil
}

// Item is one stored value.
type Item struct {
	Key Key
	// Value is opaque to the store: callers put JSON or Compress'd bytes. At most MaxValueBytes.
	Value []byte
	// Version is set by the store and ignored on input: 1 when a write creates the item (none
	// was live: absent, deleted or expired), else the previous version + 1.
	Version int64
	// ExpiresAt is when the item disappears; zero means never. Stored at ExpiryResolution.
	ExpiresAt time.Time
}

// Expired reports whether the item is gone at now: an item is live strictly before ExpiresAt.
func (it Item) Expired(now time.Time) bool {
	return !it.ExpiresAt.IsZero() && !now.Before(it.ExpiresAt)
}

// Condition guards a write. The zero value is unconditional; at most one field may be set.
type Condition struct {
	// IfAbsent: write only when no live item has the key (an expired one counts as absent).
	// This is how a ledger entry claims a move exactly once.
	IfAbsent bool
	// IfVersion: write only when the live item has exactly this version (optimistic locking for
	// read-modify-write). A missing or expired item fails it with Got = 0.
	IfVersion int64
}

func (c Condition) validate() error {
	switch {
	case c.IfAbsent && c.IfVersion != 0:
		return fmt.Errorf("%w: condition sets both IfAbsent and IfVersion %d", ErrInvalid, c.IfVersion)
	case c.IfVersion < 0:
		return fmt.Errorf("%w: condition IfVersion %d is negative", ErrInvalid, c.IfVersion)
	}
	return nil
}

// want describes what the condition expected, for ConflictError.Want.
func (c Condition) want() string {
	if c.IfAbsent {
		return "absent"
	}
	return fmt.Sprintf("version %d", c.IfVersion)
}

// holds reports whether c allows a write given the live item's version (0 when none is live).
func (c Condition) holds(liveVersion int64) bool {
	switch {
	case c.IfAbsent:
		return liveVersion == 0
	case c.IfVersion != 0:
		return liveVersion == c.IfVersion
	}
	return true
}

// ConflictError is a write whose Condition did not hold. errors.Is(err, ErrConflict) is true.
type ConflictError struct {
	Key Key
	// Want is what the condition expected: "absent" or "version N".
	Want string
	// Got is the live item's version, 0 when no live item has the key.
	Got int64
}

func (e *ConflictError) Error() string {
	if e.Got == 0 {
		return fmt.Sprintf("state: condition failed on %s: want %s, got no live item", e.Key, e.Want)
	}
	return fmt.Sprintf("state: condition failed on %s: want %s, got version %d", e.Key, e.Want, e.Got)
}

// Is makes every ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ItemError names the item of a batch that failed, wrapping the cause.
type ItemError struct {
	Key Key
	Err error
}

func (e *ItemError) Error() string { return fmt.Sprintf("item %s: %v", e.Key, e.Err) }
func (e *ItemError) Unwrap() error { return e.Err }

// Store is the durable state of all shardwise functions.
//
// Every method returns ctx's error (wrapped) when ctx is done before the call starts.
type Store interface {
	// Get returns the live item with key, or ErrNotFound.
	Get(ctx context.Context, key Key) (Item, error)
	// Put writes item (its Version is ignored) if cond holds and returns the stored item with its
	// new Version and ExpiresAt rounded to ExpiryResolution. A failed cond is a *ConflictError.
	Put(ctx context.Context, item Item, cond Condition) (Item, error)
	// Delete removes the item if cond holds. IfVersion guards the delete; IfAbsent is ErrInvalid.
	// Deleting an item that is not live is not an error, with or without IfVersion: the delete's
	// aim already holds, and that is how a retried delete whose first attempt landed reads.
	Delete(ctx context.Context, key Key, cond Condition) error
	// Query returns the live items of partition pk whose SK starts with skPrefix ("" for all),
	// sorted by SK in byte order.
	Query(ctx context.Context, pk, skPrefix string) ([]Item, error)
	// BatchPut writes items unconditionally, each versioned as Put would. Every item is checked
	// before anything is written, so an invalid or oversized item (an *ItemError naming it) or
	// duplicate keys leave the store unchanged. A failure while writing (DynamoDB splits a batch
	// into several requests) may leave a subset written; the error names the first unwritten key.
	BatchPut(ctx context.Context, items []Item) error
}

// Clock tells a store the time, so that expiry follows the simulator's virtual clock.
type Clock func() time.Time

// Every Store checks an operation's arguments the same way, before it does anything: the context,
// then the arguments. The errors name the operation.

func getArgs(ctx context.Context, key Key) error {
	return opErr(fmt.Sprintf("get %s", key), ctx.Err(), key.Validate)
}

func putArgs(ctx context.Context, item Item, cond Condition) error {
	return opErr(fmt.Sprintf("put %s", item.Key), ctx.Err(), func() error { return checkPut(item) }, cond.validate)
}

func deleteArgs(ctx context.Context, key Key, cond Condition) error {
	err := opErr(fmt.Sprintf("delete %s", key), ctx.Err(), key.Validate, cond.validate)
	if err == nil && cond.IfAbsent {
		err = fmt.Errorf("delete %s: %w: IfAbsent cannot guard a delete", key, ErrInvalid)
	}
	return err
}

func queryArgs(ctx context.Context, pk, skPrefix string) error {
	return opErr(fmt.Sprintf("query pk=%q sk prefix %q", pk, skPrefix), ctx.Err(), func() error { return checkQuery(pk, skPrefix) })
}

func batchPutArgs(ctx context.Context, items []Item) error {
	return opErr(fmt.Sprintf("batch put %d items", len(items)), ctx.Err(), func() error { return checkBatch(items) })
}

// opErr is the first of ctxErr and the checks' errors, wrapped with the operation's name.
func opErr(op string, ctxErr error, checks ...func() error) error {
	if ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

// checkPut validates one item of a Put or BatchPut.
func checkPut(item Item) error {
	if err := item.Key.Validate(); err != nil {
		return err
	}
	if len(item.Value) > MaxValueBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(item.Value), MaxValueBytes)
	}
	return nil
}

// checkBatch validates a BatchPut, naming the failing item.
func checkBatch(items []Item) error {
	seen := make(map[Key]struct{}, len(items))
	for _, it := range items {
		if err := checkPut(it); err != nil {
			return &ItemError{Key: it.Key, Err: err}
		}
		if _, dup := seen[it.Key]; dup {
			// DynamoDB refuses two writes to one item in a single batch or transaction.
			return &ItemError{Key: it.Key, Err: fmt.Errorf("%w: key appears twice in one batch", ErrInvalid)}
		}
		seen[it.Key] = struct{}{}
	}
	return nil
}

// checkQuery validates Query arguments.
func checkQuery(pk, skPrefix string) error {
	if err := checkKeyPart("pk", pk, MaxPKBytes); err != nil {
		return err
	}
	if len(skPrefix) > MaxSKBytes {
		return fmt.Errorf("%w: sk prefix is %d bytes, over the %d-byte limit", ErrInvalid, len(skPrefix), MaxSKBytes)
	}
	if !utf8.ValidString(skPrefix) {
		return fmt.Errorf("%w: sk prefix is not valid UTF-8", ErrInvalid)
	}
	return nil
}

// roundExpiry rounds t up to ExpiryResolution, in UTC, keeping zero as zero.
func roundExpiry(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return time.Unix(sec, 0).UTC()
}
