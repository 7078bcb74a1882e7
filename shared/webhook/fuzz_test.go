package webhook

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardwise/shardwise/shared/state"
)

// Every parser of outside input here is fuzzed: the three bodies, the two HMAC headers, and
// Receive over all of them. Each target checks what must hold for any input, beyond not panicking.

func addBodies(f *testing.F, samples ...string) {
	f.Helper()
	for _, name := range samples {
		f.Add([]byte(sampleRequest(f, name).Body))
	}
	for _, s := range []string{"", "null", "{}", "[]", `"x"`, "0", `{"nodes":null}`, `{"nodes":{"":{}}}`,
		`{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"cluster":""}}]}`,
		`{"detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch","detail":{"alarmName":"shardwise-"}}`} {
		f.Add([]byte(s))
	}
}

func FuzzParseNodesStats(f *testing.F) {
	addBodies(f, "webhook-nodes-stats.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, err := parseNodesStats(b)
		if err != nil {
			return
		}
		if len(ns.Nodes) == 0 {
			t.Fatal("accepted a document without nodes")
		}
		for _, n := range ns.Nodes {
			if n.ID == "" {
				t.Fatal("accepted a node without an id")
			}
		}
	})
}

func FuzzParseAlertmanager(f *testing.F) {
	addBodies(f, "webhook-alertmanager.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		am, err := parseAlertmanager(b)
		if err != nil {
			return
		}
		for _, list := range [][]string{am.Clusters, am.Nodes} {
			if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) || slices.Contains(list, "") {
				t.Fatalf("labels %q are not sorted, unique and non-empty", list)
			}
		}
		if !am.Firing && (len(am.Clusters) > 0 || len(am.Nodes) > 0) {
			t.Fatalf("nothing firing, yet clusters %v and nodes %v", am.Clusters, am.Nodes)
		}
	})
}

func FuzzParseAlarm(f *testing.F) {
	addBodies(f, "webhook-alarm.json")
	configured := []string{"prod", "prod-eu"}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAlarm(b)
		if err != nil {
			return
		}
		if a.Name == "" {
			t.Fatal("accepted an alarm without a name")
		}
		c, err := a.Cluster(configured)
		if err == nil && !slices.Contains(configured, c) {
			t.Fatalf("alarm %q resolved to %q, not a configured cluster", a.Name, c)
		}
	})
}

func FuzzParseSignature(f *testing.F) {
	_, sig := Sign(testSecret, Message{Method: "POST", Path: PathAlarm, Body: []byte("{}")}, testNow)
	for _, s := range []string{sig, strings.ToUpper(sig), "sha256=", "sha256", "", "sha1=" + strings.Repeat("a", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		sum, err := parseSignature(v)
		if err != nil {
			return
		}
		if len(sum) != 32 {
			t.Fatalf("%q gave %d bytes, want 32", v, len(sum))
		}
		if !strings.EqualFold(v, signaturePrefix+hex.EncodeToString(sum)) {
			t.Fatalf("%q does not spell the sum it gave", v)
		}
	})
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"1795947330", "0", "", "-1", "+1", "1e9", "99999999999", "1795947330.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		at, err := parseTimestamp(v)
		if err != nil {
			return
		}
		if got := strconv.FormatInt(at.Unix(), 10); strings.TrimLeft(v, "0") != strings.TrimLeft(got, "0") {
			t.Fatalf("%q read as %s", v, got)
		}
	})
}

// FuzzSignVerify: whatever the request and time, a signature made with Sign verifies at that time
// and fails for any other body, path or cluster.
func FuzzSignVerify(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "/nodes/stats", "prod", int64(1795947330), byte(0))
	f.Add([]byte{}, "", "", int64(0), byte(7))
	f.Fuzz(func(t *testing.T, body []byte, path, cluster string, sec int64, flip byte) {
		if sec < 0 || sec > 99999999999 || strings.ContainsAny(path+cluster, "\r\n") {
			return
		}
		at := time.Unix(sec, 0)
		m := Message{Method: http.MethodPost, Path: path, Cluster: cluster, Body: body}
		ts, sig := Sign(testSecret, m, at)
		if _, _, err := verify(testSecret, ts, sig, m, at); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		for _, other := range []Message{
			{Method: m.Method, Path: m.Path, Cluster: m.Cluster, Body: append([]byte{flip}, body...)},
			{Method: m.Method, Path: string(flip) + m.Path, Cluster: m.Cluster, Body: body},
			{Method: m.Method, Path: m.Path, Cluster: m.Cluster + string(flip), Body: body},
		} {
			if _, _, err := verify(testSecret, ts, sig, other, at); err == nil {
				t.Fatalf("signature of %q %q %q accepted for %q %q %q", m.Path, m.Cluster, m.Body, other.Path, other.Cluster, other.Body)
			}
		}
	})
}

// FuzzReceive sends arbitrary bodies, paths and content types, signed with HMAC or not, base64
// or not: a request is either refused with one of the package's statuses or accepted for
// configured clusters only.
func FuzzReceive(f *testing.F) {
	for _, s := range []struct{ file, path string }{
		{"webhook-nodes-stats.json", PathNodesStats}, {"webhook-alertmanager.json", PathAlertmanager}, {"webhook-alarm.json", PathAlarm},
	} {
		f.Add([]byte(sampleRequest(f, s.file).Body), s.path, "application/json", "prod", true, false)
	}
	f.Add([]byte("{}"), "/", "text/plain", "", false, true)
	known := map[int]bool{}
	for _, p := range problems {
		known[p.status] = true
	}
	r := &Receiver{Clusters: []string{"prod"}, Secret: StaticSecret(testSecret), Replays: StoreReplays{Store: state.NewMemory(func() time.Time { return testNow })},
		Clock: func() time.Time { return testNow }}
	f.Fuzz(func(t *testing.T, body []byte, path, contentType, cluster string, sign, b64 bool) {
		req := events.LambdaFunctionURLRequest{
			RawPath: path,
			Headers: map[string]string{"content-type": contentType, HeaderCluster: cluster},
			Body:    string(body),
		}
		req.RequestContext.HTTP.Method = http.MethodPost
		if sign {
			req.Headers[HeaderTimestamp], req.Headers[HeaderSignature] = Sign(testSecret, Message{Method: http.MethodPost, Path: path, Cluster: cluster, Body: body}, testNow)
		}
		if b64 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
		act, err := r.Receive(t.Context(), req)
		if err != nil {
			if status, _ := Status(err); !known[status] {
				t.Fatalf("refused with status %d: %v", status, err)
			}
			if !sign && !strings.Contains(err.Error(), errUnauthenticated.Error()) && !strings.Contains(err.Error(), errTooLarge.Error()) {
				t.Fatalf("unsigned request refused for another reason than authentication: %v", err)
			}
			return
		}
		if !sign {
			t.Fatal("accepted an unsigned request")
		}
		for _, c := range act.Clusters {
			if c != "prod" {
				t.Fatalf("accepted for cluster %q", c)
			}
		}
	})
}
