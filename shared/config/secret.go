package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shardwise/shardwise/shared/opensearch"
)

// EnvBasicAuthSecret names the Secrets Manager secret (its ARN) holding the basic-auth credentials
// of the clusters whose auth is basic: the stack's BasicAuthSecretArn parameter. The functions read
// it once, at cold start, so the password is never in the environment or the configuration.
const EnvBasicAuthSecret = "SHARDWISE_BASIC_AUTH_SECRET"

// BasicAuth is a basic-auth secret's credentials.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// String keeps the password out of logs and error messages.
func (b BasicAuth) String() string {
	return fmt.Sprintf("{Username:%s Password:[redacted]}", b.Username)
}

// ParseBasicAuthSecret reads a secret's string: a JSON object with username and password, as Secrets
// Manager's console stores a key/value secret. Other keys are an error, so that a secret of
// another shape (an RDS secret with host and port) is not taken for this one.
func ParseBasicAuthSecret(s string) (BasicAuth, error) {
	var b BasicAuth
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return BasicAuth{}, fmt.Errorf("basic-auth secret: want a JSON object with username and password: %w", err)
	}
	var errs []error
	if b.Username == "" {
		errs = append(errs, errors.New("basic-auth secret: username is empty"))
	}
	if b.Password == "" {
		errs = append(errs, errors.New("basic-auth secret: password is empty"))
	}
	return b, errors.Join(errs...)
}

// WithBasicAuth gives the secret's credentials to every cluster whose auth is basic and that names
// no credentials of its own (username or password_env): those win, so one cluster of several can
// keep its own.
func (c Config) WithBasicAuth(b BasicAuth) Config {
	out := c
	out.Clusters = make([]Cluster, len(c.Clusters))
	for i, cl := range c.Clusters {
		if opensearch.Auth(cl.Auth) == opensearch.AuthBasic && cl.Username == "" && cl.PasswordEnv == "" {
			cl.secret = &b
		}
		out.Clusters[i] = cl
	}
	return out
}
