package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

// busNameFor evaluates the template's EventBus name as CloudFormation does for a stack of that
// name with that EventBusName.
func busNameFor(t *testing.T, doc map[string]any, stack, busParam string) string {
	t.Helper()
	params := map[string]any{"AWS::StackName": stack, paramBus: busParam}
	name := get(t, doc, "Resources", busID, "Properties", "Name")
	choice, ok := name.(map[string]any)["Fn::If"].([]any)
	if !ok || len(choice) != 3 {
		t.Fatalf("EventBus Name: got %#v, want Fn::If on %s", name, condHasBusName)
	}
	cond := get(t, doc, "Conditions", choice[0].(string))
	branch := choice[2]
	if evalCFN(t, cond, params).(bool) {
		branch = choice[1]
	}
	s, ok := evalCFN(t, branch, params).(string)
	if !ok {
		t.Fatalf("EventBus Name for stack %s: got %#v, want a string", stack, evalCFN(t, branch, params))
	}
	return s
}

// TestBusNamePerStack: with EventBusName empty (the default) each stack gets a bus of its own,
// named after it, so that staging beside prod in one account and region do not collide; an
// explicit EventBusName is the bus's name. Every name either way is one EventBridge accepts.
func TestBusNamePerStack(t *testing.T) {
	doc := render(t, Options{})
	if got := get(t, doc, "Parameters", paramBus, "Default"); got != "" {
		t.Errorf("EventBusName default: got %q, want empty (the stack's own name)", got)
	}
	longest := "s" + strings.Repeat("-9", 127/2) // a stack name has 128 characters at most
	tests := []struct {
		stack, busParam, want string
	}{
		{"prod", "", "shardwise-prod"},
		{"staging", "", "shardwise-staging"},
		{"shardwise", "", "shardwise-shardwise"},
		{"default", "", "shardwise-default"},
		{longest, "", "shardwise-" + longest},
		{"prod", "shardwise", "shardwise"}, // a stack keeping the bus it had when the name was fixed
		{"staging", "staging.bus_1", "staging.bus_1"},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		t.Run(tc.stack+" "+tc.busParam, func(t *testing.T) {
			got := busNameFor(t, doc, tc.stack, tc.busParam)
			if got != tc.want {
				t.Fatalf("bus of stack %s with EventBusName %q: got %q, want %q", tc.stack, tc.busParam, got, tc.want)
			}
			if err := validBusName(got); err != nil {
				t.Errorf("bus name %q: %v", got, err)
			}
			if tc.busParam == "" {
				if other, ok := seen[got]; ok {
					t.Errorf("stacks %s and %s share the bus %s", other, tc.stack, got)
				}
				seen[got] = tc.stack
			}
		})
	}

	// Every other place naming the bus refers to the EventBus resource, so it follows the name:
	// the rules on the bus, the functions' SHARDWISE_BUS and their roles' PutEvents grants (its
	// Arn), the archive and the output.
	refs := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "Action" && reflect.DeepEqual(e, []any{"events:PutEvents"}) {
					// A role's PutEvents grant: on the EventBus resource's ARN.
					refs++
					if got := x["Resource"]; !reflect.DeepEqual(got, getAtt(busID, "Arn")) {
						t.Errorf("%s: PutEvents on %#v, want the EventBus's Arn", path, got)
					}
				}
				if (k == "EventBusName" && path != "Outputs") || k == "SHARDWISE_BUS" {
					refs++
					if !reflect.DeepEqual(e, ref(busID)) {
						t.Errorf("%s.%s: got %#v, want Ref %s", path, k, e, busID)
					}
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		case string:
			if x == defaultOptions.Description {
				return
			}
			if strings.Contains(x, "event-bus/") {
				t.Errorf("%s: %q names a bus by ARN rather than by the EventBus resource", path, x)
			}
		}
	}
	walk("Resources", doc["Resources"])
	walk("Outputs", doc["Outputs"])
	if got := get(t, doc, "Outputs", "EventBusName", "Value"); reflect.DeepEqual(got, ref(busID)) {
		refs++
	} else {
		t.Errorf("output EventBusName: got %#v, want Ref %s", got, busID)
	}
	// 5 functions' SHARDWISE_BUS and grants, the rules of 3 functions, the scale-up rule, the output.
	if refs < 5+5+3+1+1 {
		t.Errorf("%d places refer to the bus, want at least %d", refs, 15)
	}
	if got := get(t, doc, "Resources", archiveID, "Properties", "SourceArn"); !reflect.DeepEqual(got, getAtt(busID, "Arn")) {
		t.Errorf("archive source: got %#v, want the EventBus's Arn", got)
	}

	// The same explicit name comes from `shardwise template --bus-name` as the parameter's default.
	custom := render(t, Options{BusName: "shardwise-staging"})
	if got := get(t, custom, "Parameters", paramBus, "Default"); got != "shardwise-staging" {
		t.Errorf("EventBusName default with BusName set: got %v, want shardwise-staging", got)
	}
	if got := busNameFor(t, custom, "staging", "shardwise-staging"); got != "shardwise-staging" {
		t.Errorf("bus name with BusName set: got %q, want shardwise-staging", got)
	}
}

