package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

const (
	// CompressAbove is the encoded JSON size from which EncodeJSON gzips a value. DynamoDB bills
	// writes per 1 KB, so below that compressing saves nothing; above it JSON shrinks several-fold.
	CompressAbove = 1024
	// MaxDecompressedBytes bounds Decompress. A stored value is at most MaxValueBytes and our JSON
	// compresses about tenfold, so 64 MiB is far above any real value while stopping a corrupt or
	// hostile one from exhausting a 128 MB-1 GB Lambda.
	MaxDecompressedBytes = 64 << 20
)

// gzipMagic starts every gzip stream (RFC 1952). No JSON text can start with 0x1f, so a value is
// compressed exactly when it starts with these bytes.
var gzipMagic = []byte{0x1f, 0x8b}

// IsCompressed reports whether b is a Compress'd value.
func IsCompressed(b []byte) bool { return bytes.HasPrefix(b, gzipMagic) }

// A gzip writer allocates about 800 KB of tables and a reader about 40 KB: a snapshot of many
// chunks compressed with a new one each spent more in allocation than in compression, so they are
// pooled and Reset.
var (
	gzipWriters sync.Pool // *gzip.Writer
	gzipReaders sync.Pool // *gzip.Reader
)

// Compress gzips b. Large snapshot chunks go through it to stay under MaxValueBytes and to cost
// fewer DynamoDB write units.
func Compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(b)/4 + 64)
	zw, ok := gzipWriters.Get().(*gzip.Writer)
	if ok {
		zw.Reset(&buf)
	} else {
		zw = gzip.NewWriter(&buf)
	}
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("compress %d bytes: %w", len(b), err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress %d bytes: %w", len(b), err)
	}
	gzipWriters.Put(zw)
	return buf.Bytes(), nil
}

// Decompress reverses Compress, refusing output over MaxDecompressedBytes.
func Decompress(b []byte) ([]byte, error) {
	return DecompressTo(nil, b)
}

// DecompressTo is Decompress appending to dst, so that a caller decoding many values can reuse
// one buffer.
func DecompressTo(dst, b []byte) ([]byte, error) {
	zr, ok := gzipReaders.Get().(*gzip.Reader)
	var err error
	if ok {
		err = zr.Reset(bytes.NewReader(b))
	} else {
		zr, err = gzip.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("decompress %d bytes: %w", len(b), err)
	}
	buf := bytes.NewBuffer(dst[len(dst):])
	_, err = buf.ReadFrom(io.LimitReader(zr, MaxDecompressedBytes+1))
	if closeErr := zr.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, fmt.Errorf("decompress %d bytes: %w", len(b), err)
	}
	gzipReaders.Put(zr)
	if buf.Len() > MaxDecompressedBytes {
		return nil, fmt.Errorf("decompress %d bytes: %w: output over %d bytes", len(b), ErrTooLarge, MaxDecompressedBytes)
	}
	return append(dst, buf.Bytes()...), nil
}

// EncodeJSON marshals v, compressing the result when it is over CompressAbove bytes. Use it for
// BatchPut values; DecodeJSON reads them back.
func EncodeJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	if len(raw) <= CompressAbove {
		return raw, nil
	}
	return Compress(raw)
}

// DecodeJSON unmarshals a value written by EncodeJSON (compressed or not) or by any JSON writer.
func DecodeJSON[T any](raw []byte) (T, error) {
	var v T
	if IsCompressed(raw) {
		var err error
		if raw, err = Decompress(raw); err != nil {
			return v, err
		}
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode %T: %w", v, err)
	}
	return v, nil
}

// GetJSON reads the item at key as a T, returning its version for a later IfVersion write. A
// missing item is ErrNotFound.
func GetJSON[T any](ctx context.Context, s Store, key Key) (T, int64, error) {
	it, err := s.Get(ctx, key)
	if err != nil {
		var zero T
		return zero, 0, err
	}
	v, err := DecodeJSON[T](it.Value)
	if err != nil {
		var zero T
		return zero, 0, fmt.Errorf("get %s: %w", key, err)
	}
	return v, it.Version, nil
}

// PutJSON writes v at key under cond and returns the new version. ttl > 0 makes the item expire
// at now+ttl; ttl == 0 keeps it forever; a negative ttl is ErrInvalid.
func PutJSON[T any](ctx context.Context, s Store, key Key, v T, cond Condition, ttl time.Duration, now time.Time) (int64, error) {
	if ttl < 0 {
		return 0, fmt.Errorf("put %s: %w: negative ttl %s", key, ErrInvalid, ttl)
	}
	raw, err := EncodeJSON(v)
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	item := Item{Key: key, Value: raw}
	if ttl > 0 {
		item.ExpiresAt = now.Add(ttl)
	}
	stored, err := s.Put(ctx, item, cond)
	if err != nil {
		return 0, err
	}
	return stored.Version, nil
}
