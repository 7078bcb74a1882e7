package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// fakeParameters answers GetParameter with values in turn (the last repeats) or an error,
// counting calls and keeping the last input.
type fakeParameters struct {
	values []string
	err    error
	calls  int
	last   *ssm.GetParameterInput
}

func (f *fakeParameters) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls++
	f.last = in
	if f.err != nil {
		return nil, f.err
	}
	v := f.values[min(f.calls, len(f.values))-1]
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

func TestParameterSecret(t *testing.T) {
	first, second := strings.Repeat("a", minSecretBytes), strings.Repeat("b", minSecretBytes)
	now := testNow
	clock := func() time.Time { return now }
	api := &fakeParameters{values: []string{first, second}}
	p := &parameterSecret{API: api, Name: "/shardwise/webhook-secret", Clock: clock}

	steps := []struct {
		name      string
		advance   time.Duration
		want      string
		wantCalls int
	}{
		{name: "first request reads SSM", want: first, wantCalls: 1},
		{name: "within the TTL the value is reused", advance: defaultSecretTTL - time.Second, want: first, wantCalls: 1},
		{name: "after the TTL it is read again", advance: time.Second, want: second, wantCalls: 2},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		got, err := p.Secret(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if string(got) != s.want || api.calls != s.wantCalls {
			t.Errorf("%s: got %q after %d calls, want %q after %d", s.name, got, api.calls, s.want, s.wantCalls)
		}
	}
	if got := aws.ToString(api.last.Name); got != "/shardwise/webhook-secret" {
		t.Errorf("parameter name: got %q", got)
	}
	if !aws.ToBool(api.last.WithDecryption) {
		t.Error("GetParameter without decryption: a SecureString would come back encrypted")
	}
}

func TestParameterSecretErrors(t *testing.T) {
	tests := []struct {
		name string
		api  *fakeParameters
		want string
	}{
		{name: "SSM fails", api: &fakeParameters{err: errors.New("AccessDeniedException")}, want: "AccessDeniedException"},
		{name: "secret too short", api: &fakeParameters{values: []string{"short"}}, want: "at least 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &parameterSecret{API: tc.api, Name: "p"}
			for attempt := 1; attempt <= 2; attempt++ {
				_, err := p.Secret(t.Context())
				if !errors.Is(err, ErrSecretUnavailable) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("attempt %d: got %v, want ErrSecretUnavailable saying %q", attempt, err, tc.want)
				}
			}
			// A failure is not cached: each request asks SSM again.
			if tc.api.calls != 2 {
				t.Errorf("SSM calls: got %d, want 2", tc.api.calls)
			}
		})
	}
}

func TestSecretFromEnv(t *testing.T) {
	long := strings.Repeat("s", minSecretBytes)
	tests := []struct {
		name      string
		env       map[string]string
		want      SecretSource
		wantParam string
		wantErr   string
	}{
		{name: "nothing set: SigV4 only", env: map[string]string{}},
		{name: "secret in the environment", env: map[string]string{envSecret: long}, want: StaticSecret(long)},
		{name: "secret in SSM", env: map[string]string{EnvSecretParam: "/shardwise/webhook"}, wantParam: "/shardwise/webhook"},
		{name: "both", env: map[string]string{envSecret: long, EnvSecretParam: "/p"}, wantErr: "not both"},
		{name: "secret too short", env: map[string]string{envSecret: "hunter2"}, wantErr: "at least 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeParameters{values: []string{long}}
			made := false
			got, err := SecretFromEnv(func(k string) string { return tc.env[k] }, func() ParameterAPI { made = true; return api })
			if tc.wantErr != "" {
				if !errors.Is(err, errSecretConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want errSecretConfig saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SecretFromEnv: %v", err)
			}
			if made != (tc.wantParam != "") {
				t.Errorf("SSM client built: got %v, want %v", made, tc.wantParam != "")
			}
			if tc.wantParam != "" {
				p, ok := got.(*parameterSecret)
				if !ok || p.Name != tc.wantParam || p.API != api {
					t.Fatalf("got %#v, want a parameterSecret for %s", got, tc.wantParam)
				}
				return
			}
			if tc.want == nil {
				if got != nil {
					t.Errorf("got %#v, want no secret source", got)
				}
				return
			}
			v, err := got.Secret(t.Context())
			if err != nil || string(v) != long {
				t.Errorf("secret: got %q, %v, want the environment's", v, err)
			}
		})
	}
}
