// Package deploy generates shardwise's AWS SAM template (template.yaml) with goformation, so the
// stack is typed Go code reviewed like the rest and the committed YAML is only its output.
package deploy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/dynamodb"
	"github.com/awslabs/goformation/v7/cloudformation/events"
	"github.com/awslabs/goformation/v7/cloudformation/policies"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/cloudformation/sqs"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/state"
)

// Logical IDs and parameter names, referenced across resources.
const (
	tableID   = "StateTable"
	busID     = "EventBus"
	dlqID     = "DeadLetterQueue"
	cadenceID = "IngestCadence"

	paramClusters = "ClusterEndpoints"
	paramDryRun   = "DryRun"
	paramAuth     = "AuthMode"
	paramDomain   = "OpenSearchDomainArns"
	paramStrategy = "MoveStrategy"
	paramService  = "Service"
	paramLogLevel = "LogLevel"
	paramConfig   = "ConfigParameterName"
	paramBus      = "EventBusName"

	condHasDomain  = "HasOpenSearchDomain"
	condHasConfig  = "HasConfigParameter"
	condHasBusName = "HasEventBusName"
)

// The bus's name when EventBusName is empty: the stack's own, so that a second stack in the same
// account and region (staging beside prod) gets a bus of its own instead of failing on the first
// one's. A stack name is 1-128 letters, digits and hyphens starting with a letter (CloudFormation's
// rule for stack names), so this is always a valid custom bus name (busNameRule) and never
// "default".
const (
	stackBusName    = "shardwise-${AWS::StackName}"
	stackBusNameDoc = "shardwise-<stack name>"
)

// busNameParameterPattern is EventBusName's AllowedPattern: empty, or a custom bus name other than
// "default". CloudFormation's patterns are Java regular expressions, which have lookahead (Go's
// regexp has none: validBusName checks "default" apart).
const busNameParameterPattern = `^$|^(?!default$)` + busNameRule + `$`

// Template builds the SAM template. Functions carry SAM properties that goformation v7 does not
// model, so their entries in Resources are not *serverless.Function: read the rendered JSON or
// YAML to inspect them.
func Template(opts Options) (*cloudformation.Template, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}

	t := cloudformation.NewTemplate()
	t.Transform = &cloudformation.Transform{String: cloudformation.String("AWS::Serverless-2016-10-31")}
	t.Description = opts.Description
	t.Parameters = parameters(opts)
	t.Conditions = conditions()

	t.Resources[tableID] = stateTable()
	t.Resources[busID] = eventBus()
	t.Resources[dlqID] = &sqs.Queue{
		MessageRetentionPeriod: cloudformation.Int(deadLetterRetentionSeconds),
		SqsManagedSseEnabled:   cloudformation.Bool(true),
		// Failed events are evidence for debugging, not a record to keep past the stack.
		AWSCloudFormationDeletionPolicy:      policies.DeletionPolicy("Delete"),
		AWSCloudFormationUpdateReplacePolicy: policies.UpdateReplacePolicy("Delete"),
	}
	for id, r := range operationsResources() {
		t.Resources[id] = r
	}
	for _, fn := range functions() {
		t.Resources[logicalID(fn.name)] = lambda(fn, opts)
		t.Resources[functionRoleID(fn)] = functionRole(fn)
		t.Resources[logGroupID(fn.name)] = logGroup()
		if fn.publicWebhook {
			for id, r := range webhookResources(logicalID(fn.name)) {
				t.Resources[id] = r
			}
		}
	}
	for id, r := range cadenceResources() {
		t.Resources[id] = r
	}
	for id, r := range alarmResources() {
		t.Resources[id] = r
	}
	for id, r := range sandboxAlarmResources() {
		t.Resources[id] = r
	}
	for id, r := range healthAlarmResources() {
		t.Resources[id] = r
	}
	t.Resources[staleAlarmID] = staleAlarm()
	board, err := dashboard()
	if err != nil {
		return nil, err
	}
	t.Resources[dashboardID] = board

	t.Outputs = cloudformation.Outputs{
		"StateTableName": {
			Value:       cloudformation.Ref(tableID),
			Description: cloudformation.String("DynamoDB table holding snapshots, cooldowns and the move ledger"),
		},
		"EventBusName": {
			Value:       cloudformation.Ref(busID),
			Description: cloudformation.String("EventBridge bus carrying shardwise's decisions: the audit log"),
		},
		"IngestFunctionUrl": {
			// SAM names the AWS::Lambda::Url it creates for FunctionUrlConfig <function>Url.
			Value:       cloudformation.GetAtt(logicalID("ingest")+"Url", "FunctionUrl"),
			Description: cloudformation.String("Metrics webhook (SigV4-signed requests only)"),
		},
		"WebhookUrl": {
			Value:       cloudformation.GetAtt(webhookURLID, "FunctionUrl"),
			Description: cloudformation.String("Public metrics webhook (HMAC-signed requests only)"),
			Condition:   cloudformation.String(condPublicWebhook),
		},
		"AlertTopicArn": {
			Value:       cloudformation.Ref(alertTopicID),
			Description: cloudformation.String("SNS topic for Scale Up Needed and dead letters; subscribe to it"),
		},
		"DashboardUrl": {
			Value: cloudformation.Sub("https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}" +
				"#dashboards:name=${" + dashboardID + "}"),
			Description: cloudformation.String("CloudWatch dashboard: hot nodes, queue latency per node, moves, replica " +
				"changes, scale-up signals and breaker refusals, per cluster"),
		},
		"DeadLetterQueueUrl": {
			Value:       cloudformation.Ref(dlqID),
			Description: cloudformation.String("Events the asynchronous functions failed on after retries"),
		},
	}
	for _, fn := range functions() {
		if len(fn.openSearch) == 0 {
			continue
		}
		// SAM names the execution role it creates for a function <Function>Role. Fine-grained
		// access control maps these ARNs to OpenSearch roles (shardwise template --fgac-role).
		t.Outputs[roleOutput(fn.name)] = cloudformation.Output{
			Value:       cloudformation.GetAtt(logicalID(fn.name)+"Role", "Arn"),
			Description: cloudformation.String("IAM role of the " + fn.name + " function, for the OpenSearch role mapping"),
		}
	}
	return t, nil
}

