// Package config is the one typed configuration of a shardwise deployment: every field has a
// documented default, it loads from the environment in Lambda and from a JSON file in the CLI, and it
// is validated at start so a bad value stops the function with a message naming the field.
package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/jsonstrict"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/sandbox"
)

// Cluster is one watched cluster.
type Cluster struct {
	// Name identifies the cluster in events, metrics, alarms and the state table.
	Name string `json:"name"`
	// URLs are the cluster's HTTP endpoints, e.g. https://search-x.eu-west-1.es.amazonaws.com.
	URLs    []string `json:"urls"`
	Auth    string   `json:"auth"`              // sigv4 | basic | none
	Service string   `json:"service,omitempty"` // es, the SigV4 signing name (Serverless, aoss, is refused)
	// Region is the SigV4 region; empty: from the AWS configuration chain.
	Region string `json:"region,omitempty"`
	// Username for basic auth; the password is read from PasswordEnv, never stored in config.
	Username    string `json:"username,omitempty"`
	PasswordEnv string `json:"password_env,omitempty"`
	// secret holds credentials read from Secrets Manager at start (WithBasicAuth); never read from
	// or written to a document.
	secret *BasicAuth
	// Insecure skips TLS certificate verification.
	Insecure bool `json:"insecure_skip_verify,omitempty"`
	// CACertFile is a PEM file of the CA that signed the cluster's certificate; when set, only
	// that CA is trusted (not with insecure_skip_verify).
	CACertFile string `json:"ca_cert_file,omitempty"`
	// AllowInsecureCredentials accepts basic auth over http:// and credentials with
	// insecure_skip_verify, which are refused without it; the client logs a warning.
	AllowInsecureCredentials bool `json:"allow_insecure_credentials,omitempty"`
}

// DefaultAuth is the auth of a cluster entry that names none, in every form of the
// configuration: the functions run in AWS with an IAM role, and Amazon OpenSearch Service takes
// SigV4. A cluster without security says "none" explicitly.
const DefaultAuth = opensearch.AuthSigV4

// MoveStrategy is how the move function issues the moves of a plan.
type MoveStrategy string

// The move strategies.
const (
	// StrategyReroute sends _cluster/reroute move commands, all of a cycle's in one call.
	StrategyReroute MoveStrategy = "reroute"
	// StrategyAllocationFilter excludes the hot node in the index's allocation filters and lets
	// OpenSearch move the copies: for managed domains that refuse _cluster/reroute.
	StrategyAllocationFilter MoveStrategy = "allocation-filter"
	// StrategyAuto sends reroute commands and falls back to allocation filters when the cluster
	// answers 403.
	StrategyAuto MoveStrategy = "auto"
)

// MoveStrategies lists every valid MoveStrategy: what Validate accepts and what the deployed
// stack's MoveStrategy parameter allows.
func MoveStrategies() []MoveStrategy {
	return []MoveStrategy{StrategyReroute, StrategyAllocationFilter, StrategyAuto}
}

// LogLevels lists the valid log_level values, least severe first.
func LogLevels() []string { return []string{"debug", "info", "warn", "error"} }

// Config is the whole deployment's configuration.
type Config struct {
	// Clusters are the clusters watched; at least one.
	Clusters []Cluster `json:"clusters"`
	// Table and Bus name the DynamoDB table and the EventBridge bus.
	Table string `json:"table"`
	Bus   string `json:"bus"`
	// RefreshPeriod is the stats cadence (30 s, the Elasticsearch Serverless stats refresh).
	RefreshPeriod duration.Duration `json:"refresh_period"`
	// SnapshotTTL is how long snapshots, plans and streak records live in the table. A move's ledger
	// entry lives this long after its last write, and is written again while detect sees its copy
	// still relocating (up to 7 days after the move was claimed), so that the breaker never forgets
	// a move in flight.
	SnapshotTTL duration.Duration `json:"snapshot_ttl"`
	// NotifyCooldown is the least time between two notifications of one signal (Scale Up Needed,
	// Hotspot Unrelieved) for one cluster. A signal notifies when it starts or changes, never
	// once per cycle; a change within the cool-down notifies when the cool-down ends, if it still
	// holds. 0 notifies every change.
	NotifyCooldown duration.Duration `json:"notify_cooldown"`
	// MoveStrategy: auto (default: reroute, and allocation filters where the cluster refuses reroute, as
	// Amazon OpenSearch Service does), reroute, or allocation-filter.
	MoveStrategy MoveStrategy      `json:"move_strategy"`
	Allocation   allocation.Config `json:"allocation"`
	Replicas     ReplicasConfig    `json:"replicas"`
	Safety       safety.Config     `json:"safety"`
	Sandbox      SandboxConfig     `json:"sandbox"`
	// LogLevel is the functions' log level: debug, info, warn or error.
	LogLevel string `json:"log_level"`
}

