package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A large value is one that may outgrow an item, and that is rewritten often with little changed:
// the planner's and the replica controller's memory. PutLarge cuts it where its content says
// (content-defined chunking, so that an insertion moves no boundary but its own), stores each
// part, compressed, under a name taken from its content, and writes the item at the value's key
// last as a manifest naming the parts in order. A rewrite writes only the parts the previous
// manifest did not name, then the manifest under the caller's condition, then deletes the parts
// no longer named. A value that compresses to at most InlineBytes is stored in the item itself,
// exactly as PutJSON stores it, so values written before manifests existed read the same.
//
// Parts are named after their content, so racing writers put identical bytes under one name and
// never spoil each other's parts. Only the writer whose manifest lands deletes, and only parts
// its manifest's predecessor named and its own does not; a writer that loses the race deletes
// nothing, and the parts only it wrote stay behind (a few KB, on the rare lost race). A reader
// that finds a part gone (deleted by a newer write after it read the manifest) reads again.

// InlineBytes is the largest compressed value PutLarge stores in the item itself.
const InlineBytes = 64 << 10

// manifestMagic starts a manifest. No JSON text and no gzip stream starts with a zero byte.
var manifestMagic = []byte("\x00parts\n")

// Chunk sizes, uncompressed. JSON compresses about tenfold, so a part is a few KB: a write unit
// or three each.
const (
	minChunk = 4 << 10
	maxChunk = 64 << 10
	// chunkBits sets the mean chunk at about minChunk + 2^chunkBits bytes.
	chunkBits = 14
)

// manifest lists a large value's parts in order.
type manifest struct {
	Parts []string `json:"parts"`
	// Bytes is the value's length, uncompressed, checked on read.
	Bytes int `json:"bytes"`
}

// LargeRef is what GetLarge read: the version to condition the next write on, and the parts the
// stored manifest names, which that write need not write again.
type LargeRef struct {
	Version int64
	parts   []string
}

// partSK is the sort key of a part of the value at sk.
func partSK(sk, name string) string { return sk + "#part#" + name }

// gear drives the rolling hash that picks chunk boundaries: fixed, so that every writer cuts the
// same content in the same places.
var gear = func() (g [256]uint64) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range g {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		g[i] = z ^ (z >> 31)
	}
	return g
}()

