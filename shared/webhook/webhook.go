// Package webhook is the metrics webhook of the ingest function's Function URLs. It authenticates a
// request — SigV4, checked by Lambda itself on the AWS_IAM URL, or an HMAC-SHA256 signature on the
// "webhook" alias's public URL for senders that cannot sign SigV4 — reads its body by path (a
// _nodes/stats document a collector pushed, an Alertmanager notification, a CloudWatch alarm state
// change) and says what to do as an Action. It publishes nothing and stores only the signature of
// an HMAC-signed request it accepts: the handler carries an Action out with the engine, and a
// request refused here has touched nothing. Its only I/O is reading the HMAC secret through a
// SecretSource and recording signatures through a ReplayGuard.
//
// The HMAC scheme: HeaderTimestamp carries the Unix time in seconds, HeaderSignature "sha256="
// and the hex HMAC-SHA256, keyed with the secret, of the timestamp, the method, the path, the
// HeaderCluster value and the body as sent, each but the body followed by a line feed (see Sign).
// A request more than MaxClockSkew away from the receiver's clock is refused, and a ReplayGuard
// remembers the signature of every request carried out for that window, so a captured request
// cannot be carried out twice. Senders
// that can do neither SigV4 nor HMAC (Alertmanager's webhook_config sends static headers only)
// reach the AWS_IAM URL through a SigV4 signing proxy such as aws-sigv4-proxy.
package webhook

import (
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardwise/shardwise/shared/opensearch"
)

// Kind is what a request's body is.
type Kind string

// The kinds of body, one per path.
const (
	KindNodesStats   Kind = "nodes_stats"
	KindAlertmanager Kind = "alertmanager"
	KindAlarm        Kind = "cloudwatch_alarm"
)

var routes = map[string]Kind{
	PathNodesStats:   KindNodesStats,
	PathAlertmanager: KindAlertmanager,
	PathAlarm:        KindAlarm,
}

// Auth is how a request proved where it came from.
type Auth string

// Authentication methods.
const (
	// AuthSigV4: Lambda verified a SigV4 signature and IAM allowed the caller (AWS_IAM URL).
	AuthSigV4 Auth = "sigv4"
	// AuthHMAC: the request carried a valid, fresh HMAC signature (the public webhook URL).
	AuthHMAC Auth = "hmac"
)

// Action is what an accepted request asks for.
type Action struct {
	Kind Kind `json:"kind"`
	Auth Auth `json:"auth"`
	// Clusters are the configured clusters to ingest now; empty when Ignored is set.
	Clusters []string `json:"clusters,omitempty"`
	// NodesStats (KindNodesStats) replace the pulled node stats of Clusters[0]'s next sample.
	NodesStats *opensearch.NodesStats `json:"-"`
	// Detect asks for planning right after the ingest: an alert or alarm says a node is in
	// trouble now, so waiting for the next scheduled cycle wastes up to a minute.
	Detect bool `json:"detect"`
	// Nodes are the nodes the notification names, for the log.
	Nodes []string `json:"nodes,omitempty"`
	// Ignored says why a well-formed request asks for nothing (alerts resolved, alarm back to OK).
	Ignored string `json:"ignored,omitempty"`
}

// Receiver turns Function URL requests into Actions.
type Receiver struct {
	// Clusters are the configured clusters' names.
	Clusters []string
	// Secret is the HMAC secret's source; nil refuses every request that is not SigV4-signed.
	Secret SecretSource
	// Replays records the signatures of accepted HMAC-signed requests; nil refuses every request
	// that is not SigV4-signed, as a replay could not be told apart.
	Replays ReplayGuard
	// Clock tells the time for the timestamp check; nil means time.Now.
	Clock func() time.Time
}

// Receive authenticates req and reads what it asks for. In order: the body's size (413), its
// authentication (401, or 503 when the secret cannot be read), the method (405) and path (404),
// the content type (400), the body (400) and the cluster it names (400 when none, 404 when not
// configured). Nothing about the request is interpreted before it is authenticated. Last, an
// HMAC-signed request that asks for something has its signature recorded, and one recorded
// before is refused as a replay (409). Errors wrap the package's sentinel errors; Status maps
// them to HTTP.
func (r *Receiver) Receive(ctx context.Context, req events.LambdaFunctionURLRequest) (Action, error) {
	body, err := requestBody(req)
	if err != nil {
		return Action{}, err
	}
	auth, sig, err := r.authenticate(ctx, req, body)
	if err != nil {
		return Action{}, err
	}
	act, err := r.read(req, body, auth)
	if err != nil || auth != AuthHMAC || act.Ignored != "" {
		return act, err
	}
	if err := r.Replays.Claim(ctx, sig.sum, replayExpiry(sig.at)); err != nil {
		return Action{}, err
	}
	return act, nil
}

