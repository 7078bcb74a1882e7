package config

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// fakeSecrets serves one secret string per ARN and records the ARNs asked for.
type fakeSecrets struct {
	values map[string]string
	asked  []string
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	arn := aws.ToString(in.SecretId)
	f.asked = append(f.asked, arn)
	v, ok := f.values[arn]
	if !ok {
		return nil, errors.New("ResourceNotFoundException: secret not found")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

func TestLoadWithSecret(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:shardwise-basic-AbCdEf"
	secrets := &fakeSecrets{values: map[string]string{
		arn:           `{"username":"shardwise","password":"s3cret"}`,
		arn + "-rds":  `{"username":"u","password":"p","host":"db"}`,
		arn + "-half": `{"username":"shardwise"}`,
	}}
	tests := []struct {
		name    string
		env     map[string]string
		secrets SecretAPI
		// wantUser and wantPassword are cluster prod's credentials; wantErr a part of the error.
		wantUser, wantPassword, wantErr string
		wantAsked                       bool
	}{
		{name: "basic auth without a secret fails as before",
			env:     map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", "SHARDWISE_AUTH": "basic"},
			secrets: secrets, wantErr: "Username: required when Auth is basic"},
		{name: "basic auth from the secret",
			env: map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", "SHARDWISE_AUTH": "basic",
				EnvBasicAuthSecret: arn},
			secrets: secrets, wantUser: "shardwise", wantPassword: "s3cret", wantAsked: true},
		{name: "a cluster's own username wins",
			env: map[string]string{EnvBasicAuthSecret: arn, "SHARDWISE_CONFIG": `{"clusters":[{"name":"prod","urls":["https://search.example.com"],` +
				`"auth":"basic","username":"own","password_env":"SHARDWISE_TEST_OWN_PASSWORD"}]}`, "SHARDWISE_TEST_OWN_PASSWORD": "x"},
			secrets: secrets, wantUser: "own", wantPassword: "x", wantAsked: true},
		{name: "sigv4 clusters take no credentials",
			env:     map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", EnvBasicAuthSecret: arn},
			secrets: secrets, wantAsked: true},
		{name: "a secret of another shape",
			env: map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", "SHARDWISE_AUTH": "basic",
				EnvBasicAuthSecret: arn + "-rds"},
			secrets: secrets, wantErr: `unknown field "host"`, wantAsked: true},
		{name: "a secret without a password",
			env: map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", "SHARDWISE_AUTH": "basic",
				EnvBasicAuthSecret: arn + "-half"},
			secrets: secrets, wantErr: "password is empty", wantAsked: true},
		{name: "a secret that cannot be read",
			env: map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", "SHARDWISE_AUTH": "basic",
				EnvBasicAuthSecret: arn + "-gone"},
			secrets: secrets, wantErr: "ResourceNotFoundException", wantAsked: true},
		{name: "a secret named without a client",
			env:     map[string]string{"SHARDWISE_CLUSTERS": "prod=https://search.example.com", EnvBasicAuthSecret: arn},
			wantErr: "no Secrets Manager client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secrets.asked = nil
			getenv := func(k string) string { return tc.env[k] }
			if v, ok := tc.env["SHARDWISE_TEST_OWN_PASSWORD"]; ok {
				t.Setenv("SHARDWISE_TEST_OWN_PASSWORD", v)
			}
			c, err := LoadWithSecret(t.Context(), getenv, nil, tc.secrets)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one saying %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := len(secrets.asked) > 0; got != tc.wantAsked {
				t.Errorf("secret read: got %v (%v), want %v", got, secrets.asked, tc.wantAsked)
			}
			if tc.wantErr != "" {
				return
			}
			cl, _ := c.Cluster("prod")
			oc, err := cl.OpenSearch()
			if err != nil {
				t.Fatal(err)
			}
			if oc.Username != tc.wantUser || oc.Password != tc.wantPassword {
				t.Errorf("credentials: got %q/%q, want %q/%q", oc.Username, oc.Password, tc.wantUser, tc.wantPassword)
			}
		})
	}
}

func TestBasicAuthStringRedacts(t *testing.T) {
	if s := (BasicAuth{Username: "u", Password: "hunter2"}).String(); strings.Contains(s, "hunter2") {
		t.Errorf("got %q, want the password redacted", s)
	}
}
