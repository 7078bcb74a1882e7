package webhook

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	testSecret = []byte("0123456789abcdef0123456789abcdef")
	testNow    = time.Date(2026, 11, 29, 10, 15, 30, 0, time.UTC)
)

func TestSignMatchesTheDocumentedScheme(t *testing.T) {
	// Computed independently:
	// printf '1795947330\nPOST\n/nodes/stats\nprod\n{"a":1}' | openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef
	const want = "sha256=f41e30f4149a8eb2ce254c94ef5dbcb0aff87e37793349ef8d32226e2fd4023b"
	ts, sig := Sign(testSecret, Message{Method: "POST", Path: "/nodes/stats", Cluster: "prod", Body: []byte(`{"a":1}`)}, testNow)
	if ts != "1795947330" {
		t.Errorf("timestamp: got %q, want 1795947330", ts)
	}
	if sig != want {
		t.Errorf("signature: got %q, want %q", sig, want)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"version":"4","status":"firing"}`)
	msg := func(b []byte) Message {
		return Message{Method: "POST", Path: PathAlertmanager, Cluster: "prod", Body: b}
	}
	ts, sig := Sign(testSecret, msg(body), testNow)
	tests := []struct {
		name      string
		secret    []byte
		timestamp string
		signature string
		body      []byte
		// change alters what is verified besides the body.
		change  func(*Message)
		now     time.Time
		wantErr string // "" accepts
	}{
		{name: "valid", secret: testSecret, timestamp: ts, signature: sig, body: body, now: testNow},
		{name: "upper-case hex", secret: testSecret, timestamp: ts, signature: "sha256=" + strings.ToUpper(strings.TrimPrefix(sig, "sha256=")), body: body, now: testNow},
		{name: "exactly 5 minutes old", secret: testSecret, timestamp: ts, signature: sig, body: body, now: testNow.Add(MaxClockSkew)},
		{name: "exactly 5 minutes ahead", secret: testSecret, timestamp: ts, signature: sig, body: body, now: testNow.Add(-MaxClockSkew)},
		{name: "older than 5 minutes", secret: testSecret, timestamp: ts, signature: sig, body: body, now: testNow.Add(MaxClockSkew + time.Second), wantErr: "a replay or a wrong clock"},
		{name: "more than 5 minutes ahead", secret: testSecret, timestamp: ts, signature: sig, body: body, now: testNow.Add(-MaxClockSkew - time.Second), wantErr: "a replay or a wrong clock"},
		{name: "wrong secret", secret: []byte("another secret of thirty-two bytes"), timestamp: ts, signature: sig, body: body, now: testNow, wantErr: "does not match"},
		{name: "body changed", secret: testSecret, timestamp: ts, signature: sig, body: []byte(`{"version":"4","status":"resolved"}`), now: testNow, wantErr: "does not match"},
		{name: "sent to another cluster", secret: testSecret, timestamp: ts, signature: sig, body: body, change: func(m *Message) { m.Cluster = "staging" }, now: testNow, wantErr: "does not match"},
		{name: "cluster header dropped", secret: testSecret, timestamp: ts, signature: sig, body: body, change: func(m *Message) { m.Cluster = "" }, now: testNow, wantErr: "does not match"},
		{name: "sent to another path", secret: testSecret, timestamp: ts, signature: sig, body: body, change: func(m *Message) { m.Path = PathAlarm }, now: testNow, wantErr: "does not match"},
		{name: "sent with another method", secret: testSecret, timestamp: ts, signature: sig, body: body, change: func(m *Message) { m.Method = "PUT" }, now: testNow, wantErr: "does not match"},
		{name: "line break moves a field", secret: testSecret, timestamp: ts, signature: sig, body: body, change: func(m *Message) { m.Path, m.Cluster = PathAlertmanager+"\nprod", "" }, now: testNow, wantErr: "line break"},
		{name: "timestamp moved to replay", secret: testSecret, timestamp: "1795947630", signature: sig, body: body, now: testNow.Add(5 * time.Minute), wantErr: "does not match"},
		{name: "timestamp with a sign", secret: testSecret, timestamp: "+" + ts, signature: sig, body: body, now: testNow, wantErr: "not Unix seconds"},
		{name: "timestamp in milliseconds", secret: testSecret, timestamp: ts + "000", signature: sig, body: body, now: testNow, wantErr: "not Unix seconds"},
		{name: "no timestamp", secret: testSecret, signature: sig, body: body, now: testNow, wantErr: "not signed"},
		{name: "no signature", secret: testSecret, timestamp: ts, body: body, now: testNow, wantErr: "not signed"},
		{name: "signature without algorithm", secret: testSecret, timestamp: ts, signature: strings.TrimPrefix(sig, "sha256="), body: body, now: testNow, wantErr: "want sha256="},
		{name: "truncated signature", secret: testSecret, timestamp: ts, signature: sig[:len(sig)-2], body: body, now: testNow, wantErr: "62 hex digits"},
		{name: "signature not hex", secret: testSecret, timestamp: ts, signature: "sha256=" + strings.Repeat("zz", 32), body: body, now: testNow, wantErr: "not hex"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := msg(tc.body)
			if tc.change != nil {
				tc.change(&m)
			}
			at, sum, err := verify(tc.secret, tc.timestamp, tc.signature, m, tc.now)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				if !at.Equal(testNow) || hex.EncodeToString(sum) != strings.ToLower(strings.TrimPrefix(tc.signature, "sha256=")) {
					t.Errorf("got time %v and sum %x, want %v and the signature's", at, sum, testNow)
				}
				return
			}
			if !errors.Is(err, errUnauthenticated) {
				t.Fatalf("got %v, want errUnauthenticated", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not say %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantErr bool
	}{
		{name: "seconds", in: "1795947330", want: testNow},
		{name: "zero", in: "0", want: time.Unix(0, 0).UTC()},
		{name: "leading zeros", in: "01795947330", want: testNow},
		{name: "empty", in: "", wantErr: true},
		{name: "negative", in: "-1", wantErr: true},
		{name: "fraction", in: "1795947330.5", wantErr: true},
		{name: "spaces", in: " 1795947330", wantErr: true},
		{name: "12 digits", in: "100000000000", wantErr: true},
		{name: "RFC 3339", in: "2026-11-29T10:15:30Z", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTimestamp(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tc.wantErr)
			}
			if !got.Equal(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