// YAML renders the template as template.yaml holds it. The output is deterministic: goformation
// renders through a map, and yaml.v3 writes map keys sorted.
func YAML(opts Options) ([]byte, error) {
	t, err := Template(opts)
	if err != nil {
		return nil, err
	}
	out, err := t.YAML()
	if err != nil {
		return nil, fmt.Errorf("render template YAML: %w", err)
	}
	return out, nil
}

// logicalID turns a function name into its resource's logical ID: "ingest" -> "IngestFunction".
func logicalID(name string) string {
	return strings.ToUpper(name[:1]) + name[1:] + "Function"
}

// eventBus is the stack's bus: named EventBusName, or after the stack when that is empty. Every
// other place that names the bus (the functions' rules and SHARDWISE_BUS, their PutEvents grants,
// the Scale Up Needed rule, the archive, the EventBusName output) refers to this resource, so it
// follows the name.
func eventBus() *events.EventBus {
	return &events.EventBus{Name: cloudformation.If(condHasBusName, cloudformation.Ref(paramBus), cloudformation.Sub(stackBusName))}
}

func parameters(opts Options) cloudformation.Parameters {
	out := operationsParameters()
	for k, v := range alarmParameters() {
		out[k] = v
	}
	for k, v := range sandboxAlarmParameters() {
		out[k] = v
	}
	for k, v := range healthParameters() {
		out[k] = v
	}
	out[paramWebhookConcurrency] = webhookConcurrencyParameter()
	out[paramBasicAuthSecret] = basicAuthParameter()
	for k, v := range map[string]cloudformation.Parameter{
		paramClusters: {
			Type: "CommaDelimitedList",
			// Empty when the configuration parameter lists the clusters.
			Default: "",
			Description: cloudformation.String("OpenSearch clusters to watch as name=url pairs, comma-separated " +
				"(prod=https://search-prod.example.com); passed on as SHARDWISE_CLUSTERS. Empty: the clusters of " +
				"ConfigParameterName's document"),
		},
		paramDryRun: {
			Type: "String",
			// Dry-run unless explicitly turned off (README, "Acting safely").
			Default:       "true",
			AllowedValues: []any{"true", "false"},
			Description:   cloudformation.String("When true, decisions are logged and published but never executed"),
		},
		paramAuth: {
			Type:          "String",
			Default:       "sigv4",
			AllowedValues: []any{"sigv4", "basic", "none"},
			Description: cloudformation.String("How the functions authenticate to OpenSearch: sigv4 (Amazon OpenSearch " +
				"Service, with OpenSearchDomainArns), basic (credentials from BasicAuthSecretArn) or none"),
		},
		paramWebhookSecret: webhookParameter(),
		paramDomain:        domainParameter(),
		paramStrategy: {
			Type: "String",
			// auto works on both kinds of cluster: reroute where it is allowed, allocation
			// filters where Amazon OpenSearch Service answers 403.
			Default:       string(config.StrategyAuto),
			AllowedValues: anySlice(config.MoveStrategies()),
			Description: cloudformation.String("How moves are issued: reroute (_cluster/reroute), allocation-filter " +
				"(index allocation filters, for managed domains that refuse reroute) or auto (reroute, filters on 403)"),
		},
		paramService: {
			Type: "String",
			// The SigV4 signing name of Amazon OpenSearch Service; the only one the stack's IAM
			// grants cover.
			Default:       opensearch.ServiceES,
			AllowedValues: []any{opensearch.ServiceES},
			Description: cloudformation.String("SigV4 signing service of the clusters: es (Amazon OpenSearch Service). " +
				"OpenSearch Serverless (aoss) is not supported: collections serve no _nodes/stats or _cluster/reroute"),
		},
		paramLogLevel: {
			Type:          "String",
			Default:       config.Default().LogLevel,
			AllowedValues: anySlice(config.LogLevels()),
			Description:   cloudformation.String("The functions' log level"),
		},
		paramBus: {
			Type: "String",
			// Empty unless `shardwise template --bus-name` (Options.BusName) set another default.
			Default:        opts.BusName,
			AllowedPattern: cloudformation.String(busNameParameterPattern),
			ConstraintDescription: cloudformation.String("EventBusName must be empty or 1-256 characters of A-Z, a-z, 0-9, " +
				"'.', '-' and '_' (EventBridge's rule for custom bus names), and not default (the account's own bus)"),
			Description: cloudformation.String("Name of the EventBridge bus the stack creates, which the functions publish " +
				"to and the rules listen on. Empty: " + stackBusNameDoc + ", one bus per stack. A stack deployed when " +
				"the bus was always named shardwise keeps its bus (and its archive) with EventBusName=shardwise"),
		},
		paramConfig: {
			Type:    "String",
			Default: "",
			// SSM's rule for parameter names, fully qualified (see webhookParameter).
			AllowedPattern: cloudformation.String(`^$|^/[a-zA-Z0-9_.\-/]+$`),
			MaxLength:      cloudformation.Int(1011),
			Description: cloudformation.String("SSM parameter (/path/name, String or SecureString) holding the whole " +
				"configuration as JSON, read at cold start; the other parameters win over it. Empty: none"),
		},
	} {
		out[k] = v
	}
	return out
}

