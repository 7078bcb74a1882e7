package opensearch

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Auth selects how requests are authenticated.
type Auth string

// Authentication modes.
const (
	// AuthSigV4 signs every request with AWS Signature Version 4 (Amazon OpenSearch Service and
	// Serverless, and the Lambda functions' own IAM role).
	AuthSigV4 Auth = "sigv4"
	// AuthBasic sends HTTP basic credentials (the security plugin's internal users).
	AuthBasic Auth = "basic"
	// AuthNone sends no credentials (the simulator, a local cluster without security).
	AuthNone Auth = "none"
)

// SigV4 signing names.
const (
	// ServiceES signs for Amazon OpenSearch Service domains.
	ServiceES = "es"
)

// Config configures a Client. The zero value of every optional field means its default.
type Config struct {
	// URLs of the cluster's HTTP endpoints, e.g. https://search-x.eu-west-1.es.amazonaws.com.
	// Required. Credentials do not belong in a URL: set Username and Password.
	URLs []string
	// Auth is AuthSigV4, AuthBasic or AuthNone; empty means AuthNone.
	Auth Auth

	// Service is the SigV4 signing name: "es", the only one. OpenSearch Serverless collections
	// ("aoss") serve no _nodes/stats, no _cluster/reroute and no shard-level stats, so there is
	// nothing for shardwise to read or move there, and the name is refused.
	Service string
	// Region is the SigV4 signing region; empty takes the region of the AWS config chain.
	Region string
	// AWS supplies credentials for SigV4; nil loads the default AWS config chain (environment,
	// shared files, the Lambda execution role).
	AWS *aws.Config

	// Username and Password are the basic-auth credentials.
	Username string
	Password string

	// InsecureSkipVerify turns TLS certificate verification off. Verification is on by default.
	InsecureSkipVerify bool
	// AllowInsecureCredentials permits sending credentials where they can be read or replayed on
	// the way: basic auth to an http:// URL, or basic or SigV4 with InsecureSkipVerify. Without
	// it such a Config is invalid; with it New logs a warning.
	AllowInsecureCredentials bool
	// CACertFile is a PEM file of the CA that signed the cluster's certificate; when set, only
	// that CA is trusted.
	CACertFile string

	// Timeout bounds each HTTP attempt (retries get their own); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how often a request is retried on 429, 502, 503, 504, a network error or a
	// timeout; 0 means DefaultMaxRetries and a negative value turns retries off.
	MaxRetries int
	// RetryBackoff is the base of the exponential backoff with jitter between retries; 0 means
	// DefaultRetryBackoff.
	RetryBackoff time.Duration

	// MaxResponseBytes caps a response body; a larger one is ErrResponseTooLarge. 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// Transport replaces the HTTP transport (tests). TLS options are applied to it when it is an
	// *http.Transport.
	Transport http.RoundTripper
	// Log receives New's warnings; nil means slog.Default().
	Log *slog.Logger
}

