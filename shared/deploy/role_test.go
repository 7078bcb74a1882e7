package deploy

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// rolePolicies are the inline policies of a function's role in the shape of a SAM policy list
// ({"Statement": …}, under Fn::If where conditional), the DeadLetters policy apart: the checks of
// each function's grants read them so. It fails on a policy without its version or name.
func rolePolicies(t *testing.T, doc map[string]any, fn function) (policies []any, deadLetters any) {
	t.Helper()
	plain := func(p any) (string, any) {
		name, _ := get(t, p, "PolicyName").(string)
		if !strings.HasPrefix(name, logicalID(fn.name)) {
			t.Errorf("%s: policy name %q does not start with the function's", functionRoleID(fn), name)
		}
		if v := get(t, p, "PolicyDocument", "Version"); v != "2012-10-17" {
			t.Errorf("%s: policy %s version %v", functionRoleID(fn), name, v)
		}
		return strings.TrimPrefix(name, logicalID(fn.name)), map[string]any{"Statement": get(t, p, "PolicyDocument", "Statement")}
	}
	for _, p := range get(t, doc, "Resources", functionRoleID(fn), "Properties", "Policies").([]any) {
		if branches, ok := p.(map[string]any)["Fn::If"].([]any); ok {
			_, st := plain(branches[1])
			policies = append(policies, map[string]any{"Fn::If": []any{branches[0], st, branches[2]}})
			continue
		}
		name, st := plain(p)
		if name == "DeadLetters" {
			deadLetters = st
			continue
		}
		policies = append(policies, st)
	}
	return policies, deadLetters
}

// Every function runs as the role the template writes for it, not one SAM generates: SAM's
// translator attaches AWSLambdaVPCAccessExecutionRole to a generated role whenever VpcConfig is
// present, a condition's AWS::NoValue included. The role attaches it only under HasVpc, the
// VpcConfig's own condition: evaluated here for both, with the parameters' values.
func TestVpcPolicyOnlyWithVpc(t *testing.T) {
	doc := render(t, Options{})
	conditions := get(t, doc, "Conditions").(map[string]any)
	const (
		basic = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
		vpc   = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
	)
	tests := []struct {
		name    string
		subnets []any
		groups  []any
		want    []string
	}{
		{name: "no VPC", subnets: []any{""}, groups: []any{""}, want: []string{basic}},
		{name: "in a VPC", subnets: []any{"subnet-1", "subnet-2"}, groups: []any{"sg-1"}, want: []string{basic, vpc}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{paramVpcSubnets: tc.subnets, paramVpcSecGroups: tc.groups, "AWS::Partition": "aws"}
			hasVpc := evalCFN(t, conditions[condHasVpc], params).(bool)
			for _, fn := range functions() {
				res := get(t, doc, "Resources", logicalID(fn.name)).(map[string]any)
				props := res["Properties"].(map[string]any)
				if _, ok := props["Policies"]; ok {
					t.Errorf("%s: has SAM Policies, so SAM would generate its role", logicalID(fn.name))
				}
				if got, want := props["Role"], getAtt(functionRoleID(fn), "Arn"); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Role %#v, want %#v", logicalID(fn.name), got, want)
				}
				if got := get(t, doc, "Resources", functionRoleID(fn), "Type"); got != "AWS::IAM::Role" {
					t.Errorf("%s: type %v", functionRoleID(fn), got)
				}
				var got []string
				for _, arn := range get(t, doc, "Resources", functionRoleID(fn), "Properties", "ManagedPolicyArns").([]any) {
					if branches, ok := arn.(map[string]any)["Fn::If"].([]any); ok {
						if branches[0] != condHasVpc {
							t.Errorf("%s: managed policy under %v, want %s", functionRoleID(fn), branches[0], condHasVpc)
						}
						arn = branches[2]
						if hasVpc {
							arn = branches[1]
						}
						if reflect.DeepEqual(arn, ref("AWS::NoValue")) {
							continue
						}
					}
					got = append(got, evalCFN(t, arn, params).(string))
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: managed policies %v, want %v", functionRoleID(fn), got, tc.want)
				}
				// The function's VpcConfig is under the same condition.
				if c := get(t, props, "VpcConfig", "Fn::If", 0); c != condHasVpc {
					t.Errorf("%s: VpcConfig under %v, want %s", logicalID(fn.name), c, condHasVpc)
				}
			}
		})
	}
}
