package state

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's key and time-to-live attributes: the deployed template (shared/deploy) and the
// tests' tables (shared/state/dynamotest) declare the table with these.
const (
	AttrPartitionKey = "pk"
	AttrSortKey      = "sk"
	AttrExpires      = "expires_at"
)

// The table's other attribute names (see the package comment for the layout).
const (
	attrPK      = AttrPartitionKey
	attrSK      = AttrSortKey
	attrValue   = "v"
	attrVersion = "ver"
	attrExpires = AttrExpires
	// attrToken holds the token of the Put that wrote the item (see writeToken).
	attrToken = "tok"
)

// DynamoDB limits and retry settings, in one place.
const (
	// batchWritePage is BatchWriteItem's limit of 25 put or delete requests per call.
	batchWritePage = 25
	// batchGetPage is BatchGetItem's limit of 100 keys per call.
	batchGetPage = 100
	// retryMaxAttempts bounds the SDK's attempts per call and BatchPut's rounds over
	// unprocessed items: 10 is botocore's DynamoDB policy (botocore/data/_retry.json), above the
	// Go SDK's default of 4 because DynamoDB throttles in short bursts that a few more tries outlast.
	retryMaxAttempts = 10
	// retryBaseDelay is the Go SDK's own DynamoDB base backoff for transient errors
	// (service/dynamodb resolveRetryer); throttling backs off from 1 s, the SDK's fixed throttle base.
	retryBaseDelay = 25 * time.Millisecond
	// retryMaxBackoff caps one backoff so that nine throttled retries (at most 1+2×8 = 17 s) fit
	// in the 30 s cadence: past that the next cycle has fresher data to write.
	retryMaxBackoff = 2 * time.Second
	// versionRaceAttempts bounds an unconditional Put's read-free retries. Each lost attempt means
	// another write to the same key landed in between; a key has one writing function per
	// cluster, so 50 losses in a row means a runaway writer, not contention.
	versionRaceAttempts = 50
)

// Condition expressions. An item is live while it has no expires_at or expires_at > :now, the
// negation of Item.Expired at whole seconds (expires_at is whole seconds and :now is the floor
// of the clock, so expires_at <= :now exactly when now >= ExpiresAt).
const (
	condAbsent  = "attribute_not_exists(" + attrPK + ") OR " + attrExpires + " <= :now"
	condVersion = attrVersion + " = :ver AND (attribute_not_exists(" + attrExpires + ") OR " + attrExpires + " > :now)"
	filterLive  = "attribute_not_exists(" + attrExpires + ") OR " + attrExpires + " > :now"
)

// DynamoAPI is the part of *dynamodb.Client that Dynamo uses, so tests can wrap or fake it.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	// BatchGetItem reads the live versions a BatchPut continues from.
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Dynamo is the Store of the deployed functions: one DynamoDB table keyed by pk and sk. It is
// safe for concurrent use; DynamoDB's conditional writes make each write atomic.
//
// Build its client with WithDynamoRetry so throttled calls are retried with backoff.
type Dynamo struct {
	client DynamoAPI
	table  string
	clock  Clock
	// backoff spaces BatchPut's rounds over unprocessed items like the SDK spaces throttled
	// retries: DynamoDB leaves items unprocessed when it throttles.
	backoff aws.Retryer
}

var _ Store = (*Dynamo)(nil)

// NewDynamo returns a store on table through client, reading the time from clock (time.Now when
// nil). The table must exist with CreateTable's layout.
func NewDynamo(client DynamoAPI, table string, clock Clock) *Dynamo {
	if clock == nil {
		clock = time.Now
	}
	return &Dynamo{client: client, table: table, clock: clock, backoff: NewDynamoRetryer()}
}

// NewDynamoRetryer returns the SDK's standard retryer with shardwise's DynamoDB attempts and
// backoff. Each client needs its own: the retryer holds the client's retry token bucket.
func NewDynamoRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = retryMaxAttempts
		o.BaseDelay = retryBaseDelay
		o.MaxBackoff = retryMaxBackoff
	})
}

// WithDynamoRetry is a dynamodb client option installing NewDynamoRetryer:
// dynamodb.NewFromConfig(cfg, state.WithDynamoRetry).
func WithDynamoRetry(o *dynamodb.Options) { o.Retryer = NewDynamoRetryer() }

