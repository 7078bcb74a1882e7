package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/opensearch"
)

func withCluster(c Config) Config {
	c.Clusters = []Cluster{{Name: "prod", URLs: []string{"https://search-prod.eu-west-1.es.amazonaws.com"}, Auth: "sigv4"}}
	return c
}

func TestDefaultValidatesOnceAClusterIsAdded(t *testing.T) {
	err := Default().Validate()
	if err == nil || !strings.Contains(err.Error(), "clusters") {
		t.Fatalf("Default().Validate(): got %v, want an error naming clusters", err)
	}
	if err := withCluster(Default()).Validate(); err != nil {
		t.Fatalf("Default() with a cluster: got %v, want valid", err)
	}
	if !Default().Safety.DryRun {
		t.Error("Default(): dry-run is off, want on")
	}
}

func TestValidateNamesFields(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"cluster without a name", func(c *Config) { c.Clusters[0].Name = "" }, "clusters[0].name"},
		{"cluster listed twice", func(c *Config) { c.Clusters = append(c.Clusters, c.Clusters[0]) }, `clusters[1].name: "prod" is listed twice`},
		{"cluster without urls", func(c *Config) { c.Clusters[0].URLs = nil }, "clusters[0] (prod)"},
		{"cluster with a bad auth", func(c *Config) { c.Clusters[0].Auth = "kerberos" }, "Auth"},
		{"no table", func(c *Config) { c.Table = "" }, "table"},
		{"zero refresh period", func(c *Config) { c.RefreshPeriod = 0 }, "refresh_period"},
		{"snapshot ttl under two refresh periods", func(c *Config) { c.SnapshotTTL = duration.Duration(45 * time.Second) }, "snapshot_ttl"},
		{"negative notify cool-down", func(c *Config) { c.NotifyCooldown = duration.Duration(-time.Minute) }, "notify_cooldown"},
		{"unknown move strategy", func(c *Config) { c.MoveStrategy = "teleport" }, "move_strategy"},
		{"allocation field", func(c *Config) { c.Allocation.HotUtilization = 2 }, "allocation.hot_utilization"},
		{"replicas utilization out of range", func(c *Config) { c.Replicas.MinSearchUtilization = 1 }, "replicas.min_search_utilization"},
		{"replicas formula field", func(c *Config) { c.Replicas.X = 0 }, "replicas.x: 0"},
		{"replicas need threshold out of range", func(c *Config) { c.Replicas.NeedUtilization = 1 }, "replicas.need_utilization: 1"},
		{"replicas negative node-left delay", func(c *Config) { c.Replicas.NodeLeftDelay = -time.Second }, "replicas.node_left_delay: -1s"},
		{"safety field", func(c *Config) { c.Safety.RequiredHealth = "red" }, "safety.required_health"},
		{"sandbox definitions not JSON", func(c *Config) { c.Sandbox.Definitions = json.RawMessage(`{`) }, "sandbox.definitions"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "log_level"},
		// Values that parse but cannot be meant: each once overflowed or was accepted.
		{"refresh period that overflows twice over", func(c *Config) { c.RefreshPeriod = duration.Duration(2562047 * time.Hour) }, "refresh_period: 2562047h0m0s must be between 5s and 1h0m0s"},
		{"refresh period of a nanosecond", func(c *Config) { c.RefreshPeriod = 1 }, "refresh_period: 1ns must be between"},
		{"snapshot ttl past a week", func(c *Config) { c.SnapshotTTL = duration.Duration(8 * 24 * time.Hour) }, "snapshot_ttl: 192h0m0s must be between"},
		{"two billion sustained samples", func(c *Config) { c.Allocation.SustainedSamples = 2e9 }, "allocation.sustained_samples: 2000000000 must be between 1 and 120"},
		{"queue latency threshold of a day", func(c *Config) { c.Allocation.QueueLatencyThreshold = duration.Duration(24 * time.Hour) }, "allocation.queue_latency_threshold"},
		{"moves per cycle past any cluster", func(c *Config) { c.Safety.MaxMovesPerCycle = 2e9 }, "safety.max_moves_per_cycle: 2000000000 must be between 1 and 10000"},
		{"stats age of a year", func(c *Config) { c.Safety.MaxStatsAge = duration.Duration(365 * 24 * time.Hour) }, "safety.max_stats_age"},
		{"cluster name with a key separator", func(c *Config) { c.Clusters[0].Name = "prod#2" }, `clusters[0].name: "prod#2" must be`},
		{"cluster name with a newline", func(c *Config) { c.Clusters[0].Name = "prod\nx" }, `clusters[0].name: "prod\nx" must be`},
		{"cluster name over 64 characters", func(c *Config) { c.Clusters[0].Name = strings.Repeat("p", 65) }, "clusters[0].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := withCluster(Default())
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate: got %v, want an error naming %q", err, tc.field)
			}
		})
	}
}