// anySlice converts a list of allowed values for a Parameter.
func anySlice[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func conditions() map[string]any {
	out := operationsConditions()
	for k, v := range alarmConditions() {
		out[k] = v
	}
	for k, v := range sandboxAlarmConditions() {
		out[k] = v
	}
	for k, v := range healthConditions() {
		out[k] = v
	}
	for k, v := range domainConditions() {
		out[k] = v
	}
	out[condWebhookConcurrency] = webhookConcurrencyCondition()
	out[condBasicAuthSecret] = basicAuthCondition()
	for k, v := range map[string]any{
		condPublicWebhook: cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramWebhookSecret), "")}),
		condHasConfig:     cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramConfig), "")}),
		condHasBusName:    cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramBus), "")}),
	} {
		out[k] = v
	}
	return out
}

func stateTable() *dynamodb.Table {
	return &dynamodb.Table{
		// Generic single-table keys, named by shared/state, which decides what they hold.
		AttributeDefinitions: []dynamodb.Table_AttributeDefinition{
			{AttributeName: state.AttrPartitionKey, AttributeType: "S"},
			{AttributeName: state.AttrSortKey, AttributeType: "S"},
		},
		KeySchema: []dynamodb.Table_KeySchema{
			{AttributeName: state.AttrPartitionKey, KeyType: "HASH"},
			{AttributeName: state.AttrSortKey, KeyType: "RANGE"},
		},
		// A few writes every 30 s: on-demand costs less than any provisioned minimum.
		BillingMode: cloudformation.String("PAY_PER_REQUEST"),
		TimeToLiveSpecification: &dynamodb.Table_TimeToLiveSpecification{
			AttributeName: cloudformation.String(state.AttrExpires),
			Enabled:       true,
		},
		// The move ledger is the record of what shardwise did to a cluster: recoverable to any
		// second of the last 35 days, and kept when the stack is deleted or the table replaced.
		PointInTimeRecoverySpecification: &dynamodb.Table_PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: cloudformation.Bool(true),
		},
		AWSCloudFormationDeletionPolicy:      policies.DeletionPolicy("Retain"),
		AWSCloudFormationUpdateReplacePolicy: policies.UpdateReplacePolicy("Retain"),
	}
}