// chunks cuts b where the rolling hash of the last 64 bytes has its top chunkBits bits clear,
// keeping every chunk between minChunk and maxChunk bytes (the last may be shorter).
func chunks(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(len(b), maxChunk)
		if n > minChunk {
			var h uint64
			for i := minChunk; i < n; i++ {
				h = h<<1 + gear[b[i]]
				if h>>(64-chunkBits) == 0 {
					n = i + 1
					break
				}
			}
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// PutLarge writes value at key under cond (see the comment above) and returns the new version.
// prev is what GetLarge last read at key; with a zero LargeRef or no condition every part is
// written. ttl > 0 makes the item and its parts expire at now+ttl.
func PutLarge(ctx context.Context, s Store, key Key, value []byte, prev LargeRef, cond Condition, ttl time.Duration, now time.Time) (int64, error) {
	if ttl < 0 {
		return 0, fmt.Errorf("put %s: %w: negative ttl %s", key, ErrInvalid, ttl)
	}
	var exp time.Time
	if ttl > 0 {
		exp = now.Add(ttl)
	}
	var head []byte
	var parts []Item
	var m manifest
	packed, err := pack(value)
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	if len(packed) <= InlineBytes {
		head = packed
	} else {
		known := map[string]bool{}
		if cond != (Condition{}) {
			for _, p := range prev.parts {
				known[p] = true
			}
		}
		m.Bytes = len(value)
		for _, c := range chunks(value) {
			sum := sha256.Sum256(c)
			name := hex.EncodeToString(sum[:12])
			m.Parts = append(m.Parts, name)
			if known[name] {
				continue
			}
			known[name] = true
			z, err := Compress(c)
			if err != nil {
				return 0, fmt.Errorf("put %s: %w", key, err)
			}
			parts = append(parts, Item{Key: Key{PK: key.PK, SK: partSK(key.SK, name)}, Value: z, ExpiresAt: exp})
		}
		b, err := json.Marshal(m)
		if err != nil {
			return 0, fmt.Errorf("put %s: manifest: %w", key, err)
		}
		head = append(slices.Clip(manifestMagic), b...)
	}
	// DynamoDB takes at most 25 items a batch request; BatchPut pages them.
	if len(parts) > 0 {
		if err := s.BatchPut(ctx, parts); err != nil {
			return 0, fmt.Errorf("put %s: parts: %w", key, err)
		}
	}
	stored, err := s.Put(ctx, Item{Key: key, Value: head, ExpiresAt: exp}, cond)
	if err != nil {
		return 0, err
	}
	// The parts the previous manifest named and this one does not are nobody's now.
	for _, p := range prev.parts {
		if cond == (Condition{}) || slices.Contains(m.Parts, p) {
			continue
		}
		if err := s.Delete(ctx, Key{PK: key.PK, SK: partSK(key.SK, p)}, Condition{}); err != nil {
			return stored.Version, fmt.Errorf("put %s: delete part %s: %w", key, p, err)
		}
	}
	return stored.Version, nil
}

// pack is value as PutJSON would store it: compressed when over CompressAbove bytes.
func pack(value []byte) ([]byte, error) {
	if len(value) <= CompressAbove {
		return value, nil
	}
	return Compress(value)
}

// largeReadAttempts bounds how often GetLarge reads the manifest again after finding one of its
// parts deleted by a newer write.
const largeReadAttempts = 3

// errPartGone is a part a manifest names that is not stored.
var errPartGone = errors.New("part named by the manifest is gone")

// GetLarge reads the value PutLarge (or PutJSON) wrote at key, uncompressed. A missing item is
// ErrNotFound.
func GetLarge(ctx context.Context, s Store, key Key) ([]byte, LargeRef, error) {
	for attempt := 1; ; attempt++ {
		value, ref, err := getLarge(ctx, s, key)
		if errors.Is(err, errPartGone) && attempt < largeReadAttempts {
			continue
		}
		return value, ref, err
	}
}

func getLarge(ctx context.Context, s Store, key Key) ([]byte, LargeRef, error) {
	it, err := s.Get(ctx, key)
	if err != nil {
		return nil, LargeRef{}, err
	}
	ref := LargeRef{Version: it.Version}
	rest, isManifest := bytes.CutPrefix(it.Value, manifestMagic)
	if !isManifest {
		if !IsCompressed(it.Value) {
			return it.Value, ref, nil
		}
		v, err := Decompress(it.Value)
		if err != nil {
			return nil, ref, fmt.Errorf("get %s: %w", key, err)
		}
		return v, ref, nil
	}
	var m manifest
	if err := json.Unmarshal(rest, &m); err != nil {
		return nil, ref, fmt.Errorf("get %s: manifest: %w", key, err)
	}
	if m.Bytes < 0 || m.Bytes > MaxDecompressedBytes {
		return nil, ref, fmt.Errorf("get %s: manifest: %w: %d bytes", key, ErrTooLarge, m.Bytes)
	}
	items, err := s.Query(ctx, key.PK, key.SK+"#part#")
	if err != nil {
		return nil, ref, fmt.Errorf("get %s: parts: %w", key, err)
	}
	stored := make(map[string][]byte, len(items))
	for _, p := range items {
		stored[strings.TrimPrefix(p.Key.SK, key.SK+"#part#")] = p.Value
	}
	value := make([]byte, 0, m.Bytes)
	for _, name := range m.Parts {
		z, ok := stored[name]
		if !ok {
			return nil, ref, fmt.Errorf("get %s: %w: %s", key, errPartGone, name)
		}
		if value, err = DecompressTo(value, z); err != nil {
			return nil, ref, fmt.Errorf("get %s: part %s: %w", key, name, err)
		}
	}
	if len(value) != m.Bytes {
		return nil, ref, fmt.Errorf("get %s: parts hold %d bytes, the manifest says %d", key, len(value), m.Bytes)
	}
	ref.parts = m.Parts
	return value, ref, nil
}

// GetLargeJSON reads the value at key as a T (see GetLarge).
func GetLargeJSON[T any](ctx context.Context, s Store, key Key) (T, LargeRef, error) {
	var v T
	raw, ref, err := GetLarge(ctx, s, key)
	if err != nil {
		return v, ref, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, ref, fmt.Errorf("get %s: decode %T: %w", key, v, err)
	}
	return v, ref, nil
}

// PutLargeJSON writes v at key (see PutLarge).
func PutLargeJSON[T any](ctx context.Context, s Store, key Key, v T, prev LargeRef, cond Condition, ttl time.Duration, now time.Time) (int64, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("put %s: encode %T: %w", key, v, err)
	}
	return PutLarge(ctx, s, key, raw, prev, cond, ttl, now)
}

// LargeParts is how many parts the manifest GetLarge read names (0 for a value in the item).
func LargeParts(ref LargeRef) int { return len(ref.parts) }
