package deploy

import (
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/iam"
)

// Each function's IAM role, written out rather than left to SAM: SAM's translator attaches
// AWSLambdaVPCAccessExecutionRole (creating and deleting network interfaces) to a role it
// generates whenever the function has a VpcConfig property, even one a condition turns into
// AWS::NoValue. Here that policy is attached under the VpcConfig's own condition, HasVpc, so a
// stack outside a VPC grants no network-interface actions.

// rolePolicy is one inline policy of a function's role: its statements, under cond when set.
type rolePolicy struct {
	name, cond string
	statements []any
}

// functionRoleID is the role's logical ID, the one SAM gives a role it generates.
func functionRoleID(fn function) string { return logicalID(fn.name) + "Role" }

// Managed policies: Lambda's basic execution (the function's log lines), and with a VPC the
// network interfaces a function in a VPC needs.
const (
	basicExecutionPolicy = "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
	vpcAccessPolicy      = "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
)

// functionRole is fn's role: Lambda may assume it; iamPolicies(fn) are its inline policies, and
// a function with triggers may also send its failed events to the dead-letter queue (its
// EventInvokeConfig's destination, which SAM grants only on roles it generates).
func functionRole(fn function) withProperties {
	policies := iamPolicies(fn)
	if len(fn.triggers) > 0 {
		policies = append(policies, rolePolicy{name: "DeadLetters", statements: []any{map[string]any{
			"Effect":   "Allow",
			"Action":   []string{"sqs:SendMessage"},
			"Resource": cloudformation.GetAtt(dlqID, "Arn"),
		}}})
	}
	var inline []any
	for _, p := range policies {
		doc := map[string]any{
			"PolicyName":     logicalID(fn.name) + p.name,
			"PolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": p.statements},
		}
		if p.cond == "" {
			inline = append(inline, doc)
			continue
		}
		inline = append(inline, cloudformation.If(p.cond, doc, cloudformation.Ref("AWS::NoValue")))
	}
	return withProperties{
		Resource: &iam.Role{
			AssumeRolePolicyDocument: map[string]any{
				"Version": "2012-10-17",
				"Statement": []any{map[string]any{
					"Effect":    "Allow",
					"Principal": map[string]any{"Service": []string{"lambda.amazonaws.com"}},
					"Action":    []string{"sts:AssumeRole"},
				}},
			},
		},
		extra: map[string]any{
			"ManagedPolicyArns": []any{
				cloudformation.Sub(basicExecutionPolicy),
				cloudformation.If(condHasVpc, cloudformation.Sub(vpcAccessPolicy), cloudformation.Ref("AWS::NoValue")),
			},
			"Policies": inline,
		},
	}
}