// Validate reports the first invalid field of c, naming it. It reads no files and makes no calls.
func (c Config) Validate() error {
	if len(c.URLs) == 0 {
		return errors.New("opensearch config: URLs: at least one URL is required")
	}
	for i, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			// url.Error quotes the input, which could hold a password: report the position only.
			return fmt.Errorf("opensearch config: URLs[%d]: not a valid URL", i)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("opensearch config: URLs[%d]: scheme must be http or https, got %q", i, u.Scheme)
		}
		if u.Host == "" {
			return fmt.Errorf("opensearch config: URLs[%d]: host is missing", i)
		}
		if u.User != nil {
			return fmt.Errorf("opensearch config: URLs[%d]: credentials in the URL are not allowed; set Username and Password", i)
		}
	}
	switch c.Auth {
	case "", AuthNone:
		if c.Username != "" || c.Password != "" {
			return errors.New("opensearch config: Username/Password: set but Auth is not basic")
		}
	case AuthBasic:
		if c.Username == "" {
			return errors.New("opensearch config: Username: required when Auth is basic")
		}
		if c.Password == "" {
			return errors.New("opensearch config: Password: required when Auth is basic")
		}
	case AuthSigV4:
		if c.Username != "" || c.Password != "" {
			return errors.New("opensearch config: Username/Password: set but Auth is sigv4")
		}
	default:
		return fmt.Errorf("opensearch config: Auth: must be sigv4, basic or none, got %q", c.Auth)
	}
	switch c.Service {
	case "", ServiceES:
	case "aoss":
		return errors.New(`opensearch config: Service: "aoss" (OpenSearch Serverless) is not supported: collections serve no _nodes/stats or _cluster/reroute`)
	default:
		return fmt.Errorf("opensearch config: Service: must be %q, got %q", ServiceES, c.Service)
	}
	if c.InsecureSkipVerify && c.CACertFile != "" {
		return errors.New("opensearch config: CACertFile: pointless with InsecureSkipVerify; set one of them")
	}
	if w := c.Warnings(); len(w) > 0 && !c.AllowInsecureCredentials {
		return fmt.Errorf("opensearch config: AllowInsecureCredentials: %s; set it to accept that", strings.Join(w, "; "))
	}
	if c.MaxResponseBytes < 0 {
		return fmt.Errorf("opensearch config: MaxResponseBytes: must not be negative, got %d", c.MaxResponseBytes)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("opensearch config: Timeout: must not be negative, got %s", c.Timeout)
	}
	if c.RetryBackoff < 0 {
		return fmt.Errorf("opensearch config: RetryBackoff: must not be negative, got %s", c.RetryBackoff)
	}
	return nil
}

// Warnings says how c sends credentials where they can be read or replayed on the way, which
// only AllowInsecureCredentials permits.
func (c Config) Warnings() []string {
	var out []string
	if c.Auth == AuthBasic {
		for i, raw := range c.URLs {
			if u, err := url.Parse(raw); err == nil && u.Scheme == "http" {
				out = append(out, fmt.Sprintf("URLs[%d]: basic auth over http:// sends the password in clear text", i))
			}
		}
	}
	if c.InsecureSkipVerify && (c.Auth == AuthBasic || c.Auth == AuthSigV4) {
		out = append(out, fmt.Sprintf("InsecureSkipVerify with %s auth sends credentials to whoever answers", c.Auth))
	}
	return out
}

// withDefaults returns c with every unset optional field at its default.
func (c Config) withDefaults() Config {
	if c.Auth == "" {
		c.Auth = AuthNone
	}
	if c.Auth == AuthSigV4 && c.Service == "" {
		c.Service = DefaultService
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return c
}

// String prints c without its password, so logging a Config cannot leak it.
func (c Config) String() string {
	password := ""
	if c.Password != "" {
		password = "[redacted]"
	}
	return fmt.Sprintf("{URLs:%v Auth:%s Service:%s Region:%s Username:%s Password:%s InsecureSkipVerify:%t AllowInsecureCredentials:%t CACertFile:%s Timeout:%s MaxRetries:%d RetryBackoff:%s MaxResponseBytes:%d}",
		c.URLs, c.Auth, c.Service, c.Region, c.Username, password, c.InsecureSkipVerify, c.AllowInsecureCredentials, c.CACertFile, c.Timeout, c.MaxRetries, c.RetryBackoff, c.MaxResponseBytes)
}

// GoString keeps %#v from printing the password too.
func (c Config) GoString() string { return "opensearch.Config" + c.String() }

// LogValue keeps slog from printing the password.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("urls", c.URLs),
		slog.String("auth", string(c.Auth)),
		slog.String("service", c.Service),
		slog.String("region", c.Region),
		slog.String("username", c.Username),
		slog.Bool("password_set", c.Password != ""),
		slog.Bool("insecure_skip_verify", c.InsecureSkipVerify),
		slog.Bool("allow_insecure_credentials", c.AllowInsecureCredentials),
		slog.String("ca_cert_file", c.CACertFile),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_retries", c.MaxRetries),
		slog.Duration("retry_backoff", c.RetryBackoff),
		slog.Int64("max_response_bytes", c.MaxResponseBytes),
	)
}
