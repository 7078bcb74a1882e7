package opensearch

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/iotest"
)

func TestReadBody(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (3*maxBodyPiece)/16+7) // several pieces, the last partial
	tests := []struct {
		name          string
		body          []byte
		contentLength int64
		reader        func(io.Reader) io.Reader
		limit         int64 // 0: 1 GiB
		wantErr       bool
		wantCap       bool // ErrResponseTooLarge
	}{
		{name: "known length", body: []byte(`{"status":"green"}`), contentLength: 18},
		{name: "known empty", body: nil, contentLength: 0},
		{name: "unknown length, one piece", body: []byte(`{"status":"green"}`), contentLength: -1},
		{name: "unknown length, exactly one piece", body: bytes.Repeat([]byte("x"), firstBodyPiece), contentLength: -1},
		{name: "unknown length, many pieces", body: big, contentLength: -1},
		{name: "unknown length, one byte per read", body: big[:3*firstBodyPiece+1], contentLength: -1, reader: iotest.OneByteReader},
		{name: "length over the presize cap read in pieces", body: big, contentLength: maxPresizedBody + 1},
		{name: "shorter than its Content-Length", body: []byte(`{"a":1}`), contentLength: 100, wantErr: true},
		{name: "exactly the cap, unknown length", body: big[:firstBodyPiece+5], contentLength: -1, limit: firstBodyPiece + 5},
		{name: "exactly the cap, known length", body: big[:100], contentLength: 100, limit: 100},
		{name: "over the cap, unknown length", body: big[:firstBodyPiece+6], contentLength: -1, limit: firstBodyPiece + 5, wantCap: true},
		{name: "over the cap, known length", body: big[:101], contentLength: 101, limit: 100, wantCap: true},
		{name: "read error", body: big, contentLength: -1, reader: func(r io.Reader) io.Reader {
			return io.MultiReader(io.LimitReader(r, 5), iotest.ErrReader(errors.New("connection reset")))
		}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(tc.body)
			if tc.reader != nil {
				r = tc.reader(r)
			}
			limit := tc.limit
			if limit == 0 {
				limit = 1 << 30
			}
			got, err := readBody(r, tc.contentLength, limit)
			if tc.wantCap && !errors.Is(err, ErrResponseTooLarge) {
				t.Fatalf("got %d bytes and %v, want ErrResponseTooLarge", len(got), err)
			}
			if tc.wantErr || tc.wantCap {
				if err == nil {
					t.Fatalf("got %d bytes and no error, want an error", len(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("readBody: %v", err)
			}
			if !bytes.Equal(got, tc.body) {
				t.Errorf("got %d bytes, want the %d sent", len(got), len(tc.body))
			}
		})
	}
}

// TestCallReadsWholeBodies sends answers with and without Content-Length, large and small,
// through the client's whole call path.
func TestCallReadsWholeBodies(t *testing.T) {
	large := append([]byte(`{"cluster_name":"c","status":"green","padding":"`), bytes.Repeat([]byte("p"), 3*maxBodyPiece)...)
	large = append(large, `"}`...)
	small := []byte(healthBody)
	tests := []struct {
		name    string
		body    []byte
		chunked bool
	}{
		{name: "small with length", body: small},
		{name: "small chunked", body: small, chunked: true},
		{name: "large with length", body: large},
		{name: "large chunked", body: large, chunked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				}
				_, _ = w.Write(tc.body[:len(tc.body)/2])
				if tc.chunked {
					w.(http.Flusher).Flush()
				}
				_, _ = w.Write(tc.body[len(tc.body)/2:])
			}))
			defer srv.Close()
			c := newTestClient(t, testConfig(srv.URL))
			h, err := c.Health(t.Context())
			if err != nil {
				t.Fatalf("Health: %v", err)
			}
			if h.Status != "green" {
				t.Errorf("status: got %q, want green", h.Status)
			}
		})
	}
}
