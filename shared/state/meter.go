package state

import (
	"context"
	"strconv"
	"sync"
)

// Usage is what a store was asked to do, in DynamoDB's billing terms: a write unit per started
// KB of each item written (a conditional write that fails is billed too), a read unit per
// started 4 KB of each item read by Get, and per started 4 KB of a Query's items taken together
// (strongly consistent, as Dynamo reads).
type Usage struct {
	Writes     int64 `json:"writes"`
	WriteBytes int64 `json:"write_bytes"`
	WriteUnits int64 `json:"write_units"`
	Reads      int64 `json:"reads"`
	ReadBytes  int64 `json:"read_bytes"`
	ReadUnits  int64 `json:"read_units"`
}

// Sub is u less an earlier reading of the same meter.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{
		Writes: u.Writes - earlier.Writes, WriteBytes: u.WriteBytes - earlier.WriteBytes, WriteUnits: u.WriteUnits - earlier.WriteUnits,
		Reads: u.Reads - earlier.Reads, ReadBytes: u.ReadBytes - earlier.ReadBytes, ReadUnits: u.ReadUnits - earlier.ReadUnits,
	}
}

// Item sizes as DynamoDB counts them: each attribute's name plus its value, a string or binary
// value at its length in bytes, a number at about one byte per two significant digits plus one.
const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
	// tokenBytes is the length of the write token Dynamo.Put stores (rand.Text).
	tokenBytes = 26
)

// ItemSize is the size DynamoDB bills for it as Dynamo stores it: key, value, version, expiry and,
// for a Put, the write token.
func ItemSize(it Item, withToken bool) int {
	n := len(attrPK) + len(it.Key.PK) + len(attrSK) + len(it.Key.SK)
	if len(it.Value) > 0 {
		n += len(attrValue) + len(it.Value)
	}
	n += len(attrVersion) + numberSize(it.Version)
	if !it.ExpiresAt.IsZero() {
		n += len(attrExpires) + numberSize(it.ExpiresAt.Unix())
	}
	if withToken {
		n += len(attrToken) + tokenBytes
	}
	return n
}

func numberSize(v int64) int {
	digits := len(strconv.FormatInt(v, 10))
	if v < 0 {
		digits--
	}
	return (digits+1)/2 + 1
}

func units(bytes, per int) int64 { return int64(max(1, (bytes+per-1)/per)) }

// Meter is a Store that counts the reads and writes it passes to the store it wraps, as DynamoDB
// would bill them. It lets a local run or a benchmark report what a cycle costs in the table.
type Meter struct {
	Store
	mu    sync.Mutex
	usage Usage
}

var _ Store = (*Meter)(nil)

// NewMeter wraps s.
func NewMeter(s Store) *Meter { return &Meter{Store: s} }

// Usage is everything counted so far.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

func (m *Meter) wrote(items []Item, withToken bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range items {
		size := ItemSize(it, withToken)
		m.usage.Writes++
		m.usage.WriteBytes += int64(size)
		m.usage.WriteUnits += units(size, writeUnitBytes)
	}
}

func (m *Meter) read(items []Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	size := 0
	for _, it := range items {
		size += ItemSize(it, false)
	}
	m.usage.Reads++
	m.usage.ReadBytes += int64(size)
	m.usage.ReadUnits += units(size, readUnitBytes)
}

// Get implements Store.
func (m *Meter) Get(ctx context.Context, key Key) (Item, error) {
	it, err := m.Store.Get(ctx, key)
	if err == nil {
		m.read([]Item{it})
	} else {
		m.read(nil)
	}
	return it, err
}

// Put implements Store.
func (m *Meter) Put(ctx context.Context, item Item, cond Condition) (Item, error) {
	stored, err := m.Store.Put(ctx, item, cond)
	if err == nil {
		m.wrote([]Item{stored}, true)
	} else if checkPut(item) == nil {
		m.wrote([]Item{item}, true)
	}
	return stored, err
}

// Delete implements Store: a delete is billed as a write of the item's key.
func (m *Meter) Delete(ctx context.Context, key Key, cond Condition) error {
	err := m.Store.Delete(ctx, key, cond)
	m.wrote([]Item{{Key: key}}, false)
	return err
}

// Query implements Store.
func (m *Meter) Query(ctx context.Context, pk, skPrefix string) ([]Item, error) {
	items, err := m.Store.Query(ctx, pk, skPrefix)
	m.read(items)
	return items, err
}

// BatchPut implements Store.
func (m *Meter) BatchPut(ctx context.Context, items []Item) error {
	err := m.Store.BatchPut(ctx, items)
	if err == nil {
		stored := make([]Item, len(items))
		for i, it := range items {
			stored[i] = it
			stored[i].Version = 1
			stored[i].ExpiresAt = roundExpiry(it.ExpiresAt)
		}
		m.wrote(stored, false)
	}
	return err
}