// SandboxConfig holds the resource-limit groups (the sandboxes of the OpenSearch query sandboxing RFC) in their JSON form; empty
// means none are defined and the sandbox function reports nothing.
type SandboxConfig struct {
	// Definitions are the sandboxes and the cluster's resource thresholds, as a JSON document in
	// the form docs/sandboxes.md describes.
	Definitions json.RawMessage `json:"definitions,omitempty"`
	// HistoryRetention is how long the sandbox function keeps each invocation's record of usage
	// per sandbox and node, cancellations and plan in the table, for `shardwise sandbox report`:
	// 1h to 7d (168h).
	HistoryRetention duration.Duration `json:"history_retention"`
}

// ReplicasConfig switches replica scaling on and holds its settings.
type ReplicasConfig struct {
	// Enabled turns replica scaling on.
	Enabled bool `json:"enabled"`
	// MinSearchUtilization: while the cluster's search pools are busier than this share in total,
	// replica scaling acts; below it the cluster counts as idle and every index holds. The article's
	// search tier is autoscaled and always loaded; a fixed stateful cluster whose search threads are
	// nearly idle gains nothing from more copies, and each copy indexes every write.
	MinSearchUtilization float64 `json:"min_search_utilization"`
	replicas.Config
	// deprecated holds a message for each deprecated key read (UnmarshalJSON).
	deprecated []string
}

// JSONShape is the replicas object's keys as UnmarshalJSON reads them, for jsonstrict to check
// with their paths and positions: the durations in their readable form and the deprecated keys.
func (ReplicasConfig) JSONShape() any {
	return struct {
		replicasPlain
		ScaleDownAfter duration.Duration `json:"scale_down_after"`
		NodeLeftDelay  duration.Duration `json:"node_left_delay"`
		// The former keys, DeprecatedReplicasKeys.
		FormerX                  float64             `json:"X"`
		FormerScaleDownAfter     duration.Duration   `json:"ScaleDownAfter"`
		FormerDefaultMin         int                 `json:"DefaultMin"`
		FormerMaxIndicesPerCycle int                 `json:"MaxIndicesPerCycle"`
		FormerUseSearchReplicas  bool                `json:"UseSearchReplicas"`
		FormerOverrides          []replicas.Override `json:"Overrides"`
		FormerMinTotalSearchLoad float64             `json:"MinTotalSearchLoad"`
		FormerNeedUtilization    float64             `json:"NeedUtilization"`
		FormerNodeLeftDelay      duration.Duration   `json:"NodeLeftDelay"`
	}{}
}

// replicasPlain is ReplicasConfig without its JSON methods, so they can delegate to the default
// encoding without recursing.
type replicasPlain ReplicasConfig

// MarshalJSON writes replicas.Config's scale_down_after and node_left_delay readable ("30m0s") like
// every other duration; replicas.Config holds plain time.Durations, which JSON would write in
// nanoseconds.
func (r ReplicasConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		replicasPlain
		// The shallower fields win over the embedded ones of the same name.
		ScaleDownAfter duration.Duration `json:"scale_down_after"`
		NodeLeftDelay  duration.Duration `json:"node_left_delay"`
	}{replicasPlain(r), duration.Duration(r.ScaleDownAfter), duration.Duration(r.NodeLeftDelay)})
}

