package deploy

import (
	"strconv"

	"github.com/awslabs/goformation/v7/cloudformation"
	awslambda "github.com/awslabs/goformation/v7/cloudformation/lambda"

	"github.com/shardwise/shardwise/shared/webhook"
)

// The public metrics webhook. The ingest function's own Function URL is AWS_IAM: Lambda lets
// through only SigV4-signed requests of principals IAM allows, so a sender that cannot sign SigV4
// never reaches the code that would check its HMAC signature. Such senders get a second URL, on
// the alias "webhook", with AuthType NONE; the function refuses every request on it that lacks a
// valid, fresh HMAC signature (shared/webhook). The URL exists only when the stack names the SSM
// parameter holding the secret: without a secret it could only refuse.
const (
	paramWebhookSecret = "WebhookSecretParameter"
	condPublicWebhook  = "HasPublicWebhook"

	webhookAliasID            = "WebhookAlias"
	webhookURLID              = "WebhookUrl"
	webhookURLPermissionID    = "WebhookUrlPublicAccess"
	webhookInvokePermissionID = "WebhookInvokeViaUrl"

	// webhookAlias points at $LATEST, so it runs whatever code the stack deployed without
	// publishing versions (a published version would have to be re-published on every deploy).
	webhookAlias  = "webhook"
	latestVersion = "$LATEST"
	urlAuthNone   = "NONE"
)

func webhookParameter() cloudformation.Parameter {
	return cloudformation.Parameter{
		Type:    "String",
		Default: "",
		// SSM's rule for parameter names (a-zA-Z0-9_.- and / for hierarchies, at most 1011
		// characters), fully qualified with the leading / so the IAM resource ARN is
		// arn:...:parameter/<name without the slash>.
		AllowedPattern: cloudformation.String(`^$|^/[a-zA-Z0-9_.\-/]+$`),
		MaxLength:      cloudformation.Int(1011),
		Description: cloudformation.String("SSM SecureString parameter (/path/name) holding the HMAC secret of the public metrics " +
			"webhook, for senders that cannot sign SigV4; empty: no public webhook"),
	}
}

// webhookResources are the alias, its public URL and the two permissions a NONE URL needs:
// lambda:InvokeFunctionUrl for anyone, and lambda:InvokeFunction restricted to calls through a
// function URL (required of new function URLs since October 2025; SAM adds the same pair for
// FunctionUrlConfig AuthType NONE).
func webhookResources(fnID string) map[string]cloudformation.Resource {
	alias := &awslambda.Alias{
		Description:                cloudformation.String("Public metrics webhook (HMAC-signed requests only); always $LATEST"),
		FunctionName:               cloudformation.Ref(fnID),
		FunctionVersion:            latestVersion,
		Name:                       webhookAlias,
		AWSCloudFormationCondition: condPublicWebhook,
	}
	url := &awslambda.Url{
		AuthType:                   urlAuthNone,
		TargetFunctionArn:          cloudformation.GetAtt(fnID, "Arn"),
		Qualifier:                  cloudformation.String(webhookAlias),
		AWSCloudFormationDependsOn: []string{webhookAliasID},
		AWSCloudFormationCondition: condPublicWebhook,
	}
	urlAccess := &awslambda.Permission{
		Action:                     "lambda:InvokeFunctionUrl",
		FunctionName:               cloudformation.Ref(webhookAliasID),
		Principal:                  "*",
		FunctionUrlAuthType:        cloudformation.String(urlAuthNone),
		AWSCloudFormationCondition: condPublicWebhook,
	}
	invoke := withProperties{
		Resource: &awslambda.Permission{
			Action:                     "lambda:InvokeFunction",
			FunctionName:               cloudformation.Ref(webhookAliasID),
			Principal:                  "*",
			AWSCloudFormationCondition: condPublicWebhook,
		},
		// goformation v7 predates InvokedViaFunctionUrl.
		extra: map[string]any{"InvokedViaFunctionUrl": true},
	}
	return map[string]cloudformation.Resource{
		webhookAliasID:            alias,
		webhookURLID:              url,
		webhookURLPermissionID:    urlAccess,
		webhookInvokePermissionID: invoke,
	}
}

// webhookEnv tells the function where its HMAC secret is; empty when the stack names none.
func webhookEnv() (string, string) {
	return webhook.EnvSecretParam, cloudformation.Ref(paramWebhookSecret)
}

// webhookSecretPolicy lets the function read the secret's parameter. A SecureString under the
// AWS managed key aws/ssm needs no kms:Decrypt grant: that key's policy allows its use through SSM
// to every principal of the account.
func webhookSecretPolicy() rolePolicy {
	return rolePolicy{name: "WebhookSecret", cond: condPublicWebhook, statements: []any{map[string]any{
		"Effect":   "Allow",
		"Action":   []string{"ssm:GetParameter"},
		"Resource": cloudformation.Sub("arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${" + paramWebhookSecret + "}"),
	}}}
}

// The public webhook's concurrency limit. The URL is on an alias of the ingest function, and
// Lambda reserves concurrency per function, not per alias: the reservation caps the function as a
// whole, the cadence and the SigV4 URL included. Beyond it Lambda throttles, and a Function URL
// answers 429, so a flood of requests (signed or not: refusing one still runs the function) costs
// at most that many concurrent executions and leaves the rest of the account's concurrency alone.
const (
	paramWebhookConcurrency = "WebhookConcurrency"
	condWebhookConcurrency  = "HasWebhookConcurrency"
	// Off: a reservation takes concurrency from the account's pool, and Lambda refuses one that
	// leaves under 100 unreserved, so in a new account (its quota starts at 10 or 50) any
	// reservation fails the deploy. Give 50 (40 for the cadence, whose inline Map runs at most 40
	// clusters at once, and 10 for webhook requests) to bound a public webhook's flood.
	defaultWebhookConcurrency = 0
)

func webhookConcurrencyParameter() cloudformation.Parameter {
	return cloudformation.Parameter{
		Type:     "Number",
		Default:  strconv.Itoa(defaultWebhookConcurrency),
		MinValue: cloudformation.Float64(0),
		Description: cloudformation.String("Reserved concurrency of the ingest function, which serves the webhook URLs and the " +
			"30-second cadence: at most this many run at once, requests beyond it get HTTP 429. Default 0: no reservation, " +
			"which any account can deploy (Lambda keeps 100 unreserved, more than a new account's quota). With a public " +
			"webhook give 50: 40 for the cadence (its Map runs 40 clusters at once) and 10 for webhook requests"),
	}
}

// webhookConcurrency is the ingest function's ReservedConcurrentExecutions: the parameter, or none
// when it is 0 (a reservation of 0 would throttle every invocation).
func webhookConcurrency() any {
	return cloudformation.If(condWebhookConcurrency, cloudformation.Ref(paramWebhookConcurrency), cloudformation.Ref("AWS::NoValue"))
}

func webhookConcurrencyCondition() any {
	return cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramWebhookConcurrency), "0")})
}
