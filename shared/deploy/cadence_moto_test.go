package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

// TestCadenceRuns executes the generated state machine in moto's Step Functions interpreter. moto
// cannot invoke a Lambda without Docker, so each iteration's ingest task is swapped for an SQS
// GetQueueUrl of the cluster's name: a cluster with a queue succeeds, one without fails. The rest
// of the definition runs as generated: the cluster names from name=url pairs or from the
// configuration document in SSM, the Map per pass, the Catches and the final outcome.
func TestCadenceRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the state machine in moto's Step Functions interpreter; -short leaves it out")
	}
	moto := dynamotest.Endpoint(t)
	aws := func(target, version string, body any) map[string]any {
		t.Helper()
		return awsJSON(t, moto, target, version, body)
	}
	post(t, moto+"/moto-api/config", map[string]any{"stepfunctions": map[string]any{"execute_state_machine": true}})
	// The interpreter is a server-wide switch, and with it on moto serves Step Functions from
	// another backend, in which the state machines other tests create (TestCloudFormationDeploy's,
	// through CloudFormation) do not exist: switch it back off.
	t.Cleanup(func() {
		postCtx(context.Background(), t, moto+"/moto-api/config", map[string]any{"stepfunctions": map[string]any{"execute_state_machine": false}})
	})

	run := fmt.Sprintf("%d", time.Now().UnixNano())
	good := []string{"cadence-a-" + run, "cadence-b-" + run}
	for _, q := range good {
		aws("AmazonSQS.CreateQueue", "1.0", map[string]any{"QueueName": q})
	}
	param := "/shardwise-test/" + run
	doc, err := json.Marshal(map[string]any{"clusters": []any{
		map[string]any{"name": good[0], "urls": []string{"https://a.example"}},
		map[string]any{"name": good[1], "urls": []string{"https://b.example"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	aws("AmazonSSM.PutParameter", "1.1", map[string]any{"Name": param, "Type": "String", "Value": string(doc)})

	tests := []struct {
		name       string
		endpoints  string
		wantStatus string
		// The tasks' outcomes, each pass counting apart.
		wantSucceeded int
		wantFailed    int
	}{
		{"pairs", good[0] + "=https://a.example:443, " + good[1] + "=https://b.example", "SUCCEEDED", 4, 0},
		{"one cluster failing", good[0] + "=https://a.example,missing-" + run + "=https://c.example," + good[1] + "=https://b.example", "FAILED", 4, 2},
		// The document is read by one more task, the SSM GetParameter.
		{"configuration document", "", "SUCCEEDED", 5, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := cadenceDefinitionForMoto(t, tc.endpoints, param)
			sm := aws("AWSStepFunctions.CreateStateMachine", "1.0", map[string]any{
				"name": fmt.Sprintf("cadence-%s-%d", run, i), "definition": def,
				"roleArn": "arn:aws:iam::123456789012:role/cadence", "type": "STANDARD",
			})
			ex := aws("AWSStepFunctions.StartExecution", "1.0", map[string]any{"stateMachineArn": sm["stateMachineArn"], "input": "{}"})
			var status string
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if status = aws("AWSStepFunctions.DescribeExecution", "1.0", map[string]any{"executionArn": ex["executionArn"]})["status"].(string); status != "RUNNING" {
					break
				}
			}
			if status != tc.wantStatus {
				t.Errorf("status: got %s, want %s", status, tc.wantStatus)
			}
			history := aws("AWSStepFunctions.GetExecutionHistory", "1.0", map[string]any{"executionArn": ex["executionArn"], "maxResults": 1000})
			counts := map[string]int{}
			entered := map[string]bool{}
			for _, e := range history["events"].([]any) {
				ev := e.(map[string]any)
				counts[ev["type"].(string)]++
				if d, ok := ev["stateEnteredEventDetails"].(map[string]any); ok {
					entered[d["name"].(string)] = true
				}
			}
			// A failed cluster is caught in its iteration, so the Map itself never fails.
			for _, pass := range []string{"Now", "Later"} {
				if entered[pass+"MapFailed"] {
					t.Errorf("%s's Map failed: a cluster's failure escaped its iteration's Catch", pass)
				}
				if got, want := entered[pass+"Failed"], tc.wantFailed > 0; got != want {
					t.Errorf("%s: iteration's failure state entered %v, want %v", pass, got, want)
				}
			}
			if counts["TaskSucceeded"] != tc.wantSucceeded || counts["TaskFailed"] != tc.wantFailed {
				t.Errorf("tasks: got %d succeeded and %d failed, want %d and %d",
					counts["TaskSucceeded"], counts["TaskFailed"], tc.wantSucceeded, tc.wantFailed)
			}
		})
	}
}

// cadenceDefinitionForMoto is the generated definition with its substitutions made, the wait
// shortened to a second and every Lambda task swapped for an SQS call moto can make.
func cadenceDefinitionForMoto(t *testing.T, endpoints, param string) string {
	t.Helper()
	doc := render(t, Options{})
	raw, err := json.Marshal(get(t, doc, "Resources", "IngestCadence", "Properties", "Definition"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("${ClusterEndpoints}", endpoints, "${ConfigParameterName}", param).Replace(string(raw))
	var def map[string]any
	if err := json.Unmarshal([]byte(s), &def); err != nil {
		t.Fatal(err)
	}
	get(t, def, "States", "Cadence", "Branches", 1, "States", "WaitHalfCycle").(map[string]any)["Seconds"] = 1
	swapped := 0
	var swap func(v any)
	swap = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["Resource"] == "arn:aws:states:::lambda:invoke" {
				v["Resource"] = "arn:aws:states:::aws-sdk:sqs:getQueueUrl"
				v["Parameters"] = map[string]any{"QueueName.$": "$.cluster"}
				swapped++
			}
			for _, e := range v {
				swap(e)
			}
		case []any:
			for _, e := range v {
				swap(e)
			}
		}
	}
	swap(def)
	if swapped != 2 {
		t.Fatalf("swapped %d Lambda tasks, want 2 (one per pass)", swapped)
	}
	out, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// awsJSON calls an AWS JSON-protocol API on moto, which checks no signature.
func awsJSON(t *testing.T, endpoint, target, version string, body any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint+"/", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", "application/x-amz-json-"+version)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/"+service(target)+"/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: got HTTP %d: %s", target, resp.StatusCode, out)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%s: decode %q: %v", target, out, err)
	}
	return doc
}

// service is the signing name moto routes a JSON-protocol target by.
func service(target string) string {
	switch {
	case strings.HasPrefix(target, "AmazonSQS."):
		return "sqs"
	case strings.HasPrefix(target, "AmazonSSM."):
		return "ssm"
	default:
		return "states"
	}
}

func post(t *testing.T, url string, body any) {
	t.Helper()
	postCtx(t.Context(), t, url, body)
}

// postCtx is post within ctx: a cleanup's, since t.Context is cancelled before cleanups run.
func postCtx(ctx context.Context, t *testing.T, url string, body any) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: got HTTP %d", url, resp.StatusCode)
	}
}