// DeprecatedReplicasKeys maps the replicas section's former keys, replicas.Config's Go field
// names, to the snake_case keys that replace them. The former keys are still read, each with a
// deprecation warning (Config.Deprecations).
var DeprecatedReplicasKeys = map[string]string{
	"X":                  "x",
	"ScaleDownAfter":     "scale_down_after",
	"DefaultMin":         "default_min",
	"MaxIndicesPerCycle": "max_indices_per_cycle",
	"UseSearchReplicas":  "use_search_replicas",
	"Overrides":          "overrides",
	"MinTotalSearchLoad": "min_total_search_load",
	"NeedUtilization":    "need_utilization",
	"NodeLeftDelay":      "node_left_delay",
}

// UnmarshalJSON overlays a document on r, reading scale_down_after and node_left_delay as "30m" or
// seconds (a bare number would otherwise be nanoseconds: 90 meaning 90 ns, scaling down at once).
// A former key (DeprecatedReplicasKeys) is read as its replacement and noted as deprecated. A type
// with its own UnmarshalJSON gets raw bytes, so unknown fields are rejected here again.
func (r *ReplicasConfig) UnmarshalJSON(b []byte) error {
	b, deprecated, err := renameReplicasKeys(b)
	if err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	after, left := duration.Duration(r.ScaleDownAfter), duration.Duration(r.NodeLeftDelay)
	aux := struct {
		*replicasPlain
		ScaleDownAfter *duration.Duration `json:"scale_down_after"`
		NodeLeftDelay  *duration.Duration `json:"node_left_delay"`
	}{(*replicasPlain)(r), &after, &left}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	r.ScaleDownAfter, r.NodeLeftDelay = after.Std(), left.Std()
	r.deprecated = append(slices.Clip(r.deprecated), deprecated...)
	return nil
}

// renameReplicasKeys rewrites the top-level keys of a replicas object that DeprecatedReplicasKeys
// names to their replacements, keeping every other key, value and their order as they are, and
// returns a deprecation message for each. A key given under both names is an error: which one
// should win is not for shardwise to guess. Anything but an object is returned unchanged, for the
// decoder to refuse.
func renameReplicasKeys(b []byte) ([]byte, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return b, nil, nil //nolint:nilerr // not an object: the decoder refuses it with an error of its own
	}
	type member struct {
		key   string
		value json.RawMessage
	}
	var members []member
	var deprecated []string
	given := map[string]string{} // new key -> the name it was given under
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, nil, err
		}
		name := key
		if repl, ok := DeprecatedReplicasKeys[key]; ok {
			deprecated = append(deprecated, fmt.Sprintf("replicas.%s is deprecated: use replicas.%s", key, repl))
			name = repl
		}
		if prev, ok := given[name]; ok && prev != key {
			return nil, nil, fmt.Errorf("%s and %s set the same field: keep %s", prev, key, name)
		}
		given[name] = key
		members = append(members, member{name, value})
	}
	if len(deprecated) == 0 {
		return b, nil, nil
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, nil, err
		}
		out.Write(k)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return out.Bytes(), deprecated, nil
}

// Deprecations lists the deprecated keys the configuration was read with, each with its
// replacement, in the order they were read.
func (c Config) Deprecations() []string { return slices.Clone(c.Replicas.deprecated) }

// Default returns every default. Dry-run is on.
func Default() Config {
	return Config{
		Table:         "shardwise",
		Bus:           "shardwise",
		RefreshPeriod: duration.Duration(30 * time.Second),
		SnapshotTTL:   duration.Duration(2 * time.Hour),
		// An hour: a saturated cluster stays saturated for hours, and one reminder an hour is
		// what an on-call inbox takes without muting the topic.
		NotifyCooldown: duration.Duration(time.Hour),
		MoveStrategy:   StrategyAuto,
		Allocation:     allocation.DefaultConfig(),
		// 5 % of the cluster's search threads: shardwise's own floor, see ReplicasConfig.
		Replicas: ReplicasConfig{Enabled: true, MinSearchUtilization: 0.05, Config: replicas.DefaultConfig()},
		Safety:   safety.DefaultConfig(),
		Sandbox:  SandboxConfig{HistoryRetention: duration.Duration(sandbox.DefaultHistoryRetention)},
		LogLevel: "info",
	}
}

