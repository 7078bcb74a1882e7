// Package opensearch is shardwise's OpenSearch client: typed calls on opensearch-go v4 whose
// responses decode into slim structs holding only what shardwise reads, requested with filter_path
// so a 30,000-shard cluster stays small on the wire and in memory. The Lambda functions use it
// against Amazon OpenSearch Service (SigV4) and the local runner against the simulator over HTTP:
// one code path.
package opensearch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/signer/awsv2"
)

// Client sends shardwise's calls to one OpenSearch cluster. It is safe for concurrent use; build
// it once per process (outside the Lambda handler) so warm invocations reuse its connections.
type Client struct {
	// os retries as Config says; once sends each request once, for calls that change the
	// cluster, where a retry of an attempt whose answer was lost could act twice.
	os, once *opensearch.Client
	// maxBody is the largest response body read.
	maxBody int64
	// states keeps what the last cluster state answer decoded to (see stateMemo).
	states stateMemo
}

// nodeStatsIntervalEnv is opensearch-go's OPENSEARCH_GO_NODE_STATS_INTERVAL. Left unset, each client
// polls GET /_nodes/_local/stats/jvm,breaker,thread_pool every 5 to 30 s in the background, to
// shed load from overloaded nodes among those it routes to. shardwise sends its few requests to
// one endpoint, so the polls only add calls to a cluster under stress; and a poll in flight when a
// client is closed still lands afterwards. The transport takes its NodeStatsInterval only from
// its own config, which opensearch.Config does not carry, or from this variable.
const nodeStatsIntervalEnv = "OPENSEARCH_GO_NODE_STATS_INTERVAL"

// noNodeStatsPolling turns opensearch-go's node stats polling off for this process, unless the
// operator set the variable.
func noNodeStatsPolling() {
	if _, set := os.LookupEnv(nodeStatsIntervalEnv); !set {
		_ = os.Setenv(nodeStatsIntervalEnv, "-1")
	}
}

// New validates cfg and builds a Client. ctx bounds loading the AWS config chain for SigV4.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	noNodeStatsPolling()
	maxRetries := cfg.MaxRetries
	if maxRetries < 0 {
		// opensearch-go sends nothing at all when its MaxRetries is negative; DisableRetry is
		// its way to send once.
		maxRetries = DefaultMaxRetries
	}

	transport, err := buildTransport(cfg)
	if err != nil {
		return nil, err
	}
	osCfg := opensearch.Config{
		Addresses:            cfg.URLs,
		Transport:            transport,
		RetryOnStatus:        append([]int(nil), retryOnStatus...),
		EnableRetryOnTimeout: true,
		MaxRetries:           maxRetries,
		DisableRetry:         cfg.MaxRetries < 0,
		RetryBackoff:         exponentialBackoff(cfg.RetryBackoff),
		RequestTimeout:       cfg.Timeout,
		// Node discovery would replace the configured URLs with node addresses that a managed
		// domain does not expose; pinning it off also ignores OPENSEARCH_GO_ROUTER.
		DiscoverNodesOnStart: new(false),
	}
	switch cfg.Auth {
	case AuthBasic:
		osCfg.Username, osCfg.Password = cfg.Username, cfg.Password
	case AuthSigV4:
		awsCfg, err := loadAWSConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		signer, err := awsv2.NewSignerWithService(awsCfg, cfg.Service)
		if err != nil {
			return nil, fmt.Errorf("opensearch config: Service: %w", err)
		}
		osCfg.Signer = signer
	}

	client, err := opensearch.NewClient(osCfg)
	if err != nil {
		return nil, fmt.Errorf("create opensearch client: %w", err)
	}
	osCfg.DisableRetry = true
	once, err := opensearch.NewClient(osCfg)
	if err != nil {
		return nil, fmt.Errorf("create opensearch client: %w", err)
	}
	if w := cfg.Warnings(); len(w) > 0 {
		log := cfg.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("opensearch client allows insecure credentials", "urls", cfg.URLs, "auth", string(cfg.Auth), "reasons", w)
	}
	return &Client{os: client, once: once, maxBody: cfg.MaxResponseBytes}, nil
}

// Close stops the transport's background work and closes idle connections.
func (c *Client) Close() error {
	if err := errors.Join(c.os.Close(), c.once.Close()); err != nil {
		return fmt.Errorf("close opensearch client: %w", err)
	}
	return nil
}

func loadAWSConfig(ctx context.Context, cfg Config) (aws.Config, error) {
	var awsCfg aws.Config
	if cfg.AWS != nil {
		awsCfg = cfg.AWS.Copy()
	} else {
		loaded, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return aws.Config{}, fmt.Errorf("opensearch config: AWS: load default AWS config: %w", err)
		}
		awsCfg = loaded
	}
	if cfg.Region != "" {
		awsCfg.Region = cfg.Region
	}
	if awsCfg.Region == "" {
		return aws.Config{}, errors.New("opensearch config: Region: not set and none found in the AWS config chain")
	}
	if awsCfg.Credentials == nil {
		return aws.Config{}, errors.New("opensearch config: AWS: no credentials provider for sigv4")
	}
	return awsCfg, nil
}

