package deploy

import (
	"reflect"
	"regexp"
	"testing"
)

func TestPublicWebhook(t *testing.T) {
	doc := render(t, Options{})
	res := get(t, doc, "Resources")
	tests := []struct {
		name string
		path []any
		want any
	}{
		{"alias of the ingest function", []any{"WebhookAlias", "Properties", "FunctionName"}, ref("IngestFunction")},
		{"alias runs the deployed code", []any{"WebhookAlias", "Properties", "FunctionVersion"}, "$LATEST"},
		{"alias name", []any{"WebhookAlias", "Properties", "Name"}, "webhook"},
		{"URL is public", []any{"WebhookUrl", "Properties", "AuthType"}, "NONE"},
		{"URL of the alias", []any{"WebhookUrl", "Properties", "Qualifier"}, "webhook"},
		{"URL of the ingest function", []any{"WebhookUrl", "Properties", "TargetFunctionArn"}, getAtt("IngestFunction", "Arn")},
		{"URL after its alias", []any{"WebhookUrl", "DependsOn"}, []any{"WebhookAlias"}},
		{"anyone may call the URL", []any{"WebhookUrlPublicAccess", "Properties"}, map[string]any{
			"Action": "lambda:InvokeFunctionUrl", "FunctionName": ref("WebhookAlias"), "Principal": "*", "FunctionUrlAuthType": "NONE"}},
		{"the alias may be invoked through its URL only", []any{"WebhookInvokeViaUrl", "Properties"}, map[string]any{
			"Action": "lambda:InvokeFunction", "FunctionName": ref("WebhookAlias"), "Principal": "*", "InvokedViaFunctionUrl": true}},
		{"the function reads the secret's parameter", []any{"IngestFunctionRole", "Properties", "Policies", 4}, map[string]any{"Fn::If": []any{
			"HasPublicWebhook",
			map[string]any{"PolicyName": "IngestFunctionWebhookSecret", "PolicyDocument": map[string]any{"Version": "2012-10-17",
				"Statement": []any{map[string]any{
					"Effect":   "Allow",
					"Action":   []any{"ssm:GetParameter"},
					"Resource": map[string]any{"Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${WebhookSecretParameter}"},
				}}}},
			ref("AWS::NoValue"),
		}}},
		{"no secret, no public webhook", []any{"..", "Conditions", "HasPublicWebhook"}, map[string]any{
			"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("WebhookSecretParameter"), ""}}}}},
		{"no secret by default", []any{"..", "Parameters", "WebhookSecretParameter", "Default"}, ""},
		{"SSM's longest parameter name", []any{"..", "Parameters", "WebhookSecretParameter", "MaxLength"}, float64(1011)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, path := res, tc.path
			if path[0] == ".." {
				root, path = doc, path[1:]
			}
			if got := get(t, root, path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
	for _, id := range []string{"WebhookAlias", "WebhookUrl", "WebhookUrlPublicAccess", "WebhookInvokeViaUrl"} {
		if got := get(t, res, id, "Condition"); got != "HasPublicWebhook" {
			t.Errorf("%s condition: got %v, want HasPublicWebhook", id, got)
		}
	}
	// Only the ingest function reads the secret.
	for _, fn := range []string{"DetectFunction", "MoveFunction", "ReplicasFunction", "SandboxFunction"} {
		if _, ok := get(t, res, fn, "Properties", "Environment", "Variables").(map[string]any)["SHARDWISE_WEBHOOK_SECRET_PARAM"]; ok {
			t.Errorf("%s is given the webhook secret's parameter", fn)
		}
	}

	pattern := regexp.MustCompile(get(t, doc, "Parameters", "WebhookSecretParameter", "AllowedPattern").(string))
	names := []struct {
		name  string
		value string
		valid bool
	}{
		{"empty", "", true},
		{"hierarchical", "/shardwise/prod/webhook-secret", true},
		{"top level", "/webhook_secret.v2", true},
		{"without the leading slash", "shardwise/webhook-secret", false},
		{"an ARN", "arn:aws:ssm:us-east-1:123456789012:parameter/shardwise", false},
		{"a space", "/shardwise/web hook", false},
	}
	for _, tc := range names {
		t.Run("parameter "+tc.name, func(t *testing.T) {
			if got := pattern.MatchString(tc.value); got != tc.valid {
				t.Errorf("%q accepted: got %v, want %v", tc.value, got, tc.valid)
			}
		})
	}
}