// TestBusNameParameterPattern: EventBusName's AllowedPattern, which CloudFormation checks before
// it creates anything, accepts the names validBusName (the --bus-name flag's check) accepts and
// refuses the others. The pattern has a lookahead, which Go's regexp lacks and CloudFormation's
// Java patterns have, so Python's re (which has it too, as cfn-lint reads it) evaluates it.
func TestBusNameParameterPattern(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to evaluate the lookahead pattern with")
	}
	pattern := get(t, render(t, Options{}), "Parameters", paramBus, "AllowedPattern").(string)
	names := []string{"", "shardwise", "shardwise-prod", "a.b-c_D9", strings.Repeat("b", 256), strings.Repeat("b", 257),
		"default", "defaults", "my-default", "a/b", "aws.partner/x", "shard wise", "bus*", "é"}
	raw, err := json.Marshal(map[string]any{"pattern": pattern, "names": names})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), python, "-c",
		"import json, re, sys\nd = json.load(sys.stdin)\nprint(json.dumps([re.fullmatch(d['pattern'], n) is not None for n in d['names']]))")
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var matched []bool
	if err := json.Unmarshal(out, &matched); err != nil || len(matched) != len(names) {
		t.Fatalf("python3 answered %q (%v)", out, err)
	}
	for i, name := range names {
		want := validBusName(name) == nil
		if matched[i] != want {
			t.Errorf("EventBusName %q: the parameter's pattern allows it %v, --bus-name %v", name, matched[i], want)
		}
	}
	for _, bad := range []string{"default", "a/b", strings.Repeat("b", 257)} {
		if validBusName(bad) == nil {
			t.Errorf("--bus-name %q: accepted, want refused", bad)
		}
	}
}