// Get implements Store.
func (d *Dynamo) Get(ctx context.Context, key Key) (Item, error) {
	if err := getArgs(ctx, key); err != nil {
		return Item{}, err
	}
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            keyAttrs(key),
		ConsistentRead: aws.Bool(true), // a read-modify-write must see the last write
	})
	if err != nil {
		return Item{}, fmt.Errorf("get %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return Item{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	it, err := decodeItem(out.Item)
	if err != nil {
		return Item{}, fmt.Errorf("get %s: %w", key, err)
	}
	if it.Expired(d.clock()) {
		return Item{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return it, nil
}

// Put implements Store.
func (d *Dynamo) Put(ctx context.Context, item Item, cond Condition) (Item, error) {
	if err := putArgs(ctx, item, cond); err != nil {
		return Item{}, err
	}
	now := d.clock()
	token := writeToken()
	if cond.IfAbsent || cond.IfVersion != 0 {
		// IfAbsent is "live version 0", which is what IfVersion holds when IfAbsent is set.
		stored, got, err := d.putIf(ctx, item, cond.IfVersion, now, token)
		if errors.Is(err, errCheckFailed) {
			return Item{}, &ConflictError{Key: item.Key, Want: cond.want(), Got: got}
		}
		if err != nil {
			return Item{}, fmt.Errorf("put %s: %w", item.Key, err)
		}
		return stored, nil
	}
	// Unconditional: the new version depends on the live one, which no single write expression
	// can compute for an expired item still in the table. Guess "none live" (one call for a new
	// key), and on a miss take the live version from the failed write's ALL_OLD and try again.
	var live int64
	for range versionRaceAttempts {
		stored, got, err := d.putIf(ctx, item, live, now, token)
		if err == nil {
			return stored, nil
		}
		if !errors.Is(err, errCheckFailed) {
			return Item{}, fmt.Errorf("put %s: %w", item.Key, err)
		}
		live = got
	}
	return Item{}, fmt.Errorf("put %s: lost %d races in a row to concurrent writers", item.Key, versionRaceAttempts)
}

// errCheckFailed marks a ConditionalCheckFailedException inside this file; callers turn it into
// a ConflictError or a retry.
var errCheckFailed = errors.New("condition check failed")

// writeToken returns a token unique to one Put call. Every attempt of the call, the SDK's retries
// included, writes it into the item, so a failed condition whose stored item (ALL_OLD) carries it
// is the call's own earlier attempt: it landed, and its response was lost. DynamoDB does that
// when a response times out or a connection drops after the write committed, and the SDK then
// sends the same request again.
func writeToken() string { return rand.Text() }

// putIf writes item as version live+1 if the live version is live (0: no live item). When the
// condition fails it returns errCheckFailed and the live version DynamoDB reported, unless the
// stored item is this call's own write (token), which is success.
func (d *Dynamo) putIf(ctx context.Context, item Item, live int64, now time.Time, token string) (Item, int64, error) {
	stored := Item{Key: item.Key, Value: bytes.Clone(item.Value), Version: live + 1, ExpiresAt: roundExpiry(item.ExpiresAt)}
	attrs := itemAttrs(stored)
	attrs[attrToken] = &types.AttributeValueMemberS{Value: token}
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(d.table),
		Item:                                attrs,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	setCondition(&in.ConditionExpression, &in.ExpressionAttributeValues, live, now)
	if _, err := d.client.PutItem(ctx, in); err != nil {
		if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
			if own, ok := ownWrite(ccf.Item, token); ok {
				return own, 0, nil
			}
			got, decodeErr := liveVersion(ccf.Item, now)
			if decodeErr != nil {
				return Item{}, 0, decodeErr
			}
			return Item{}, got, errCheckFailed
		}
		return Item{}, 0, err
	}
	return stored, 0, nil
}

// ownWrite returns the stored item a failed condition reported when token wrote it.
func ownWrite(old map[string]types.AttributeValue, token string) (Item, bool) {
	tok, ok := old[attrToken].(*types.AttributeValueMemberS)
	if !ok || tok.Value != token {
		return Item{}, false
	}
	it, err := decodeItem(old)
	if err != nil {
		return Item{}, false
	}
	return it, true
}

// setCondition sets a write's condition: no live item when live is 0, else live item at version
// live.
func setCondition(expr **string, values *map[string]types.AttributeValue, live int64, now time.Time) {
	*values = map[string]types.AttributeValue{":now": epochAttr(now.Unix())}
	if live == 0 {
		*expr = aws.String(condAbsent)
		return
	}
	*expr = aws.String(condVersion)
	(*values)[":ver"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(live, 10)}
}

// Delete implements Store.
func (d *Dynamo) Delete(ctx context.Context, key Key, cond Condition) error {
	if err := deleteArgs(ctx, key, cond); err != nil {
		return err
	}
	in := &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: keyAttrs(key)}
	now := d.clock()
	if cond.IfVersion != 0 {
		setCondition(&in.ConditionExpression, &in.ExpressionAttributeValues, cond.IfVersion, now)
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	_, err := d.client.DeleteItem(ctx, in)
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		got, decodeErr := liveVersion(ccf.Item, now)
		if decodeErr != nil {
			return fmt.Errorf("delete %s: %w", key, decodeErr)
		}
		if got == 0 {
			// Nothing live to delete: the delete's aim holds. A retried delete whose first
			// attempt landed reads this way.
			return nil
		}
		return &ConflictError{Key: key, Want: cond.want(), Got: got}
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Query implements Store.
func (d *Dynamo) Query(ctx context.Context, pk, skPrefix string) ([]Item, error) {
	if err := queryArgs(ctx, pk, skPrefix); err != nil {
		return nil, err
	}
	keyCond := attrPK + " = :pk"
	values := map[string]types.AttributeValue{
		":pk":  &types.AttributeValueMemberS{Value: pk},
		":now": epochAttr(d.clock().Unix()),
	}
	// DynamoDB rejects an empty string in a key condition, and "" matches every SK anyway.
	if skPrefix != "" {
		keyCond += " AND begins_with(" + attrSK + ", :prefix)"
		values[":prefix"] = &types.AttributeValueMemberS{Value: skPrefix}
	}
	// The filter runs after each 1 MB page is read, so a page may hold only expired items and
	// still have a next page: the paginator follows LastEvaluatedKey until there is none.
	pages := dynamodb.NewQueryPaginator(d.client, &dynamodb.QueryInput{
		TableName:                 aws.String(d.table),
		KeyConditionExpression:    aws.String(keyCond),
		FilterExpression:          aws.String(filterLive),
		ExpressionAttributeValues: values,
		ConsistentRead:            aws.Bool(true),
	})
	var out []Item
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("query pk=%q sk prefix %q: %w", pk, skPrefix, err)
		}
		for _, attrs := range page.Items {
			it, err := decodeItem(attrs)
			if err != nil {
				return nil, fmt.Errorf("query pk=%q sk prefix %q: %w", pk, skPrefix, err)
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// BatchPut implements Store. It reads the live versions of all keys with BatchGetItem, then
// writes pages of 25 with BatchWriteItem, which takes no conditions: a Put racing a BatchPut on
// the same key can be overwritten by a version computed before it. BatchPut is for items one
// writer owns, such as snapshot chunks; use Put with a Condition where writers compete.
func (d *Dynamo) BatchPut(ctx context.Context, items []Item) error {
	if err := batchPutArgs(ctx, items); err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	live, err := d.liveVersions(ctx, items)
	if err != nil {
		return fmt.Errorf("batch put %d items: %w", len(items), err)
	}
	for page := range slices.Chunk(items, batchWritePage) {
		if err := d.writePage(ctx, page, live); err != nil {
			return fmt.Errorf("batch put %d items: %w", len(items), err)
		}
	}
	return nil
}

// liveVersions returns the live version of each key of items that has one.
func (d *Dynamo) liveVersions(ctx context.Context, items []Item) (map[Key]int64, error) {
	now := d.clock()
	live := make(map[Key]int64, len(items))
	for page := range slices.Chunk(items, batchGetPage) {
		keys := make([]map[string]types.AttributeValue, len(page))
		for i, it := range page {
			keys[i] = keyAttrs(it.Key)
		}
		pending := map[string]types.KeysAndAttributes{d.table: {
			Keys:                 keys,
			ConsistentRead:       aws.Bool(true),
			ProjectionExpression: aws.String(attrPK + ", " + attrSK + ", " + attrVersion + ", " + attrExpires),
		}}
		for attempt := 1; ; attempt++ {
			out, err := d.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("read versions: %w", err)
			}
			for _, attrs := range out.Responses[d.table] {
				it, err := decodeItem(attrs)
				if err != nil {
					return nil, fmt.Errorf("read versions: %w", err)
				}
				if !it.Expired(now) {
					live[it.Key] = it.Version
				}
			}
			pending = out.UnprocessedKeys
			if len(pending) == 0 {
				break
			}
			left := len(pending[d.table].Keys)
			if attempt == retryMaxAttempts {
				return nil, fmt.Errorf("read versions: %d keys still unprocessed after %d attempts", left, attempt)
			}
			if err := d.pause(ctx, attempt); err != nil {
				return nil, fmt.Errorf("read versions: %d keys unprocessed: %w", left, err)
			}
		}
	}
	return live, nil
}

// writePage writes up to 25 items with BatchWriteItem, resending what DynamoDB leaves
// unprocessed. Its error is an *ItemError naming the first item of page not known written.
func (d *Dynamo) writePage(ctx context.Context, page []Item, live map[Key]int64) error {
	requests := make([]types.WriteRequest, len(page))
	for i, it := range page {
		stored := Item{Key: it.Key, Value: it.Value, Version: live[it.Key] + 1, ExpiresAt: roundExpiry(it.ExpiresAt)}
		requests[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: itemAttrs(stored)}}
	}
	pending := map[string][]types.WriteRequest{d.table: requests}
	for attempt := 1; ; attempt++ {
		out, err := d.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return &ItemError{Key: firstPending(page, pending[d.table]), Err: err}
		}
		pending = out.UnprocessedItems
		if len(pending) == 0 {
			return nil
		}
		left := pending[d.table]
		if attempt == retryMaxAttempts {
			return &ItemError{Key: firstPending(page, left), Err: fmt.Errorf("%d items still unprocessed after %d attempts", len(left), attempt)}
		}
		if err := d.pause(ctx, attempt); err != nil {
			return &ItemError{Key: firstPending(page, left), Err: fmt.Errorf("%d items unprocessed: %w", len(left), err)}
		}
	}
}

// firstPending returns the key of the first item of page that is among requests.
func firstPending(page []Item, requests []types.WriteRequest) Key {
	pending := make(map[Key]bool, len(requests))
	for _, r := range requests {
		if r.PutRequest == nil {
			continue
		}
		if k, err := decodeKey(r.PutRequest.Item); err == nil {
			pending[k] = true
		}
	}
	for _, it := range page {
		if pending[it.Key] {
			return it.Key
		}
	}
	return page[0].Key
}

// pause waits after round attempt (1-based) left items unprocessed, as the SDK waits after a
// throttled attempt, or returns ctx's error.
func (d *Dynamo) pause(ctx context.Context, attempt int) error {
	delay, err := d.backoff.RetryDelay(attempt, &types.ProvisionedThroughputExceededException{})
	if err != nil {
		return fmt.Errorf("backoff: %w", err)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func keyAttrs(k Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: k.PK},
		attrSK: &types.AttributeValueMemberS{Value: k.SK},
	}
}

// itemAttrs encodes a stored item. An empty Value is left out rather than stored as an empty
// binary: it reads back the same and costs nothing.
func itemAttrs(it Item) map[string]types.AttributeValue {
	attrs := keyAttrs(it.Key)
	attrs[attrVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(it.Version, 10)}
	if len(it.Value) > 0 {
		attrs[attrValue] = &types.AttributeValueMemberB{Value: it.Value}
	}
	if !it.ExpiresAt.IsZero() {
		attrs[attrExpires] = epochAttr(it.ExpiresAt.Unix())
	}
	return attrs
}

func epochAttr(sec int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(sec, 10)}
}

func decodeKey(attrs map[string]types.AttributeValue) (Key, error) {
	pk, ok := attrs[attrPK].(*types.AttributeValueMemberS)
	if !ok {
		return Key{}, fmt.Errorf("decode item: %s is %T, want a string", attrPK, attrs[attrPK])
	}
	sk, ok := attrs[attrSK].(*types.AttributeValueMemberS)
	if !ok {
		return Key{}, fmt.Errorf("decode item pk=%q: %s is %T, want a string", pk.Value, attrSK, attrs[attrSK])
	}
	return Key{PK: pk.Value, SK: sk.Value}, nil
}

// decodeItem reads an item written by itemAttrs. Expiry is the caller's to check.
func decodeItem(attrs map[string]types.AttributeValue) (Item, error) {
	key, err := decodeKey(attrs)
	if err != nil {
		return Item{}, err
	}
	it := Item{Key: key}
	if it.Version, err = numberAttr(attrs, attrVersion); err != nil {
		return Item{}, fmt.Errorf("decode item %s: %w", key, err)
	}
	if _, ok := attrs[attrExpires]; ok {
		sec, err := numberAttr(attrs, attrExpires)
		if err != nil {
			return Item{}, fmt.Errorf("decode item %s: %w", key, err)
		}
		it.ExpiresAt = time.Unix(sec, 0).UTC()
	}
	switch v := attrs[attrValue].(type) {
	case nil:
	case *types.AttributeValueMemberB:
		it.Value = v.Value // the SDK decoded a fresh slice, so it aliases nothing
	default:
		return Item{}, fmt.Errorf("decode item %s: %s is %T, want binary", key, attrValue, v)
	}
	return it, nil
}

func numberAttr(attrs map[string]types.AttributeValue, name string) (int64, error) {
	n, ok := attrs[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("%s is %T, want a number", name, attrs[name])
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// liveVersion is the version of the item a failed condition reported (ALL_OLD), 0 when there
// was none or it had expired at now.
func liveVersion(old map[string]types.AttributeValue, now time.Time) (int64, error) {
	if len(old) == 0 {
		return 0, nil
	}
	it, err := decodeItem(old)
	if err != nil {
		return 0, fmt.Errorf("condition failed, reading the stored item: %w", err)
	}
	if it.Expired(now) {
		return 0, nil
	}
	return it.Version, nil
}
