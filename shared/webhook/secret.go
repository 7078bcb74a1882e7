package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// SecretSource supplies the HMAC secret.
type SecretSource interface {
	Secret(ctx context.Context) ([]byte, error)
}

// StaticSecret is a secret given directly (envSecret).
type StaticSecret []byte

// Secret implements SecretSource.
func (s StaticSecret) Secret(context.Context) ([]byte, error) { return s, nil }

// ParameterAPI is the one SSM call parameterSecret makes; *ssm.Client implements it.
type ParameterAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ ParameterAPI = (*ssm.Client)(nil)

// parameterSecret reads the secret from an SSM parameter, decrypting a SecureString, and reuses
// it for TTL so that a warm Lambda does not call SSM on every request. It is safe for concurrent
// use. A failed read is not cached: the next request tries again.
type parameterSecret struct {
	API  ParameterAPI
	Name string
	// TTL is how long a read value is reused; 0 means defaultSecretTTL.
	TTL time.Duration
	// Clock tells the time; nil means time.Now.
	Clock func() time.Time

	mu      sync.Mutex
	value   []byte
	fetched time.Time
}

// Secret implements SecretSource.
func (p *parameterSecret) Secret(ctx context.Context) ([]byte, error) {
	now := time.Now
	if p.Clock != nil {
		now = p.Clock
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = defaultSecretTTL
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.value != nil && now().Sub(p.fetched) < ttl {
		return p.value, nil
	}
	out, err := p.API.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p.Name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("%w: ssm parameter %s: %w", ErrSecretUnavailable, p.Name, err)
	}
	if out == nil || out.Parameter == nil || out.Parameter.Value == nil {
		return nil, fmt.Errorf("%w: ssm parameter %s has no value", ErrSecretUnavailable, p.Name)
	}
	v := []byte(*out.Parameter.Value)
	if err := checkSecret(v); err != nil {
		return nil, fmt.Errorf("%w: ssm parameter %s: %w", ErrSecretUnavailable, p.Name, err)
	}
	p.value, p.fetched = v, now()
	return v, nil
}

// errSecretConfig is returned by SecretFromEnv for a configuration that cannot work.
var errSecretConfig = errors.New("webhook secret configuration")

func checkSecret(v []byte) error {
	if len(v) < minSecretBytes {
		return fmt.Errorf("%w: secret is %d bytes, want at least %d", errSecretConfig, len(v), minSecretBytes)
	}
	return nil
}

// SecretFromEnv returns the secret source the environment configures: envSecret's value, or the
// SSM parameter EnvSecretParam names, read through the client newAPI returns (called only then).
// Neither set returns nil: HMAC senders are then refused and only SigV4 requests get in. Both set,
// or a secret shorter than minSecretBytes, is an error.
func SecretFromEnv(getenv func(string) string, newAPI func() ParameterAPI) (SecretSource, error) {
	value, param := getenv(envSecret), getenv(EnvSecretParam)
	switch {
	case value != "" && param != "":
		return nil, fmt.Errorf("%w: set %s or %s, not both", errSecretConfig, envSecret, EnvSecretParam)
	case value != "":
		if err := checkSecret([]byte(value)); err != nil {
			return nil, fmt.Errorf("%s: %w", envSecret, err)
		}
		return StaticSecret(value), nil
	case param != "":
		return &parameterSecret{API: newAPI(), Name: param}, nil
	}
	return nil, nil
}