// TestBusNamePerStackOnMoto creates the template's EventBus, with its parameter and condition as
// rendered, in two stacks of different names in one account of moto's CloudFormation (staging
// beside prod): both complete, each with its own bus, named after it. A third stack given the first
// one's bus name by EventBusName fails, as the second stack failed when the name was fixed.
func TestBusNamePerStackOnMoto(t *testing.T) {
	if testing.Short() {
		t.Skip("creates stacks on moto's CloudFormation; -short leaves it out")
	}
	moto := dynamotest.Endpoint(t)
	doc := render(t, Options{})
	tmpl, err := json.Marshal(map[string]any{
		"Parameters": map[string]any{paramBus: get(t, doc, "Parameters", paramBus)},
		"Conditions": map[string]any{condHasBusName: get(t, doc, "Conditions", condHasBusName)},
		"Resources":  map[string]any{busID: get(t, doc, "Resources", busID)},
		"Outputs": map[string]any{
			"BusName": map[string]any{"Value": getAtt(busID, "Name")},
			"BusArn":  map[string]any{"Value": getAtt(busID, "Arn")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// An account of this run's own: moto keeps accounts apart, so runs never meet.
	account := fmt.Sprintf("%012d", time.Now().UnixNano()%1_000_000_000_000)
	run := strconv.FormatInt(time.Now().UnixNano()%1_000_000, 36)
	m := motoAccount{t: t, ctx: t.Context(), endpoint: moto, account: account}

	create := func(stack, busParam string) (status string, outputs map[string]string) {
		t.Helper()
		form := url.Values{"Action": {"CreateStack"}, "Version": {"2010-05-15"}, "StackName": {stack},
			"TemplateBody": {string(tmpl)}}
		if busParam != "" {
			form.Set("Parameters.member.1.ParameterKey", paramBus)
			form.Set("Parameters.member.1.ParameterValue", busParam)
		}
		if code, body := m.query("cloudformation", form); code != http.StatusOK {
			return fmt.Sprintf("CreateStack refused: HTTP %d %s", code, body), nil
		}
		t.Cleanup(func() {
			m := m
			m.ctx = context.Background() // t.Context() is done by now
			m.query("cloudformation", url.Values{"Action": {"DeleteStack"}, "Version": {"2010-05-15"}, "StackName": {stack}})
		})
		code, body := m.query("cloudformation", url.Values{"Action": {"DescribeStacks"}, "Version": {"2010-05-15"},
			"StackName": {stack}})
		if code != http.StatusOK {
			t.Fatalf("DescribeStacks %s: HTTP %d %s", stack, code, body)
		}
		var desc struct {
			Stacks []struct {
				StackStatus string `xml:"StackStatus"`
				Outputs     []struct {
					Key   string `xml:"OutputKey"`
					Value string `xml:"OutputValue"`
				} `xml:"Outputs>member"`
			} `xml:"DescribeStacksResult>Stacks>member"`
		}
		if err := xml.Unmarshal(body, &desc); err != nil || len(desc.Stacks) != 1 {
			t.Fatalf("DescribeStacks %s: %q (%v)", stack, body, err)
		}
		outputs = map[string]string{}
		for _, o := range desc.Stacks[0].Outputs {
			outputs[o.Key] = o.Value
		}
		return desc.Stacks[0].StackStatus, outputs
	}

	prod, staging := "prod-"+run, "staging-"+run
	buses := map[string]string{}
	for _, stack := range []string{prod, staging} {
		status, out := create(stack, "")
		if status != "CREATE_COMPLETE" {
			t.Fatalf("stack %s beside the others: %s, want CREATE_COMPLETE", stack, status)
		}
		if want := "shardwise-" + stack; out["BusName"] != want || !strings.HasSuffix(out["BusArn"], ":event-bus/"+want) {
			t.Errorf("stack %s: bus %q (%s), want %q", stack, out["BusName"], out["BusArn"], want)
		}
		buses[stack] = out["BusName"]
	}
	if buses[prod] == buses[staging] {
		t.Errorf("stacks %s and %s share the bus %s", prod, staging, buses[prod])
	}
	var listed struct{ EventBuses []struct{ Name string } }
	m.json("events", "AWSEvents.ListEventBuses", map[string]any{}, &listed)
	var names []string
	for _, b := range listed.EventBuses {
		names = append(names, b.Name)
	}
	for _, b := range buses {
		if !slices.Contains(names, b) {
			t.Errorf("bus %s is not among the account's buses %v", b, names)
		}
	}

	// The control: moto refuses a second bus of one name, so the stacks above would have failed
	// with a fixed name.
	if status, _ := create("other-"+run, buses[prod]); status == "CREATE_COMPLETE" {
		t.Errorf("a stack given stack %s's bus name %s: CREATE_COMPLETE, want a failure (the name is taken)", prod, buses[prod])
	}
}

// motoAccount calls moto's APIs as one account (moto's x-moto-account-id header).
type motoAccount struct {
	t                 *testing.T
	ctx               context.Context
	endpoint, account string
}

func (m motoAccount) do(service, contentType string, body []byte, header map[string]string) (int, []byte) {
	m.t.Helper()
	req, err := http.NewRequestWithContext(m.ctx, http.MethodPost, m.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/"+service+"/aws4_request, SignedHeaders=host, Signature=0")
	req.Header.Set("x-moto-account-id", m.account)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("%s: %v", service, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatalf("%s: read: %v", service, err)
	}
	return resp.StatusCode, out
}

// query calls a query-protocol API (CloudFormation) and returns the status and XML body.
func (m motoAccount) query(service string, form url.Values) (int, []byte) {
	m.t.Helper()
	return m.do(service, "application/x-www-form-urlencoded", []byte(form.Encode()), nil)
}

// json calls a JSON-protocol API (EventBridge) and decodes the answer into out.
func (m motoAccount) json(service, target string, in, out any) {
	m.t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		m.t.Fatal(err)
	}
	code, body := m.do(service, "application/x-amz-json-1.1", raw, map[string]string{"X-Amz-Target": target})
	if code != http.StatusOK {
		m.t.Fatalf("%s: HTTP %d %s", target, code, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		m.t.Fatalf("%s: decode %q: %v", target, body, err)
	}
}