// buildTransport gives each Client its own *http.Transport (so Close never touches
// http.DefaultTransport) with TLS verification on unless InsecureSkipVerify, and the CA of
// CACertFile as the only root when set.
func buildTransport(cfg Config) (http.RoundTripper, error) {
	if cfg.Transport != nil && !cfg.InsecureSkipVerify && cfg.CACertFile == "" {
		return cfg.Transport, nil
	}
	var base *http.Transport
	switch t := cfg.Transport.(type) {
	case nil:
		def, ok := http.DefaultTransport.(*http.Transport)
		if !ok {
			return nil, fmt.Errorf("opensearch config: Transport: http.DefaultTransport is a %T, not an *http.Transport", http.DefaultTransport)
		}
		base = def.Clone()
	case *http.Transport:
		base = t.Clone()
	default:
		return nil, fmt.Errorf("opensearch config: Transport: TLS options need an *http.Transport, got %T", cfg.Transport)
	}
	if base.TLSClientConfig == nil {
		base.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.InsecureSkipVerify {
		base.TLSClientConfig.InsecureSkipVerify = true
	}
	if cfg.CACertFile != "" {
		pem, err := os.ReadFile(cfg.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("opensearch config: CACertFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("opensearch config: CACertFile: no PEM certificate in %s", cfg.CACertFile)
		}
		base.TLSClientConfig.RootCAs = pool
	}
	return base, nil
}

// exponentialBackoff returns opensearch-go's RetryBackoff: base·2^(attempt-1), capped, with
// "equal jitter" (half fixed, half random) so clients that failed together do not retry together.
func exponentialBackoff(base time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := base
		for i := 1; i < attempt && d < maxRetryBackoff; i++ {
			d *= 2
		}
		d = min(d, maxRetryBackoff)
		half := d / 2
		return half + rand.N(d-half+1)
	}
}

// call sends req and returns the body of a 2xx response; any other status becomes an *APIError.
// name says which call failed ("nodes stats") in every error.
//
// It goes through the transport's Stream rather than opensearch.Do: Do buffers every body with
// io.ReadAll, which grows its buffer a quarter at a time, and the body was then copied once more
// here, so the 7 MB _stats answer of a 30,000-copy cluster cost about six times its size in
// buffers. Stream keeps Do's retries, signing and headers and hands over the raw body, read here
// once. The body is decoded into the slim structs by the caller, and a decode error must not
// carry a 30,000-shard body in its message.
func (c *Client) call(ctx context.Context, name, method string, req opensearch.Request) ([]byte, error) {
	return c.send(ctx, c.os, name, method, req)
}

// get sends a GET that only reads, with retries, and decodes its answer; what names the request in
// errors, the decoder's included.
func get[T any](ctx context.Context, c *Client, what string, req opensearch.Request, decode func([]byte) (T, error)) (T, error) {
	var zero T
	body, err := c.call(ctx, what, http.MethodGet, req)
	if err != nil {
		return zero, err
	}
	v, err := decode(body)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// callOnce is call without retries, for requests that change the cluster (a reroute, a settings
// update): a timeout or a dropped connection does not say whether the request landed, and sending
// it again could act twice. The caller reads the cluster again instead.
func (c *Client) callOnce(ctx context.Context, name, method string, req opensearch.Request) ([]byte, error) {
	return c.send(ctx, c.once, name, method, req)
}

func (c *Client) send(ctx context.Context, client *opensearch.Client, name, method string, req opensearch.Request) ([]byte, error) {
	httpReq, err := req.GetRequest(method)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	resp, err := client.Stream(httpReq.WithContext(ctx))
	if resp != nil && resp.Body != nil {
		// Stream may return a response with an error (a retry's backoff cut short by ctx); its
		// body is ours to close either way.
		defer func() { _ = resp.Body.Close() }()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if resp == nil {
		return nil, fmt.Errorf("%s: no response from the transport", name)
	}
	var body []byte
	if resp.Body != nil {
		if body, err = readBody(resp.Body, resp.ContentLength, c.maxBody); err != nil {
			return nil, fmt.Errorf("%s: read response: %w", name, err)
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s: %w", name, parseAPIError(resp.StatusCode, body))
	}
	return body, nil
}

// readBody reads a response body whole, refusing one over limit bytes with ErrResponseTooLarge
// (a Content-Length over it before reading anything). With a believable Content-Length it reads
// into one buffer of that size. Without one (the simulator streams its answers chunked) it reads
// pieces that double up to maxBodyPiece and joins them once: about twice the body in allocations,
// where a growing buffer costs four times and holds up to three at its peak.
func readBody(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d, cap %d", ErrResponseTooLarge, contentLength, limit)
	}
	if contentLength >= 0 && contentLength <= maxPresizedBody {
		body := make([]byte, contentLength)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("%d-byte body: %w", contentLength, err)
		}
		return body, nil
	}
	var pieces [][]byte
	var read int64
	for size := firstBodyPiece; ; size = min(2*size, maxBodyPiece) {
		p := make([]byte, min(int64(size), limit+1-read))
		n, err := io.ReadFull(r, p)
		pieces = append(pieces, p[:n])
		read += int64(n)
		if read > limit {
			return nil, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, limit)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(pieces) == 1 {
		return pieces[0], nil
	}
	return bytes.Join(pieces, nil), nil
}

// prefixed returns prefix+name for each name: filter_path lists read better grouped by object.
func prefixed(prefix string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// joinFilters concatenates filter_path groups.
func joinFilters(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// checkIndexName refuses what would turn a one-index call into a call on many indices.
func checkIndexName(index string) error {
	switch {
	case index == "":
		return errors.New("index name is empty")
	case index == "_all" || strings.ContainsAny(index, "*,"):
		return fmt.Errorf("index %q is a pattern; name one index", index)
	}
	return nil
}