// clusterNamePattern: a cluster's name is part of every DynamoDB key, metric dimension and event
// of shardwise's ('#' separates key parts), so it is a plain label.
var clusterNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Bounds of the top-level durations. 5 s is the least interval between two samples that are not
// merged (engine.minSampleInterval); an hour between samples no longer sees a hotspot in
// time. Snapshots older than a week are never read.
const (
	minRefreshPeriod = duration.Duration(5 * time.Second)
	maxRefreshPeriod = duration.Duration(time.Hour)
	maxSnapshotTTL   = duration.Duration(7 * 24 * time.Hour)
)

// Validate checks the configuration and returns every bad value it finds, each named by its JSON
// path, joined into one error: the clusters (at least one, unique names, a valid client
// configuration each), table, refresh_period, snapshot_ttl, notify_cooldown, move_strategy,
// allocation, replicas, safety, sandbox.definitions, sandbox.history_retention and log_level. bus
// is not checked.
func (c Config) Validate() error {
	var errs []error
	if len(c.Clusters) == 0 {
		errs = append(errs, errors.New("clusters: at least one cluster is required"))
	}
	seen := map[string]bool{}
	for i, cl := range c.Clusters {
		switch {
		case cl.Name == "":
			errs = append(errs, fmt.Errorf("clusters[%d].name: required", i))
		case !clusterNamePattern.MatchString(cl.Name):
			errs = append(errs, fmt.Errorf("clusters[%d].name: %q must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", i, cl.Name))
		}
		if seen[cl.Name] {
			errs = append(errs, fmt.Errorf("clusters[%d].name: %q is listed twice", i, cl.Name))
		}
		seen[cl.Name] = true
		oc, err := cl.OpenSearch()
		if err == nil {
			err = oc.Validate()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("clusters[%d] (%s): %w", i, cl.Name, err))
		}
	}
	if c.Table == "" {
		errs = append(errs, errors.New("table: required"))
	}
	if err := duration.InRange(c.RefreshPeriod, minRefreshPeriod, maxRefreshPeriod); err != nil {
		errs = append(errs, fmt.Errorf("refresh_period: %w", err))
	} else if err := duration.InRange(c.SnapshotTTL, 2*c.RefreshPeriod, maxSnapshotTTL); err != nil {
		// Checked only against a bounded refresh period: twice an unbounded one could overflow.
		errs = append(errs, fmt.Errorf("snapshot_ttl: %w (at least two refresh periods)", err))
	}
	if c.NotifyCooldown < 0 {
		errs = append(errs, fmt.Errorf("notify_cooldown: %v must be >= 0", time.Duration(c.NotifyCooldown)))
	}
	if !slices.Contains(MoveStrategies(), c.MoveStrategy) {
		errs = append(errs, fmt.Errorf("move_strategy: %q must be reroute, allocation-filter or auto", c.MoveStrategy))
	}
	if err := c.Allocation.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Replicas.MinSearchUtilization < 0 || c.Replicas.MinSearchUtilization >= 1 {
		errs = append(errs, fmt.Errorf("replicas.min_search_utilization: %v must be in [0, 1)", c.Replicas.MinSearchUtilization))
	}
	if err := c.Replicas.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Safety.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(c.Sandbox.Definitions) > 0 {
		if _, err := sandbox.Parse(c.Sandbox.Definitions); err != nil {
			errs = append(errs, fmt.Errorf("sandbox.definitions: %w", err))
		}
	}
	if err := duration.InRange(c.Sandbox.HistoryRetention, duration.Duration(sandbox.MinHistoryRetention), duration.Duration(sandbox.MaxHistoryRetention)); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.history_retention: %w", err))
	}
	if !slices.Contains(LogLevels(), strings.ToLower(c.LogLevel)) {
		errs = append(errs, fmt.Errorf("log_level: %q must be debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// OpenSearch turns a cluster entry into the client's configuration; an entry without auth gets
// DefaultAuth.
func (cl Cluster) OpenSearch() (opensearch.Config, error) {
	auth := opensearch.Auth(cl.Auth)
	if auth == "" {
		auth = DefaultAuth
	}
	oc := opensearch.Config{URLs: cl.URLs, Auth: auth, Service: cl.Service, Region: cl.Region,
		Username: cl.Username, InsecureSkipVerify: cl.Insecure, AllowInsecureCredentials: cl.AllowInsecureCredentials,
		CACertFile: cl.CACertFile}
	if cl.secret != nil && cl.Username == "" && cl.PasswordEnv == "" {
		oc.Username, oc.Password = cl.secret.Username, cl.secret.Password
	}
	if cl.PasswordEnv != "" {
		pw, ok := os.LookupEnv(cl.PasswordEnv)
		if !ok {
			return oc, fmt.Errorf("password_env: %s is not set", cl.PasswordEnv)
		}
		oc.Password = pw
	}
	return oc, nil
}

// Parse overlays a JSON document on the defaults. A deprecated key is read as its replacement and
// listed by Deprecations, for the caller to warn of in its log. Unknown fields are an error: a typo must not
// silently leave a default in place. So is anything after the document: a second document
// pasted after the first would otherwise be ignored. Cluster entries without auth get
// DefaultAuth.
func Parse(base Config, data []byte) (Config, error) {
	c := base
	// Keys must spell their field exactly and appear once: encoding/json would match "DRY_RUN"
	// case-insensitively and let a repeated "dry_run" win, either turning dry-run off unnoticed.
	if err := jsonstrict.DecodeExact(data, &c); err != nil {
		return base, fmt.Errorf("config: %w", err)
	}

	// A copy: the entries may still be base's.
	c.Clusters = withDefaultAuth(slices.Clone(c.Clusters), "")
	return c, nil
}

// withDefaultAuth gives each cluster without auth the given one, or DefaultAuth.
func withDefaultAuth(cls []Cluster, auth string) []Cluster {
	if auth == "" {
		auth = string(DefaultAuth)
	}
	for i := range cls {
		if cls[i].Auth == "" {
			cls[i].Auth = auth
		}
	}
	return cls
}

// LoadFile reads a JSON config file over the defaults. A document error reads
// "path:line:column: field.path: what is wrong".
func LoadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(Default(), b)
	var located *jsonstrict.Error
	if errors.As(err, &located) {
		return c, fmt.Errorf("config %w", jsonstrict.InFile(path, located))
	}
	return c, err
}

// EnvConfigParameter names the SSM parameter holding the whole configuration as JSON (Load).
const EnvConfigParameter = "SHARDWISE_CONFIG_PARAMETER"

// ParameterAPI is the part of the SSM client Load uses.
type ParameterAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Load builds the configuration in Lambda at cold start: when SHARDWISE_CONFIG_PARAMETER names an
// SSM parameter, its value (a JSON document, decrypted if it is a SecureString) is the first
// layer over the defaults; then FromEnv's variables. params is used only when the parameter is
// named; it may be nil otherwise. Load reads no secret: see LoadWithSecret.
func Load(ctx context.Context, getenv func(string) string, params ParameterAPI) (Config, error) {
	return LoadWithSecret(ctx, getenv, params, nil)
}

// LoadWithSecret is Load, and then, when SHARDWISE_BASIC_AUTH_SECRET names a Secrets Manager
// secret, the basic-auth credentials it holds for the clusters whose auth is basic
// (WithBasicAuth), before the configuration is validated. secrets is used only when the secret is
// named; it may be nil otherwise.
func LoadWithSecret(ctx context.Context, getenv func(string) string, params ParameterAPI, secrets SecretAPI) (Config, error) {
	c := Default()
	if name := getenv(EnvConfigParameter); name != "" {
		if params == nil {
			return c, fmt.Errorf("%s: %s names a parameter but there is no SSM client", EnvConfigParameter, name)
		}
		out, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return c, fmt.Errorf("%s: get %s: %w", EnvConfigParameter, name, err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return c, fmt.Errorf("%s: %s has no value", EnvConfigParameter, name)
		}
		if c, err = Parse(c, []byte(*out.Parameter.Value)); err != nil {
			return c, fmt.Errorf("%s: %s: %w", EnvConfigParameter, name, err)
		}
	}
	c, err := overlayEnv(c, getenv)
	if err != nil {
		return c, err
	}
	if arn := getenv(EnvBasicAuthSecret); arn != "" {
		if secrets == nil {
			return c, fmt.Errorf("%s: %s names a secret but there is no Secrets Manager client", EnvBasicAuthSecret, arn)
		}
		out, err := secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return c, fmt.Errorf("%s: get %s: %w", EnvBasicAuthSecret, arn, err)
		}
		if out.SecretString == nil {
			return c, fmt.Errorf("%s: %s has no string value", EnvBasicAuthSecret, arn)
		}
		b, err := ParseBasicAuthSecret(*out.SecretString)
		if err != nil {
			return c, fmt.Errorf("%s: %s: %w", EnvBasicAuthSecret, arn, err)
		}
		c = c.WithBasicAuth(b)
	}
	return c, c.Validate()
}

// SecretAPI is the part of the Secrets Manager client LoadWithSecret uses.
type SecretAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// FromEnv builds the configuration from the environment: SHARDWISE_CONFIG (a JSON document over
// the defaults), then the single-value variables, which win.
//
//	SHARDWISE_CONFIG         JSON, any field of Config
//	SHARDWISE_CLUSTERS       JSON list of clusters, or "name=url[,name=url]" (auth from SHARDWISE_AUTH)
//	SHARDWISE_AUTH           sigv4 | basic | none: the auth of SHARDWISE_CLUSTERS entries that name none
//	                         (default DefaultAuth, as for entries without auth anywhere)
//	SHARDWISE_SERVICE        the SigV4 signing service of SHARDWISE_CLUSTERS entries that name none
//	                         (empty: the client's default, es)
//	SHARDWISE_TABLE          DynamoDB table
//	SHARDWISE_BUS            EventBridge bus
//	SHARDWISE_DRY_RUN        true (default) | false
//	SHARDWISE_MOVE_STRATEGY  reroute | allocation-filter | auto
//	SHARDWISE_LOG_LEVEL      debug | info | warn | error
func FromEnv(getenv func(string) string) (Config, error) { return fromEnv(Default(), getenv) }

func fromEnv(c Config, getenv func(string) string) (Config, error) {
	c, err := overlayEnv(c, getenv)
	if err != nil {
		return c, err
	}
	return c, c.Validate()
}

// overlayEnv is FromEnv's variables over c, unvalidated.
func overlayEnv(c Config, getenv func(string) string) (Config, error) {
	if doc := getenv("SHARDWISE_CONFIG"); doc != "" {
		var err error
		if c, err = Parse(c, []byte(doc)); err != nil {
			return c, fmt.Errorf("SHARDWISE_CONFIG: %w", err)
		}
	}
	if v := getenv("SHARDWISE_CLUSTERS"); v != "" {
		cls, err := parseClusters(v, getenv("SHARDWISE_AUTH"))
		if err != nil {
			return c, fmt.Errorf("SHARDWISE_CLUSTERS: %w", err)
		}
		if svc := getenv("SHARDWISE_SERVICE"); svc != "" {
			for i := range cls {
				if cls[i].Service == "" {
					cls[i].Service = svc
				}
			}
		}
		c.Clusters = cls
	}
	if v := getenv("SHARDWISE_MOVE_STRATEGY"); v != "" {
		c.MoveStrategy = MoveStrategy(v)
	}
	if v := getenv("SHARDWISE_TABLE"); v != "" {
		c.Table = v
	}
	if v := getenv("SHARDWISE_BUS"); v != "" {
		c.Bus = v
	}
	if v := getenv("SHARDWISE_DRY_RUN"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("SHARDWISE_DRY_RUN: %q is not true or false", v)
		}
		c.Safety.DryRun = b
	}
	if v := getenv("SHARDWISE_LOG_LEVEL"); v != "" {
		c.LogLevel = v
	}
	return c, nil
}

func parseClusters(v, auth string) ([]Cluster, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") {
		var cls []Cluster
		if err := jsonstrict.Decode([]byte(v), &cls); err != nil {
			return nil, err
		}
		return withDefaultAuth(cls, auth), nil
	}
	if auth == "" {
		auth = string(DefaultAuth)
	}
	var cls []Cluster
	for _, part := range strings.Split(v, ",") {
		name, url, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("%q: want name=url", part)
		}
		cls = append(cls, Cluster{Name: name, URLs: []string{url}, Auth: auth})
	}
	return cls, nil
}

// Cluster returns the named cluster's entry.
func (c Config) Cluster(name string) (Cluster, bool) {
	for _, cl := range c.Clusters {
		if cl.Name == name {
			return cl, true
		}
	}
	return Cluster{}, false
}
