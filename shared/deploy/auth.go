package deploy

import (
	"github.com/awslabs/goformation/v7/cloudformation"

	"github.com/shardwise/shardwise/shared/config"
)

// Basic auth for clusters outside Amazon OpenSearch Service (AuthMode=basic): the username and
// password live in a Secrets Manager secret the stack names by ARN. Each function reads it once,
// at cold start (config.LoadWithSecret), and its role may read that secret alone, and only when
// the stack names one.
const (
	paramBasicAuthSecret = "BasicAuthSecretArn"
	condBasicAuthSecret  = "HasBasicAuthSecret"

	// basicAuthSecretARN is a Secrets Manager secret's full ARN: the secret's name and the six
	// random characters Secrets Manager appends. A partial ARN (without them) would need a
	// wildcard in the grant, which could match another secret of a longer name.
	basicAuthSecretARN = `arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}`
)

func basicAuthParameter() cloudformation.Parameter {
	return cloudformation.Parameter{
		Type:           "String",
		Default:        "",
		AllowedPattern: cloudformation.String(`^$|^` + basicAuthSecretARN + `$`),
		ConstraintDescription: cloudformation.String("BasicAuthSecretArn must be empty or a Secrets Manager secret's full ARN " +
			"(arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>)"),
		Description: cloudformation.String("Full ARN of the Secrets Manager secret holding the basic-auth credentials, " +
			`a JSON object {"username": "...", "password": "..."}, for the clusters whose auth is basic (AuthMode=basic). ` +
			"Read once per cold start; each function may read this secret only. A secret under a customer managed " +
			"KMS key also needs kms:Decrypt granted to the functions' roles in the key's policy. Empty: none"),
	}
}

func basicAuthCondition() any {
	return cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramBasicAuthSecret), "")})
}

// basicAuthEnv tells a function which secret to read; empty when the stack names none.
func basicAuthEnv() (string, string) {
	return config.EnvBasicAuthSecret, cloudformation.Ref(paramBasicAuthSecret)
}

// basicAuthPolicy lets a function read the secret, and only that one, when the stack names it.
func basicAuthPolicy() rolePolicy {
	return rolePolicy{name: "BasicAuthSecret", cond: condBasicAuthSecret, statements: []any{map[string]any{
		"Effect":   "Allow",
		"Action":   []string{"secretsmanager:GetSecretValue"},
		"Resource": cloudformation.Ref(paramBasicAuthSecret),
	}}}
}