func lambda(fn function, opts Options) withProperties {
	// goformation's EventBridgeRuleEvent has no RetryPolicy or DeadLetterConfig: the events are
	// written as plain maps.
	sources := map[string]any{}
	for _, tr := range fn.triggers {
		props := ruleTargetPolicy()
		props["Pattern"] = tr.pattern
		if tr.onBus {
			props["EventBusName"] = cloudformation.Ref(busID)
		}
		sources[tr.name] = map[string]any{"Type": "EventBridgeRule", "Properties": props}
	}

	f := &serverless.Function{
		Description:   cloudformation.String(fn.description),
		CodeUri:       &serverless.Function_CodeUri{String: cloudformation.String(path.Join(opts.SourceDir, fn.name) + "/")},
		Handler:       cloudformation.String("bootstrap"),
		Runtime:       cloudformation.String(runtime),
		Architectures: []string{architecture},
		MemorySize:    cloudformation.Int(fn.memoryMB),
		Timeout:       cloudformation.Int(cmp.Or(fn.timeoutSeconds, timeoutSeconds)),
		Environment: &serverless.Function_FunctionEnvironment{Variables: map[string]string{
			"SHARDWISE_TABLE":    cloudformation.Ref(tableID),
			"SHARDWISE_BUS":      cloudformation.Ref(busID),
			"SHARDWISE_DRY_RUN":  cloudformation.Ref(paramDryRun),
			"SHARDWISE_CLUSTERS": cloudformation.Join(",", cloudformation.Ref(paramClusters)),
			"SHARDWISE_AUTH":     cloudformation.Ref(paramAuth),
			"SHARDWISE_SERVICE":  cloudformation.Ref(paramService),
			// Single values win over the configuration parameter's document (config.Load).
			"SHARDWISE_MOVE_STRATEGY": cloudformation.Ref(paramStrategy),
			"SHARDWISE_LOG_LEVEL":     cloudformation.Ref(paramLogLevel),
			config.EnvConfigParameter: cloudformation.Ref(paramConfig),
		}},
		// sam build compiles CodeUri with `go build` for the function's architecture.
		AWSCloudFormationMetadata: map[string]any{
			"BuildMethod":     buildMethod,
			"BuildProperties": map[string]any{"TrimGoPath": true},
		},
	}
	if fn.publicWebhook {
		name, value := webhookEnv()
		f.Environment.Variables[name] = value
	}
	if len(fn.openSearch) > 0 {
		name, value := basicAuthEnv()
		f.Environment.Variables[name] = value
	}

	if fn.functionURL {
		// AWS_IAM: callers sign with SigV4, so the webhook needs no secret of its own.
		f.FunctionUrlConfig = &serverless.Function_FunctionUrlConfig{AuthType: "AWS_IAM"}
	}

	extra := map[string]any{
		"Role":          cloudformation.GetAtt(functionRoleID(fn), "Arn"),
		"LoggingConfig": loggingConfig(fn.name),
		"VpcConfig":     vpcConfig(),
	}
	if len(sources) > 0 {
		extra["Events"] = sources
	}
	if fn.publicWebhook {
		extra["ReservedConcurrentExecutions"] = webhookConcurrency()
	}
	if len(fn.triggers) > 0 {
		// EventBridge invokes asynchronously: it hands the event to Lambda's queue and is done,
		// so what fails is the function, after Lambda's retries. Those events go to the
		// dead-letter queue with the error, where an operator can read and replay them.
		extra["EventInvokeConfig"] = map[string]any{
			"MaximumEventAgeInSeconds": maxEventAgeSeconds,
			"MaximumRetryAttempts":     maxRetryAttempts,
			"DestinationConfig": map[string]any{
				"OnFailure": map[string]any{"Type": "SQS", "Destination": cloudformation.GetAtt(dlqID, "Arn")},
			},
		}
	}
	return withProperties{Resource: f, extra: extra}
}

