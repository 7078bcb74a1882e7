package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// domainEval evaluates what a template grants on OpenSearch as CloudFormation would with
// OpenSearchDomainArns set to arns: the slot conditions, Fn::If, Fn::Join, Fn::Select and Fn::Split
// over the parameter, and AWS::NoValue dropping an entry.
type domainEval struct {
	t    *testing.T
	arns []string
}

// noValue stands for AWS::NoValue: the list entry it is disappears.
var noValue = struct{}{}

func (e domainEval) value(v any) any {
	e.t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var out []any
		for _, item := range x {
			if r := e.value(item); r != noValue {
				out = append(out, r)
			}
		}
		return out
	case map[string]any:
		if len(x) != 1 {
			e.t.Fatalf("not an intrinsic: %#v", x)
		}
		for fn, arg := range x {
			args, _ := arg.([]any)
			switch fn {
			case "Ref":
				switch arg {
				case paramDomain:
					return strings.Join(e.arns, ",")
				case "AWS::NoValue":
					return noValue
				}
			case "Fn::If":
				if e.condition(args[0].(string)) {
					return e.value(args[1])
				}
				return e.value(args[2])
			case "Fn::Join":
				var parts []string
				for _, p := range e.value(args[1]).([]any) {
					parts = append(parts, p.(string))
				}
				return strings.Join(parts, args[0].(string))
			case "Fn::Split":
				var out []any
				for _, s := range strings.Split(e.value(args[1]).(string), args[0].(string)) {
					out = append(out, s)
				}
				return out
			case "Fn::Select":
				i, err := strconv.Atoi(args[0].(string))
				if err != nil {
					e.t.Fatal(err)
				}
				return e.value(args[1]).([]any)[i]
			}
		}
	}
	e.t.Fatalf("cannot evaluate %#v", v)
	return nil
}

func (e domainEval) condition(name string) bool {
	e.t.Helper()
	if name == condHasDomain {
		return len(e.arns) > 0
	}
	for i := range domainSlots {
		if name == condDomain(i) {
			return i < len(e.arns)
		}
	}
	e.t.Fatalf("condition %s is not a domain's", name)
	return false
}

// resources evaluates a statement's Resource into ARNs.
func (e domainEval) resources(v any) []string {
	e.t.Helper()
	var out []string
	switch r := e.value(v).(type) {
	case string:
		out = append(out, r)
	case []any:
		for _, s := range r {
			out = append(out, s.(string))
		}
	}
	return out
}

func testARN(name string) string { return "arn:aws:es:eu-west-1:123456789012:domain/" + name }

// TestDomainGrants checks every function's OpenSearch statements with one, three and as many
// domains as the slots: each path the function sends is granted on each domain, and on nothing else.
func TestDomainGrants(t *testing.T) {
	for _, n := range []int{1, 3, domainSlots} {
		t.Run(strconv.Itoa(n)+" domains", func(t *testing.T) {
			var arns []string
			for i := range n {
				arns = append(arns, testARN("domain-"+strconv.Itoa(i)))
			}
			e := domainEval{t: t, arns: arns}
			doc := render(t, Options{})
			for _, fn := range functions() {
				if len(fn.openSearch) == 0 {
					continue
				}
				for _, st := range openSearchGrants(t, doc, fn.name) {
					got := e.resources(st["Resource"])
					var paths []string
					for _, r := range fn.openSearch {
						if "es:ESHttp"+r.method[:1]+strings.ToLower(r.method[1:]) == st["Action"].([]any)[0] && !slices.Contains(paths, r.path) {
							paths = append(paths, r.path)
						}
					}
					var want []string
					for _, p := range paths {
						for _, arn := range arns {
							want = append(want, arn+"/"+p)
						}
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s %v: granted on %v, want %v", fn.name, st["Action"], got, want)
					}
				}
			}
		})
	}
}

// TestDomainPoliciesFitIAM renders each role's policies with domainSlots domains of the longest
// name and checks them against IAM's quota on a role's inline policies (10,240 characters, not
// counting white space).
func TestDomainPoliciesFitIAM(t *testing.T) {
	const iamInlineQuota = 10240
	var arns []string
	for i := range domainSlots {
		arns = append(arns, "arn:aws-us-gov:es:us-gov-west-1:123456789012:domain/"+fmt.Sprintf("d%d", i)+strings.Repeat("x", 26))
	}
	e := domainEval{t: t, arns: arns}
	doc := render(t, Options{})
	for _, fn := range functions() {
		var sts []any
		for _, st := range openSearchGrants(t, doc, fn.name) {
			sts = append(sts, map[string]any{"Effect": st["Effect"], "Action": st["Action"], "Resource": e.resources(st["Resource"])})
		}
		// The other statements: a DynamoDB table, the bus, the parameters; generously sized.
		const others = 1500
		doc, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": sts})
		if err != nil {
			t.Fatal(err)
		}
		if size := len(doc) + others; size > iamInlineQuota {
			t.Errorf("%s: %d characters of inline policy with %d domains, IAM takes %d", fn.name, size, domainSlots, iamInlineQuota)
		}
	}
}

func TestDomainsPattern(t *testing.T) {
	pattern := regexp.MustCompile(domainsPattern)
	var slots []string
	for i := range domainSlots {
		slots = append(slots, testARN("a-"+strconv.Itoa(i)))
	}
	full := strings.Join(slots, ",")
	tests := []struct {
		name  string
		value string
		valid bool
	}{
		{"empty", "", true},
		{"managed domain", testARN("prod-logs"), true},
		{"three domains", testARN("prod") + "," + testARN("logs") + "," + testARN("search"), true},
		{"as many as the slots", full, true},
		{"more than the slots", full + "," + testARN("a-x"), false},
		{"a space after the comma", testARN("prod") + ", " + testARN("logs"), false},
		{"an empty entry", testARN("prod") + ",," + testARN("logs"), false},
		// OpenSearch Serverless serves neither _nodes/stats nor _cluster/reroute.
		{"serverless collection", "arn:aws:aoss:us-east-1:123456789012:collection/abc123", false},
		{"GovCloud partition", "arn:aws-us-gov:es:us-gov-west-1:123456789012:domain/prod", true},
		{"domain path", testARN("prod") + "/*", false},
		{"other service", "arn:aws:s3:::bucket", false},
		{"short account", "arn:aws:es:eu-west-1:1234:domain/prod", false},
		{"domain name too short", testARN("ab"), false},
		{"endpoint instead of ARN", "https://search-prod.eu-west-1.es.amazonaws.com", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pattern.MatchString(tc.value); got != tc.valid {
				t.Errorf("%q accepted: got %v, want %v", tc.value, got, tc.valid)
			}
		})
	}
}

// openSearchGrants are the statements of fn's policies in the rendered template that grant
// es:ESHttp* actions.
func openSearchGrants(t *testing.T, doc map[string]any, fn string) []map[string]any {
	t.Helper()
	var out []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if actions, ok := x["Action"].([]any); ok {
				if len(actions) == 1 && strings.HasPrefix(fmt.Sprint(actions[0]), "es:ESHttp") {
					out = append(out, x)
				}
				return
			}
			// Into a policy's statements and both branches of a condition.
			for k, e := range x {
				if k == "PolicyDocument" || k == "Statement" || k == "Fn::If" {
					walk(e)
				}
			}
		}
	}
	walk(get(t, doc, "Resources", logicalID(fn)+"Role", "Properties", "Policies"))
	return out
}