// env is a getenv over a map, so FromEnv reads nothing from the process.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	const prodJSON = `{"name":"prod","urls":["https://a.example:9200"],"auth":"none"}`
	cases := []struct {
		name    string
		vars    map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{
			name: "name=url clusters default to sigv4",
			vars: map[string]string{"SHARDWISE_CLUSTERS": "prod=https://a.example, prod-eu=https://b.example:443"},
			check: func(t *testing.T, c Config) {
				want := []Cluster{
					{Name: "prod", URLs: []string{"https://a.example"}, Auth: "sigv4"},
					{Name: "prod-eu", URLs: []string{"https://b.example:443"}, Auth: "sigv4"},
				}
				if !reflect.DeepEqual(c.Clusters, want) {
					t.Errorf("clusters: got %+v want %+v", c.Clusters, want)
				}
			},
		},
		{
			name: "name=url clusters take SHARDWISE_AUTH",
			vars: map[string]string{"SHARDWISE_CLUSTERS": "local=http://127.0.0.1:9200", "SHARDWISE_AUTH": "none"},
			check: func(t *testing.T, c Config) {
				if len(c.Clusters) != 1 || c.Clusters[0].Auth != "none" {
					t.Errorf("clusters: got %+v, want one with auth none", c.Clusters)
				}
			},
		},
		{
			name: "JSON cluster list",
			vars: map[string]string{"SHARDWISE_CLUSTERS": ` [` + prodJSON + `,{"name":"search","urls":["https://s.example"],"auth":"sigv4","service":"es","region":"eu-west-1"}]`},
			check: func(t *testing.T, c Config) {
				want := []Cluster{
					{Name: "prod", URLs: []string{"https://a.example:9200"}, Auth: "none"},
					{Name: "search", URLs: []string{"https://s.example"}, Auth: "sigv4", Service: "es", Region: "eu-west-1"},
				}
				if !reflect.DeepEqual(c.Clusters, want) {
					t.Errorf("clusters: got %+v want %+v", c.Clusters, want)
				}
			},
		},
		{
			name: "SHARDWISE_CONFIG overlays the defaults",
			vars: map[string]string{"SHARDWISE_CONFIG": `{"clusters":[` + prodJSON + `],"table":"from-doc","move_strategy":"auto",
				"allocation":{"queue_latency_threshold":"5s","sustained_samples":3},"safety":{"max_moves_per_cycle":2}}`},
			check: func(t *testing.T, c Config) {
				if c.Table != "from-doc" || c.MoveStrategy != "auto" {
					t.Errorf("table %q strategy %q, want from-doc and auto", c.Table, c.MoveStrategy)
				}
				if c.Allocation.QueueLatencyThreshold.Std() != 5*time.Second || c.Allocation.SustainedSamples != 3 {
					t.Errorf("allocation: got %v and %d, want 5s and 3", c.Allocation.QueueLatencyThreshold, c.Allocation.SustainedSamples)
				}
				if c.Safety.MaxMovesPerCycle != 2 {
					t.Errorf("safety.max_moves_per_cycle: got %d want 2", c.Safety.MaxMovesPerCycle)
				}
				d := Default()
				// Fields the document does not name keep their defaults, nested ones included.
				if c.Bus != d.Bus || c.Allocation.HotUtilization != d.Allocation.HotUtilization || c.Safety.MaxMovesPerNode != d.Safety.MaxMovesPerNode || !c.Safety.DryRun {
					t.Errorf("unnamed fields lost their defaults: bus %q hot_utilization %v max_moves_per_node %d dry_run %v",
						c.Bus, c.Allocation.HotUtilization, c.Safety.MaxMovesPerNode, c.Safety.DryRun)
				}
			},
		},
		{
			name: "single variables win over SHARDWISE_CONFIG",
			vars: map[string]string{
				"SHARDWISE_CONFIG":    `{"clusters":[` + prodJSON + `],"table":"from-doc","bus":"doc-bus","log_level":"debug","safety":{"dry_run":true}}`,
				"SHARDWISE_CLUSTERS":  "other=https://o.example",
				"SHARDWISE_TABLE":     "from-env",
				"SHARDWISE_BUS":       "env-bus",
				"SHARDWISE_DRY_RUN":   "false",
				"SHARDWISE_LOG_LEVEL": "warn",
			},
			check: func(t *testing.T, c Config) {
				if c.Table != "from-env" || c.Bus != "env-bus" || c.LogLevel != "warn" || c.Safety.DryRun {
					t.Errorf("got table %q bus %q log %q dry_run %v, want the variables' values", c.Table, c.Bus, c.LogLevel, c.Safety.DryRun)
				}
				if len(c.Clusters) != 1 || c.Clusters[0].Name != "other" {
					t.Errorf("clusters: got %+v, want SHARDWISE_CLUSTERS's", c.Clusters)
				}
			},
		},
		{
			name: "SHARDWISE_SERVICE fills the service of entries that name none",
			vars: map[string]string{
				"SHARDWISE_CLUSTERS": `[{"name":"a","urls":["https://a.example"]},{"name":"b","urls":["https://b.example"],"service":"es"}]`,
				"SHARDWISE_SERVICE":  "es",
			},
			check: func(t *testing.T, c Config) {
				if got := []string{c.Clusters[0].Service, c.Clusters[1].Service}; !reflect.DeepEqual(got, []string{"es", "es"}) {
					t.Errorf("services: got %v, want [es es]", got)
				}
			},
		},
		{
			name: "SHARDWISE_MOVE_STRATEGY wins over the document",
			vars: map[string]string{
				"SHARDWISE_CONFIG":        `{"clusters":[` + prodJSON + `],"move_strategy":"reroute"}`,
				"SHARDWISE_MOVE_STRATEGY": "allocation-filter",
			},
			check: func(t *testing.T, c Config) {
				if c.MoveStrategy != StrategyAllocationFilter {
					t.Errorf("move_strategy: got %q, want allocation-filter", c.MoveStrategy)
				}
			},
		},
		{name: "bad move strategy variable names the field", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_MOVE_STRATEGY": "allocation_filter"}, wantErr: "move_strategy"},
		{name: "bad service variable names the cluster", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_SERVICE": "s3"}, wantErr: "clusters[0] (p)"},
		{name: "an OpenSearch Serverless collection is refused, saying why", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_SERVICE": "aoss"}, wantErr: "OpenSearch Serverless"},
		{
			name: "durations as seconds",
			vars: map[string]string{"SHARDWISE_CONFIG": `{"clusters":[` + prodJSON + `],"refresh_period":45,"snapshot_ttl":"3h"}`},
			check: func(t *testing.T, c Config) {
				if c.RefreshPeriod.Std() != 45*time.Second || c.SnapshotTTL.Std() != 3*time.Hour {
					t.Errorf("got refresh %v ttl %v, want 45s and 3h", c.RefreshPeriod, c.SnapshotTTL)
				}
			},
		},
		{name: "no cluster at all", vars: map[string]string{}, wantErr: "clusters"},
		{name: "SHARDWISE_CONFIG with a second document after it", vars: map[string]string{
			"SHARDWISE_CONFIG": `{"clusters":[` + prodJSON + `]} {"safety":{"dry_run":false}}`}, wantErr: "trailing data after the JSON document"},
		{name: "SHARDWISE_CONFIG with a stray brace", vars: map[string]string{
			"SHARDWISE_CONFIG": `{"clusters":[` + prodJSON + `]}}`}, wantErr: "trailing data after the JSON document"},
		{name: "JSON cluster list with trailing data", vars: map[string]string{"SHARDWISE_CLUSTERS": `[` + prodJSON + `] ,`}, wantErr: "SHARDWISE_CLUSTERS: 1:67: trailing data"},
		{name: "bad dry run", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_DRY_RUN": "maybe"}, wantErr: "SHARDWISE_DRY_RUN"},
		{name: "name=url without a url", vars: map[string]string{"SHARDWISE_CLUSTERS": "prod"}, wantErr: "SHARDWISE_CLUSTERS"},
		{name: "name=url with an empty name", vars: map[string]string{"SHARDWISE_CLUSTERS": "=https://p"}, wantErr: "SHARDWISE_CLUSTERS"},
		{name: "JSON cluster list with an unknown field", vars: map[string]string{"SHARDWISE_CLUSTERS": `[{"name":"p","url":"https://p"}]`}, wantErr: `SHARDWISE_CLUSTERS: 1:14: [0].url: unknown field "url" in [0]`},
		{name: "SHARDWISE_CONFIG not JSON", vars: map[string]string{"SHARDWISE_CONFIG": `{"table":`}, wantErr: "SHARDWISE_CONFIG"},
		{name: "SHARDWISE_CONFIG with an unknown field", vars: map[string]string{"SHARDWISE_CONFIG": `{"tabel":"x"}`}, wantErr: `unknown field "tabel"`},
		{name: "SHARDWISE_CONFIG with an unknown nested field", vars: map[string]string{"SHARDWISE_CONFIG": `{"safety":{"dryrun":false}}`}, wantErr: `unknown field "dryrun"`},
		{name: "SHARDWISE_CONFIG with an unknown replicas field", vars: map[string]string{"SHARDWISE_CONFIG": `{"replicas":{"scale_down_afterr":"1m"}}`}, wantErr: `unknown field "scale_down_afterr"`},
		{name: "SHARDWISE_CONFIG with a bad replicas duration", vars: map[string]string{"SHARDWISE_CONFIG": `{"replicas":{"scale_down_after":"later"}}`}, wantErr: `duration "later"`},
		{name: "SHARDWISE_CONFIG with a bad deprecated replicas duration", vars: map[string]string{"SHARDWISE_CONFIG": `{"replicas":{"ScaleDownAfter":"later"}}`}, wantErr: `duration "later"`},
		{name: "SHARDWISE_CONFIG with a bad duration", vars: map[string]string{"SHARDWISE_CONFIG": `{"refresh_period":"soon"}`}, wantErr: `duration "soon"`},
		{name: "bad value in the document names the field", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_CONFIG": `{"allocation":{"heap_limit":1.5}}`}, wantErr: "allocation.heap_limit"},
		{name: "bad log level variable names the field", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_LOG_LEVEL": "chatty"}, wantErr: "log_level"},
		{name: "bad auth variable names the cluster", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=https://p", "SHARDWISE_AUTH": "magic"}, wantErr: "clusters[0] (p)"},
		{name: "cluster url without a scheme", vars: map[string]string{"SHARDWISE_CLUSTERS": "p=search.example:9200"}, wantErr: "clusters[0] (p)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(tc.vars))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FromEnv: got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			tc.check(t, c)
		})
	}
}

// A cluster entry without auth gets DefaultAuth whichever form of the configuration it comes in.
func TestClusterWithoutAuth(t *testing.T) {
	const entry = `{"name":"prod","urls":["https://search-prod.example"]}`
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(`{"clusters":[`+entry+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		load func() (Config, error)
	}{
		{"SHARDWISE_CLUSTERS name=url", func() (Config, error) {
			return FromEnv(env(map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search-prod.example"}))
		}},
		{"SHARDWISE_CLUSTERS JSON", func() (Config, error) {
			return FromEnv(env(map[string]string{"SHARDWISE_CLUSTERS": `[` + entry + `]`}))
		}},
		{"SHARDWISE_CONFIG", func() (Config, error) {
			return FromEnv(env(map[string]string{"SHARDWISE_CONFIG": `{"clusters":[` + entry + `]}`}))
		}},
		{"file", func() (Config, error) { return LoadFile(file) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			oc, err := c.Clusters[0].OpenSearch()
			if err != nil {
				t.Fatal(err)
			}
			if c.Clusters[0].Auth != string(DefaultAuth) || oc.Auth != DefaultAuth {
				t.Errorf("auth: got %q (client %q), want %q", c.Clusters[0].Auth, oc.Auth, DefaultAuth)
			}
		})
	}
}

// Credentials that travel insecurely need allow_insecure_credentials.
func TestInsecureCredentials(t *testing.T) {
	t.Setenv("SHARDWISE_TEST_PASSWORD", "s3cret-pw")
	basic := Cluster{Name: "p", URLs: []string{"http://10.0.0.5:9200"}, Auth: "basic", Username: "u", PasswordEnv: "SHARDWISE_TEST_PASSWORD"}
	cases := []struct {
		name    string
		edit    func(*Cluster)
		wantErr string
	}{
		{"basic over http", func(*Cluster) {}, "AllowInsecureCredentials"},
		{"basic over http, allowed", func(c *Cluster) { c.AllowInsecureCredentials = true }, ""},
		{"sigv4 with insecure_skip_verify", func(c *Cluster) {
			c.URLs, c.Auth, c.Username, c.PasswordEnv, c.Insecure = []string{"https://s.example"}, "sigv4", "", "", true
		}, "AllowInsecureCredentials"},
		{"basic over https", func(c *Cluster) { c.URLs = []string{"https://s.example"} }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := basic
			tc.edit(&cl)
			c := Default()
			c.Clusters = []Cluster{cl}
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("Validate: got %v, want an error naming %s without the password", err, tc.wantErr)
			}
		})
	}
	if _, err := Parse(Default(), []byte(`{"clusters":[{"name":"p","urls":["http://h:9200"],"auth":"none","allow_insecure_credentials":true}]}`)); err != nil {
		t.Errorf("allow_insecure_credentials in JSON: %v", err)
	}
}

func TestDurationsRoundTrip(t *testing.T) {
	c := withCluster(Default())
	c.Allocation.QueueLatencyThreshold = duration.Duration(3 * time.Second)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"queue_latency_threshold":"3s"`, `"refresh_period":"30s"`, `"snapshot_ttl":"2h0m0s"`,
		`"max_search_latency":"200ms"`, `"max_stats_age":"1m0s"`, `"colocation_every":"10m0s"`, `"relief_cooling_off":"1h0m0s"`, `"node_left_delay":"1m0s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("marshalled config lacks %s:\n%s", want, b)
		}
	}
	back, err := Parse(Config{}, b)
	if err != nil {
		t.Fatalf("Parse of the marshalled config: %v", err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip changed the config:\n got %+v\nwant %+v", back, c)
	}
}

// replicas.scale_down_after is written "30m" like every other duration, and a bare number is
// seconds.
func TestReplicasScaleDownAfterReadable(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want time.Duration
	}{
		{"duration string", `{"replicas":{"scale_down_after":"45m"}}`, 45 * time.Minute},
		{"seconds", `{"replicas":{"scale_down_after":90}}`, 90 * time.Second},
	}
	left, err := Parse(Default(), []byte(`{"replicas":{"node_left_delay":"5m","need_utilization":0.6}}`))
	if err != nil {
		t.Fatalf("Parse node_left_delay: %v", err)
	}
	if left.Replicas.NodeLeftDelay != 5*time.Minute || left.Replicas.NeedUtilization != 0.6 || left.Replicas.ScaleDownAfter != 30*time.Minute {
		t.Errorf("node_left_delay, need_utilization, scale_down_after: got %v %v %v, want 5m 0.6 30m", left.Replicas.NodeLeftDelay,
			left.Replicas.NeedUtilization, left.Replicas.ScaleDownAfter)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(Default(), []byte(tc.doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.Replicas.ScaleDownAfter != tc.want {
				t.Errorf("ScaleDownAfter: got %v want %v", c.Replicas.ScaleDownAfter, tc.want)
			}
			if !c.Replicas.Enabled || c.Replicas.MinSearchUtilization != Default().Replicas.MinSearchUtilization || c.Replicas.X != Default().Replicas.X ||
				c.Replicas.NodeLeftDelay != time.Minute || c.Replicas.NeedUtilization != 0.5 {
				t.Errorf("replicas fields the document does not name lost their defaults: %+v", c.Replicas)
			}
			if d := c.Deprecations(); len(d) != 0 {
				t.Errorf("snake_case keys gave deprecations %q", d)
			}
		})
	}
	b, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"scale_down_after":"30m0s"`, `"node_left_delay":"1m0s"`, `"x":0.5`, `"default_min":1`,
		`"max_indices_per_cycle":5`, `"use_search_replicas":false`, `"min_total_search_load":0.05`, `"need_utilization":0.5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("marshalled default: want %s, got %s", want, b)
		}
	}
	if strings.Contains(string(b), "ScaleDownAfter") || strings.Contains(string(b), "NodeLeftDelay") {
		t.Errorf("marshalled default still writes a deprecated key: %s", b)
	}
}

// The replicas section's former keys, replicas.Config's Go field names, are still read, as their
// snake_case replacements, each with a deprecation naming the replacement; one field given under
// both names is an error.
func TestReplicasDeprecatedKeys(t *testing.T) {
	cases := []struct {
		name     string
		doc      string
		check    func(ReplicasConfig) bool
		wantDeps []string
		wantErr  string
	}{
		{name: "ScaleDownAfter", doc: `{"replicas":{"ScaleDownAfter":"45m"}}`,
			check:    func(r ReplicasConfig) bool { return r.ScaleDownAfter == 45*time.Minute },
			wantDeps: []string{"replicas.ScaleDownAfter is deprecated: use replicas.scale_down_after"}},
		{name: "NodeLeftDelay in seconds", doc: `{"replicas":{"NodeLeftDelay":90}}`,
			check:    func(r ReplicasConfig) bool { return r.NodeLeftDelay == 90*time.Second },
			wantDeps: []string{"replicas.NodeLeftDelay is deprecated: use replicas.node_left_delay"}},
		{name: "several, beside new keys, in order", doc: `{"replicas":{"X":0.4,"enabled":false,"DefaultMin":2,"Overrides":[{"pattern":"logs-*","exclude":true}]}}`,
			check: func(r ReplicasConfig) bool {
				return r.X == 0.4 && !r.Enabled && r.DefaultMin == 2 && len(r.Overrides) == 1 && r.Overrides[0].Exclude &&
					r.ScaleDownAfter == 30*time.Minute
			},
			wantDeps: []string{"replicas.X is deprecated: use replicas.x", "replicas.DefaultMin is deprecated: use replicas.default_min",
				"replicas.Overrides is deprecated: use replicas.overrides"}},
		{name: "both names", doc: `{"replicas":{"scale_down_after":"1h","ScaleDownAfter":"45m"}}`,
			wantErr: "scale_down_after and ScaleDownAfter set the same field"},
		{name: "deprecated key misspelt is unknown", doc: `{"replicas":{"ScaleDownAftr":"45m"}}`, wantErr: `unknown field "ScaleDownAftr"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(Default(), []byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tc.check(c.Replicas) {
				t.Errorf("read wrong: %+v", c.Replicas)
			}
			if got := c.Deprecations(); !reflect.DeepEqual(got, tc.wantDeps) {
				t.Errorf("deprecations: got %q, want %q", got, tc.wantDeps)
			}
		})
	}
	// Each layer's deprecations add to the one below: the SSM parameter's and then
	// SHARDWISE_CONFIG's are all reported at start.
	base, err := Parse(Default(), []byte(`{"replicas":{"ScaleDownAfter":"45m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	top, err := Parse(base, []byte(`{"replicas":{"NodeLeftDelay":"2m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := top.Deprecations(); len(got) != 2 || len(base.Deprecations()) != 1 {
		t.Errorf("layered deprecations: got %q over %q, want 2 over 1", got, base.Deprecations())
	}
}

func TestPasswordEnv(t *testing.T) {
	const variable = "SHARDWISE_TEST_PASSWORD"
	cl := Cluster{Name: "prod", URLs: []string{"https://p.example"}, Auth: "basic", Username: "shardwise", PasswordEnv: variable}
	t.Run("missing variable is named", func(t *testing.T) {
		c := Default()
		c.Clusters = []Cluster{cl}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "password_env: "+variable+" is not set") {
			t.Fatalf("Validate: got %v, want password_env naming %s", err, variable)
		}
	})
	t.Run("set variable becomes the password", func(t *testing.T) {
		t.Setenv(variable, "s3cret")
		oc, err := cl.OpenSearch()
		if err != nil {
			t.Fatal(err)
		}
		if oc.Password != "s3cret" || oc.Username != "shardwise" || oc.Auth != opensearch.AuthBasic {
			t.Errorf("got %v, want basic auth with the variable's password", oc)
		}
		c := Default()
		c.Clusters = []Cluster{cl}
		if err := c.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
	})
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"clusters":[{"name":"p","urls":["http://127.0.0.1:9200"],"auth":"none"}],"safety":{"dry_run":false}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.Safety.DryRun || c.Table != "shardwise" || len(c.Clusters) != 1 {
		t.Errorf("LoadFile: got dry_run %v table %q clusters %d, want false, the default table and one cluster", c.Safety.DryRun, c.Table, len(c.Clusters))
	}
	if _, err := LoadFile(filepath.Join(dir, "absent.json")); err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("LoadFile of a missing file: got %v, want an error naming it", err)
	}
}
