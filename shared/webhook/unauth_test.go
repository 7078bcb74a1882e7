package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestUnauthenticatedBodyNamesNothing: a 401 tells the caller how to authenticate and which request
// to quote, never the receiver's configuration (the secret's environment variables, the replay guard).
func TestUnauthenticatedBodyNamesNothing(t *testing.T) {
	push := events.LambdaFunctionURLRequest{RawPath: PathNodesStats, Headers: map[string]string{"content-type": "application/json",
		HeaderCluster: "prod", HeaderTimestamp: testNow.Format(time.RFC3339), HeaderSignature: "v1=00"}, Body: `{"nodes":{}}`}
	push.RequestContext.HTTP.Method = http.MethodPost
	for _, tc := range []struct {
		name    string
		r       *Receiver
		unwants []string
	}{
		{name: "no secret configured", r: &Receiver{Clusters: []string{"prod"}, Replays: memoryReplays()}, unwants: []string{envSecret, EnvSecretParam, "no secret"}},
		{name: "no replay guard", r: &Receiver{Clusters: []string{"prod"}, Secret: &countingSecret{}}, unwants: []string{"replay guard"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Clock = func() time.Time { return testNow }
			_, err := tc.r.Receive(t.Context(), push)
			status, code := Status(err)
			if status != http.StatusUnauthorized {
				t.Fatalf("status %d (%v), want 401", status, err)
			}
			body := ErrorResponse(status, code, err, "req-1").Body
			for _, u := range tc.unwants {
				if strings.Contains(body, u) {
					t.Fatalf("401 body names %q: %s", u, body)
				}
			}
			if !strings.Contains(body, "req-1") {
				t.Fatalf("401 body gives no request id to quote: %s", body)
			}
		})
	}
}
