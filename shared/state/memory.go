package state

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is the embedded Store of the local runner and the tests: one process, no I/O. It is safe
// for concurrent use; one mutex serializes all calls, which is what makes conditional writes
// atomic.
type Memory struct {
	clock Clock

	mu    sync.Mutex
	parts map[string]*partition
}

var _ Store = (*Memory)(nil)

// partition is the items of one PK, with their SKs kept sorted so Query is a binary search and a
// scan, as in DynamoDB.
type partition struct {
	items map[string]Item
	sks   []string
}

// NewMemory returns an empty store reading the time from clock (time.Now when nil).
func NewMemory(clock Clock) *Memory {
	if clock == nil {
		clock = time.Now
	}
	return &Memory{clock: clock, parts: make(map[string]*partition)}
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key Key) (Item, error) {
	if err := getArgs(ctx, key); err != nil {
		return Item{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.live(key, m.clock())
	if !ok {
		return Item{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return clone(it), nil
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, item Item, cond Condition) (Item, error) {
	if err := putArgs(ctx, item, cond); err != nil {
		return Item{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.live(item.Key, m.clock())
	if !ok {
		cur = Item{}
	}
	if !cond.holds(cur.Version) {
		return Item{}, &ConflictError{Key: item.Key, Want: cond.want(), Got: cur.Version}
	}
	return clone(m.write(item, cur.Version)), nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, key Key, cond Condition) error {
	if err := deleteArgs(ctx, key, cond); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.live(key, m.clock())
	if !ok {
		return nil // nothing live to delete, whatever the condition (see Store.Delete)
	}
	if !cond.holds(cur.Version) {
		return &ConflictError{Key: key, Want: cond.want(), Got: cur.Version}
	}
	m.remove(key)
	return nil
}

// Query implements Store.
func (m *Memory) Query(ctx context.Context, pk, skPrefix string) ([]Item, error) {
	if err := queryArgs(ctx, pk, skPrefix); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[pk]
	if p == nil {
		return nil, nil
	}
	now := m.clock()
	var out []Item
	var expired []string
	start, _ := slices.BinarySearch(p.sks, skPrefix)
	for _, sk := range p.sks[start:] {
		if !strings.HasPrefix(sk, skPrefix) {
			break
		}
		it := p.items[sk]
		if it.Expired(now) {
			expired = append(expired, sk)
			continue
		}
		out = append(out, clone(it))
	}
	for _, sk := range expired {
		m.remove(Key{PK: pk, SK: sk})
	}
	return out, nil
}

// BatchPut implements Store. Memory checks the whole batch first and then writes it under one
// lock, so it is all-or-nothing.
func (m *Memory) BatchPut(ctx context.Context, items []Item) error {
	if err := batchPutArgs(ctx, items); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	for _, it := range items {
		cur, ok := m.live(it.Key, now)
		if !ok {
			cur = Item{}
		}
		m.write(it, cur.Version)
	}
	return nil
}

// live returns the live item with key. An expired item is removed on the way, as DynamoDB's TTL
// would eventually do. Callers hold m.mu.
func (m *Memory) live(key Key, now time.Time) (Item, bool) {
	p := m.parts[key.PK]
	if p == nil {
		return Item{}, false
	}
	it, ok := p.items[key.SK]
	if !ok {
		return Item{}, false
	}
	if it.Expired(now) {
		m.remove(key)
		return Item{}, false
	}
	return it, true
}

// write stores a copy of item as the successor of liveVersion (0 when none is live) and returns
// the stored item. Callers hold m.mu.
func (m *Memory) write(item Item, liveVersion int64) Item {
	stored := Item{
		Key:       item.Key,
		Value:     bytes.Clone(item.Value),
		Version:   liveVersion + 1,
		ExpiresAt: roundExpiry(item.ExpiresAt),
	}
	p := m.parts[item.Key.PK]
	if p == nil {
		p = &partition{items: make(map[string]Item)}
		m.parts[item.Key.PK] = p
	}
	if _, exists := p.items[item.Key.SK]; !exists {
		i, _ := slices.BinarySearch(p.sks, item.Key.SK)
		p.sks = slices.Insert(p.sks, i, item.Key.SK)
	}
	p.items[item.Key.SK] = stored
	return stored
}

// remove deletes key if present. Callers hold m.mu.
func (m *Memory) remove(key Key) {
	p := m.parts[key.PK]
	if p == nil {
		return
	}
	if _, ok := p.items[key.SK]; !ok {
		return
	}
	delete(p.items, key.SK)
	if i, found := slices.BinarySearch(p.sks, key.SK); found {
		p.sks = slices.Delete(p.sks, i, i+1)
	}
	if len(p.items) == 0 {
		delete(m.parts, key.PK)
	}
}

// clone copies it so no caller shares a Value slice with the store.
func clone(it Item) Item {
	it.Value = bytes.Clone(it.Value)
	return it
}