// read checks an authenticated request's method, path, content type and body, and says what it
// asks for.
func (r *Receiver) read(req events.LambdaFunctionURLRequest, body []byte, auth Auth) (Action, error) {
	if m := req.RequestContext.HTTP.Method; m != http.MethodPost {
		return Action{}, fmt.Errorf("%w: %s; the webhook takes POST", errMethod, m)
	}
	path := strings.TrimSuffix(req.RawPath, "/")
	kind, ok := routes[path]
	if !ok {
		return Action{}, fmt.Errorf("%w at %q: POST to %s, %s or %s", errNoRoute, req.RawPath, PathNodesStats, PathAlertmanager, PathAlarm)
	}
	if err := checkContentType(header(req.Headers, "content-type")); err != nil {
		return Action{}, err
	}
	act := Action{Kind: kind, Auth: auth}
	named := header(req.Headers, HeaderCluster)
	switch kind {
	case KindNodesStats:
		ns, err := parseNodesStats(body)
		if err != nil {
			return Action{}, err
		}
		if named == "" && slices.Contains(r.Clusters, ns.ClusterName) {
			named = ns.ClusterName
		}
		if named == "" {
			return Action{}, fmt.Errorf("%w: set %s (the document's cluster_name %q is not a configured cluster)", errNoCluster, HeaderCluster, ns.ClusterName)
		}
		act.NodesStats = &ns
		act.Clusters = []string{named}
	case KindAlertmanager:
		am, err := parseAlertmanager(body)
		if err != nil {
			return Action{}, err
		}
		if !am.Firing {
			act.Ignored = "no firing alerts"
			return act, nil
		}
		act.Clusters, act.Nodes, act.Detect = am.Clusters, am.Nodes, true
		if named != "" {
			act.Clusters = []string{named}
		}
		if len(act.Clusters) == 0 {
			return Action{}, fmt.Errorf("%w: set %s or give the alerts a %q label", errNoCluster, HeaderCluster, labelCluster)
		}
	case KindAlarm:
		al, err := ParseAlarm(body)
		if err != nil {
			return Action{}, err
		}
		if !al.InAlarm {
			act.Ignored = fmt.Sprintf("alarm %s is not in ALARM", al.Name)
			return act, nil
		}
		if named == "" {
			if named, err = al.Cluster(r.Clusters); err != nil {
				return Action{}, err
			}
		}
		act.Clusters, act.Nodes, act.Detect = []string{named}, al.Nodes, true
	}
	for _, c := range act.Clusters {
		if !slices.Contains(r.Clusters, c) {
			return Action{}, fmt.Errorf("%w %q", ErrUnknownCluster, c)
		}
	}
	return act, nil
}

// requestBody returns req's body, decoded from base64 when Lambda encoded it, refusing one over
// MaxBodyBytes before decoding it.
func requestBody(req events.LambdaFunctionURLRequest) ([]byte, error) {
	if !req.IsBase64Encoded {
		if len(req.Body) > MaxBodyBytes {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", errTooLarge, len(req.Body), MaxBodyBytes)
		}
		return []byte(req.Body), nil
	}
	if len(req.Body) > base64.StdEncoding.EncodedLen(MaxBodyBytes) {
		return nil, fmt.Errorf("%w: about %d bytes, limit %d", errTooLarge, base64.StdEncoding.DecodedLen(len(req.Body)), MaxBodyBytes)
	}
	body, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: base64 body: %w", errMalformed, err)
	}
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errTooLarge, len(body), MaxBodyBytes)
	}
	return body, nil
}

// signature is a verified HMAC signature: when it was made, and its sum.
type signature struct {
	at  time.Time
	sum []byte
}

// authenticate accepts a request Lambda authorized with SigV4 (only the AWS_IAM URL's requests
// carry requestContext.authorizer.iam, and Lambda builds that context, not the caller), else
// checks its HMAC signature.
func (r *Receiver) authenticate(ctx context.Context, req events.LambdaFunctionURLRequest, body []byte) (Auth, signature, error) {
	if a := req.RequestContext.Authorizer; a != nil && a.IAM != nil {
		return AuthSigV4, signature{}, nil
	}
	timestamp, sig := header(req.Headers, HeaderTimestamp), header(req.Headers, HeaderSignature)
	if timestamp == "" || sig == "" {
		return "", signature{}, fmt.Errorf("%w: request is not signed: SigV4 through the AWS_IAM URL, or %s and %s headers", errUnauthenticated, HeaderTimestamp, HeaderSignature)
	}
	if r.Secret == nil {
		return "", signature{}, fmt.Errorf("%w: %w: HMAC signatures are not accepted: no secret is configured (%s or %s)", errUnauthenticated, errReceiverConfig, envSecret, EnvSecretParam)
	}
	if r.Replays == nil {
		return "", signature{}, fmt.Errorf("%w: %w: HMAC signatures are not accepted: no replay guard is configured", errUnauthenticated, errReceiverConfig)
	}
	secret, err := r.Secret.Secret(ctx)
	if err != nil {
		return "", signature{}, fmt.Errorf("%w: %w", ErrSecretUnavailable, err)
	}
	now := time.Now
	if r.Clock != nil {
		now = r.Clock
	}
	m := Message{Method: req.RequestContext.HTTP.Method, Path: req.RawPath, Cluster: header(req.Headers, HeaderCluster), Body: body}
	at, sum, err := verify(secret, timestamp, sig, m, now())
	if err != nil {
		return "", signature{}, err
	}
	return AuthHMAC, signature{at: at, sum: sum}, nil
}

// checkContentType accepts application/json, in UTF-8 when a charset is given (RFC 8259 requires
// UTF-8 for JSON exchanged between systems).
func checkContentType(v string) error {
	if v == "" {
		return fmt.Errorf("%w: no content-type; send application/json", errContentType)
	}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", errContentType, v, err)
	}
	if mt != "application/json" {
		return fmt.Errorf("%w: %q; send application/json", errContentType, mt)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("%w: charset %q; JSON is UTF-8", errContentType, cs)
	}
	return nil
}

// header returns a header's value. Function URLs deliver names in lower case; other callers (the
// local runner, tests) may not.
func header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