// iamPolicies grants each function exactly what its code calls: its DynamoDB actions on the
// table (none for a function that keeps no state), PutEvents on the bus, the configuration parameter when the stack names one and, when a
// domain is given, its OpenSearch requests by method and path. They are the inline policies of
// the function's role (functionRole).
func iamPolicies(fn function) []rolePolicy {
	var policies []rolePolicy
	if len(fn.dynamoDB) > 0 {
		policies = append(policies, rolePolicy{name: "StateTable", statements: []any{dynamoDBStatement(fn.dynamoDB)}})
	}
	policies = append(policies, rolePolicy{name: "EventBus", statements: []any{map[string]any{
		"Effect":   "Allow",
		"Action":   []string{"events:PutEvents"},
		"Resource": cloudformation.GetAtt(busID, "Arn"),
	}}})
	if len(fn.openSearch) > 0 {
		policies = append(policies, rolePolicy{name: "Domains", cond: condHasDomain, statements: openSearchStatements(fn.openSearch)})
	}
	policies = append(policies, rolePolicy{name: "ConfigParameter", cond: condHasConfig, statements: configParameterStatements()})
	if fn.publicWebhook {
		policies = append(policies, webhookSecretPolicy())
	}
	if len(fn.openSearch) > 0 {
		policies = append(policies, basicAuthPolicy())
	}
	return policies
}

// configParameterStatements let a function or the cadence read the configuration parameter, and
// only that one (see webhookSecretPolicy for SecureString decryption).
func configParameterStatements() []any {
	return []any{map[string]any{
		"Effect":   "Allow",
		"Action":   []string{"ssm:GetParameter"},
		"Resource": cloudformation.Sub("arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${" + paramConfig + "}"),
	}}
}

// configParameterPolicy is configParameterStatements as an entry of a SAM policy list, when the
// stack names the parameter.
func configParameterPolicy() any {
	return cloudformation.If(condHasConfig, map[string]any{"Statement": configParameterStatements()}, cloudformation.Ref("AWS::NoValue"))
}

// withProperties renders a goformation resource with additional Properties that goformation v7
// does not model: SAM policy lists mixing templates and statements, EventBridgePutEventsPolicy,
// and EventInvokeConfig (goformation writes "OnSuccess: null", which SAM rejects).
type withProperties struct {
	cloudformation.Resource
	extra map[string]any
}

// MarshalJSON merges extra into the resource's Properties, refusing to overwrite one goformation
// already set, so a property cannot silently come from two places.
func (r withProperties) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal(r.Resource)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", r.AWSCloudFormationType(), err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", r.AWSCloudFormationType(), err)
	}
	props := map[string]json.RawMessage{}
	if raw, ok := doc["Properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, fmt.Errorf("decode %s properties: %w", r.AWSCloudFormationType(), err)
		}
	}
	for name, value := range r.extra {
		if _, taken := props[name]; taken {
			return nil, fmt.Errorf("%s property %s set twice", r.AWSCloudFormationType(), name)
		}
		raw, err := json.Marshal(value)
		if err != nil {
			return nil, fmt.Errorf("marshal %s property %s: %w", r.AWSCloudFormationType(), name, err)
		}
		props[name] = raw
	}
	if doc["Properties"], err = json.Marshal(props); err != nil {
		return nil, fmt.Errorf("marshal %s properties: %w", r.AWSCloudFormationType(), err)
	}
	return json.Marshal(doc)
}
