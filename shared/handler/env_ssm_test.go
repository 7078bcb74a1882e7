package handler_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/handler"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// TestEnvReadsConfigParameter builds a function's engine as Lambda does at cold start, from the
// environment the stack sets, with the whole configuration in moto's SSM.
func TestEnvReadsConfigParameter(t *testing.T) {
	moto := dynamotest.Endpoint(t)
	client := ssm.New(ssm.Options{
		Region:       dynamotest.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(moto),
	})
	name := "/shardwise-test/env/" + strings.ToLower(t.Name())
	doc := `{"clusters":[{"name":"prod","urls":["https://search-prod.example"],"service":"es","region":"us-east-1"}],` +
		`"allocation":{"sustained_samples":5}}`
	if _, err := client.PutParameter(t.Context(), &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String(doc), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_REGION":                dynamotest.Region,
		"AWS_ACCESS_KEY_ID":         "testing",
		"AWS_SECRET_ACCESS_KEY":     "testing",
		"AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_SSM":      moto,
		config.EnvConfigParameter:   name,
		// What the stack sets besides: empty ClusterEndpoints, and the single-value parameters.
		"SHARDWISE_CLUSTERS":      "",
		"SHARDWISE_MOVE_STRATEGY": "auto",
		"SHARDWISE_LOG_LEVEL":     "warn",
		"SHARDWISE_TABLE":         "table-from-stack",
	} {
		t.Setenv(k, v)
	}
	f, err := handler.Env(t.Context(), "detect")
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "detect" || f.Metrics == nil {
		t.Errorf("function %q, metrics %v; want detect's, with metrics", f.Name, f.Metrics)
	}
	c := f.Engine.Config
	if len(c.Clusters) != 1 || c.Clusters[0].Name != "prod" || c.Allocation.SustainedSamples != 5 {
		t.Errorf("got clusters %+v, sustained_samples %d; want the parameter's", c.Clusters, c.Allocation.SustainedSamples)
	}
	if c.MoveStrategy != config.StrategyAuto || c.LogLevel != "warn" || c.Table != "table-from-stack" {
		t.Errorf("got strategy %q, log level %q, table %q; want the stack's variables", c.MoveStrategy, c.LogLevel, c.Table)
	}

	checkPortsShareOneConnection(t, f)

	t.Setenv(config.EnvConfigParameter, name+"-missing")
	if _, err := handler.Env(t.Context(), "detect"); err == nil || !strings.Contains(err.Error(), "detect: configuration: SHARDWISE_CONFIG_PARAMETER") {
		t.Errorf("missing parameter: got %v, want the function to stop naming SHARDWISE_CONFIG_PARAMETER", err)
	}
}

// checkPortsShareOneConnection: every port Env wires, the engine's and the webhook's, is the one
// API of the cluster, built once; a cluster not configured has none.
func checkPortsShareOneConnection(t *testing.T, f *handler.Function) {
	t.Helper()
	if f.Engine.Cluster == nil || f.Engine.Tenants == nil || f.Pushed == nil {
		t.Fatalf("Env left a port unwired: cluster %t, tenants %t, pushed %t", f.Engine.Cluster != nil, f.Engine.Tenants != nil, f.Pushed != nil)
	}
	c, err := f.Engine.Cluster("prod")
	if err != nil {
		t.Fatal(err)
	}
	tn, err := f.Engine.Tenants("prod")
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Pushed("prod")
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.Engine.Cluster("prod")
	if err != nil {
		t.Fatal(err)
	}
	api, ok := c.(*collect.API)
	if !ok || any(tn) != any(api) || any(p) != any(api) || any(again) != any(api) {
		t.Errorf("ports are %p, %p, %p and again %p; want one *collect.API for the cluster", c, tn, p, again)
	}
	if _, err := f.Engine.Tenants("dev"); !errors.Is(err, engine.ErrUnknownCluster) {
		t.Errorf("a cluster not configured: got %v, want ErrUnknownCluster", err)
	}
}
