package config_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// motoSSM returns an SSM client on the moto server the tests share.
func motoSSM(t *testing.T) *ssm.Client {
	t.Helper()
	endpoint := dynamotest.Endpoint(t)
	return ssm.New(ssm.Options{
		Region:       dynamotest.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(endpoint),
	})
}

func putParameter(t *testing.T, client *ssm.Client, name, value string, kind ssmtypes.ParameterType) {
	t.Helper()
	if _, err := client.PutParameter(t.Context(), &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String(value), Type: kind, Overwrite: aws.Bool(true),
	}); err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
}

// TestLoadFromSSM reads the configuration document from moto's SSM, as the functions do at cold
// start when the stack's ConfigParameterName is set.
func TestLoadFromSSM(t *testing.T) {
	client := motoSSM(t)
	prefix := "/shardwise-test/" + strings.ReplaceAll(t.Name(), "/", "-")
	doc := `{"clusters":[{"name":"prod","urls":["https://search-prod.example"]}],"move_strategy":"allocation-filter",` +
		`"allocation":{"sustained_samples":4},"log_level":"debug"}`
	putParameter(t, client, prefix+"/plain", doc, ssmtypes.ParameterTypeString)
	putParameter(t, client, prefix+"/secure", doc, ssmtypes.ParameterTypeSecureString)
	putParameter(t, client, prefix+"/broken", `{"allocation":{"sustained_samples":`, ssmtypes.ParameterTypeString)

	tests := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, c config.Config)
		wantErr string
	}{
		{
			name: "plain parameter",
			env:  map[string]string{config.EnvConfigParameter: prefix + "/plain"},
			check: func(t *testing.T, c config.Config) {
				if len(c.Clusters) != 1 || c.Clusters[0].Name != "prod" || c.MoveStrategy != config.StrategyAllocationFilter ||
					c.Allocation.SustainedSamples != 4 || c.LogLevel != "debug" {
					t.Errorf("got clusters %+v strategy %q samples %d log %q, want the document's", c.Clusters, c.MoveStrategy,
						c.Allocation.SustainedSamples, c.LogLevel)
				}
				if !c.Safety.DryRun {
					t.Error("dry_run: got false, want the default (true) for a field the document does not name")
				}
			},
		},
		{
			name: "SecureString is decrypted",
			env:  map[string]string{config.EnvConfigParameter: prefix + "/secure"},
			check: func(t *testing.T, c config.Config) {
				if c.Allocation.SustainedSamples != 4 {
					t.Errorf("sustained_samples: got %d, want 4 from the decrypted document", c.Allocation.SustainedSamples)
				}
			},
		},
		{
			name: "the stack's variables win over the document",
			env: map[string]string{
				config.EnvConfigParameter: prefix + "/plain",
				"SHARDWISE_MOVE_STRATEGY": "auto",
				"SHARDWISE_LOG_LEVEL":     "warn",
				"SHARDWISE_CONFIG":        `{"allocation":{"sustained_samples":5}}`,
			},
			check: func(t *testing.T, c config.Config) {
				if c.MoveStrategy != config.StrategyAuto || c.LogLevel != "warn" || c.Allocation.SustainedSamples != 5 {
					t.Errorf("got strategy %q log %q samples %d, want auto, warn and 5", c.MoveStrategy, c.LogLevel, c.Allocation.SustainedSamples)
				}
				if len(c.Clusters) != 1 || c.Clusters[0].Name != "prod" {
					t.Errorf("clusters: got %+v, want the document's", c.Clusters)
				}
			},
		},
		{name: "missing parameter", env: map[string]string{config.EnvConfigParameter: prefix + "/absent"}, wantErr: "SHARDWISE_CONFIG_PARAMETER: get " + prefix + "/absent"},
		{name: "not JSON", env: map[string]string{config.EnvConfigParameter: prefix + "/broken"}, wantErr: "SHARDWISE_CONFIG_PARAMETER: " + prefix + "/broken: config:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(t.Context(), func(k string) string { return tc.env[k] }, client)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load: got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tc.check(t, c)
		})
	}
}

// failingSSM fails every call: Load must not call SSM when no parameter is named.
type failingSSM struct{ calls int }

func (f *failingSSM) GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls++
	return nil, errors.New("SSM called")
}

func TestLoadWithoutParameter(t *testing.T) {
	env := map[string]string{"SHARDWISE_CLUSTERS": "prod=https://p.example"}
	f := &failingSSM{}
	c, err := config.Load(t.Context(), func(k string) string { return env[k] }, f)
	if err != nil || len(c.Clusters) != 1 {
		t.Fatalf("Load: got %+v, %v; want prod from the environment", c.Clusters, err)
	}
	if f.calls != 0 {
		t.Errorf("SSM calls: got %d, want 0", f.calls)
	}
	if _, err := config.Load(t.Context(), func(k string) string {
		return map[string]string{config.EnvConfigParameter: "/x"}[k]
	}, nil); err == nil || !strings.Contains(err.Error(), "no SSM client") {
		t.Errorf("Load with a parameter and no client: got %v, want an error saying so", err)
	}
}
