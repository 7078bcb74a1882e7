package state_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state"
)

func TestCompressRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{name: "empty", in: nil},
		{name: "short text", in: []byte(`{"a":1}`)},
		{name: "repetitive snapshot-like JSON", in: []byte(strings.Repeat(`{"index":"logs-a","shard":3,"write_load":1.25},`, 2000))},
		{name: "binary", in: []byte{0x00, 0x1f, 0x8b, 0xff, 0x10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z, err := state.Compress(tc.in)
			if err != nil {
				t.Fatalf("Compress: %v", err)
			}
			if !state.IsCompressed(z) {
				t.Fatalf("IsCompressed(Compress(x)) = false, want true")
			}
			out, err := state.Decompress(z)
			if err != nil {
				t.Fatalf("Decompress: %v", err)
			}
			if !bytes.Equal(out, tc.in) {
				t.Fatalf("round trip: got %d bytes, want %d bytes equal to the input", len(out), len(tc.in))
			}
		})
	}
}

func TestDecompressRejects(t *testing.T) {
	// gzip readers accept concatenated members, so one compressed MiB of zeros repeated past the
	// limit is a small input with an oversized output.
	member, err := state.Compress(make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	bomb := bytes.Repeat(member, state.MaxDecompressedBytes>>20+1)
	valid, err := state.Compress([]byte("some value"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      []byte
		wantErr error
	}{
		{name: "output over the limit", in: bomb, wantErr: state.ErrTooLarge},
		{name: "not gzip", in: []byte(`{"index":"logs-a","shard":1}`), wantErr: gzip.ErrHeader},
		{name: "truncated stream", in: valid[:len(valid)-6]},
		{name: "corrupt checksum", in: append(valid[:len(valid)-8:len(valid)-8], 0, 0, 0, 0, 10, 0, 0, 0), wantErr: gzip.ErrChecksum},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := state.Decompress(tc.in)
			if err == nil {
				t.Fatalf("Decompress: got %d bytes and no error, want an error", len(out))
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Decompress: got err %v, want %v", err, tc.wantErr)
			}
		})
	}
}

type chunk struct {
	Node   string    `json:"node"`
	Shards []float64 `json:"shards"`
}

func TestEncodeDecodeJSON(t *testing.T) {
	small := chunk{Node: "node-1", Shards: []float64{0.5, 1.5}}
	large := chunk{Node: "node-2", Shards: make([]float64, 1000)}
	for i := range large.Shards {
		large.Shards[i] = float64(i) / 8
	}
	tests := []struct {
		name           string
		in             chunk
		wantCompressed bool
	}{
		{name: "small value stays plain JSON", in: small, wantCompressed: false},
		{name: "value over CompressAbove is gzipped", in: large, wantCompressed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := state.EncodeJSON(tc.in)
			if err != nil {
				t.Fatalf("EncodeJSON: %v", err)
			}
			if got := state.IsCompressed(raw); got != tc.wantCompressed {
				t.Fatalf("compressed: got %t, want %t (%d bytes)", got, tc.wantCompressed, len(raw))
			}
			out, err := state.DecodeJSON[chunk](raw)
			if err != nil {
				t.Fatalf("DecodeJSON: %v", err)
			}
			if out.Node != tc.in.Node || len(out.Shards) != len(tc.in.Shards) || out.Shards[len(out.Shards)-1] != tc.in.Shards[len(tc.in.Shards)-1] {
				t.Fatalf("round trip: got %+v, want %+v", out, tc.in)
			}
		})
	}
}

func TestDecodeJSONRejectsMalformed(t *testing.T) {
	z, err := state.Compress([]byte(`{"node":`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  []byte
	}{
		{name: "truncated JSON", raw: []byte(`{"node":`)},
		{name: "wrong type", raw: []byte(`{"node":7}`)},
		{name: "compressed truncated JSON", raw: z},
		{name: "gzip magic then garbage", raw: []byte{0x1f, 0x8b, 0x00}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := state.DecodeJSON[chunk](tc.raw); err == nil {
				t.Fatalf("DecodeJSON: got %+v and no error, want an error", v)
			}
		})
	}
}

func TestPutJSONGetJSON(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	key := state.Key{PK: "cluster#a", SK: "cooldown#logs-a"}
	tests := []struct {
		name        string
		ttl         time.Duration
		wantExpires time.Time
	}{
		{name: "zero ttl never expires", ttl: 0},
		{name: "ttl sets ExpiresAt", ttl: 30 * time.Minute, wantExpires: now.Add(30 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := state.NewMemory(func() time.Time { return now })
			in := chunk{Node: "node-7", Shards: []float64{2}}
			version, err := state.PutJSON(t.Context(), m, key, in, state.Condition{IfAbsent: true}, tc.ttl, now)
			if err != nil || version != 1 {
				t.Fatalf("PutJSON: got version %d err %v, want 1 nil", version, err)
			}
			got, gotVersion, err := state.GetJSON[chunk](t.Context(), m, key)
			if err != nil || gotVersion != 1 || got.Node != in.Node {
				t.Fatalf("GetJSON: got %+v version %d err %v, want %+v version 1", got, gotVersion, err, in)
			}
			it, err := m.Get(t.Context(), key)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !it.ExpiresAt.Equal(tc.wantExpires) {
				t.Fatalf("ExpiresAt: got %s, want %s", it.ExpiresAt, tc.wantExpires)
			}
		})
	}
}

func TestPutJSONGetJSONErrors(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	key := state.Key{PK: "cluster#a", SK: "plan"}
	tests := []struct {
		name    string
		run     func(t *testing.T, m *state.Memory) error
		wantErr error
	}{
		{name: "negative ttl", wantErr: state.ErrInvalid, run: func(t *testing.T, m *state.Memory) error {
			_, err := state.PutJSON(t.Context(), m, key, 1, state.Condition{}, -time.Second, now)
			return err
		}},
		{name: "unencodable value", run: func(t *testing.T, m *state.Memory) error {
			_, err := state.PutJSON(t.Context(), m, key, func() {}, state.Condition{}, 0, now)
			return err
		}},
		{name: "stale version", wantErr: state.ErrConflict, run: func(t *testing.T, m *state.Memory) error {
			if _, err := state.PutJSON(t.Context(), m, key, 1, state.Condition{}, 0, now); err != nil {
				t.Fatal(err)
			}
			_, err := state.PutJSON(t.Context(), m, key, 2, state.Condition{IfVersion: 7}, 0, now)
			return err
		}},
		{name: "missing item", wantErr: state.ErrNotFound, run: func(t *testing.T, m *state.Memory) error {
			_, _, err := state.GetJSON[int](t.Context(), m, key)
			return err
		}},
		{name: "stored value is not the type", run: func(t *testing.T, m *state.Memory) error {
			if _, err := m.Put(t.Context(), state.Item{Key: key, Value: []byte(`"text"`)}, state.Condition{}); err != nil {
				t.Fatal(err)
			}
			_, _, err := state.GetJSON[int](t.Context(), m, key)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t, state.NewMemory(func() time.Time { return now }))
			if err == nil {
				t.Fatal("got no error, want one")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("got err %v, want %v", err, tc.wantErr)
			}
		})
	}
}
