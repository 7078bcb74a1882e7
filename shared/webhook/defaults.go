package webhook

import (
	"time"

	"github.com/shardwise/shardwise/shared/telemetry"
)

// Limits and defaults, each with where its number comes from.
const (
	// MaxBodyBytes is the largest body accepted (over it: 413). A pushed
	// _nodes/stats of 100 nodes is about 150 KB unfiltered, an Alertmanager notification a few KB.
	MaxBodyBytes = 1 << 20

	// MaxClockSkew is how far an HMAC-signed request's timestamp may lie from the receiver's clock,
	// either way (replays older than 5 minutes are refused; Stripe and Slack sign their
	// webhooks with the same window).
	MaxClockSkew = 5 * time.Minute

	// defaultSecretTTL is how long a secret read from SSM Parameter Store is reused: the default
	// cache TTL of the AWS Parameters and Secrets Lambda Extension (SSM_PARAMETER_STORE_TTL, 300 s).
	// A rotated secret takes effect within it.
	defaultSecretTTL = 5 * time.Minute

	// minSecretBytes is the shortest HMAC secret accepted: RFC 2104 section 3 advises against keys
	// shorter than the hash's output, 32 bytes for SHA-256.
	minSecretBytes = 32
)

// Request headers. Function URLs deliver header names in lower case.
const (
	// HeaderCluster names the configured cluster a request is about. A pushed _nodes/stats
	// document carries only OpenSearch's own cluster_name, which on Amazon OpenSearch Service is
	// "<account>:<domain>", not the name shardwise's configuration gives the cluster.
	HeaderCluster = "x-shardwise-cluster"
	// HeaderTimestamp is the Unix time, in seconds, at which an HMAC sender signed the request.
	HeaderTimestamp = "x-shardwise-timestamp"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of timestamp + "." + body.
	HeaderSignature = "x-shardwise-signature"
)

// Environment variables holding the HMAC secret: at most one may be set.
const (
	// envSecret holds the secret itself.
	envSecret = "SHARDWISE_WEBHOOK_SECRET"
	// EnvSecretParam names an SSM parameter (a SecureString) holding the secret.
	EnvSecretParam = "SHARDWISE_WEBHOOK_SECRET_PARAM"
)

// Paths, one per kind of body.
const (
	PathNodesStats   = "/nodes/stats"
	PathAlertmanager = "/alertmanager"
	PathAlarm        = "/alarm"
)

// Labels and dimensions that name a cluster or a node in notifications.
const (
	// labelCluster and labelNode are the Prometheus alert labels read; the OpenSearch Prometheus
	// exporter plugin labels its series "cluster" and "node".
	labelCluster = "cluster"
	labelNode    = "node"
	// dimensionCluster and dimensionNode are the dimensions of shardwise's own CloudWatch metrics
	// (namespace shardwise); dimensionDomain and dimensionNodeID those of Amazon OpenSearch
	// Service's (namespace AWS/ES).
	dimensionCluster = telemetry.DimensionCluster
	dimensionNode    = telemetry.DimensionNode
	dimensionDomain  = "DomainName"
	dimensionNodeID  = "NodeId"
	// AlarmPrefix starts the names of the alarms shardwise's template and docs create,
	// "shardwise-<cluster>-…"; the detect function's EventBridge rule matches the same prefix.
	AlarmPrefix = "shardwise-"
)
