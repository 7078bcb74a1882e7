package deploy

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

// TestCloudFormationDeploy deploys template.yaml on moto server's CloudFormation, without Docker:
// scripts/cfn-deploy-check.py translates it with aws-sam-translator, creates the stack with the
// defaults and with every optional parameter set, and checks that every resource is created and
// every reference resolves, then compares the roles, rules, state machine, functions, alarms and
// the rest with the template (docs/deploy.md, "Deploying on moto", says what moto cannot check).
// A copy of the template with one broken reference must fail the same check.
//
// It needs .cache/venv (scripts/venv.sh, which `make deploy-test` runs first). Without it the test
// skips, except under CI=true, where a missing prerequisite fails.
func TestCloudFormationDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys the template on moto; -short leaves it out")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	python := venvPython(t, root)
	moto := dynamotest.Endpoint(t)
	check := func(t *testing.T, template string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), python, filepath.Join(root, "scripts", "cfn-deploy-check.py"),
			"--endpoint", moto, "--template", template)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	t.Run("template.yaml", func(t *testing.T) {
		out, err := check(t, filepath.Join(root, "template.yaml"))
		t.Log(out)
		if err != nil {
			t.Fatalf("deploy check failed: %v", err)
		}
	})

	t.Run("broken reference", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		const ref, broken = "Ref: AlertTopic\n", "Ref: AlertTopicMissing\n"
		if !bytes.Contains(raw, []byte(ref)) {
			t.Fatalf("template.yaml has no %q to break", strings.TrimSpace(ref))
		}
		path := filepath.Join(t.TempDir(), "template.yaml")
		if err := os.WriteFile(path, bytes.Replace(raw, []byte(ref), []byte(broken), 1), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := check(t, path)
		if err == nil {
			t.Fatalf("the check passed a template whose Ref names no resource:\n%s", out)
		}
		if !strings.Contains(out, "Ref names AlertTopicMissing, which is no resource") {
			t.Errorf("the failure does not name the broken reference:\n%s", out)
		}
	})
}

// venvPython is .cache/venv's python when it has aws-sam-translator, boto3 and moto; otherwise the
// test skips, or fails under CI=true.
func venvPython(t *testing.T, root string) string {
	t.Helper()
	python := filepath.Join(root, ".cache", "venv", "bin", "python")
	out, err := exec.CommandContext(t.Context(), python, "-c", "import samtranslator, boto3, moto").CombinedOutput()
	if err == nil {
		return python
	}
	msg := "no " + python + " with aws-sam-translator, boto3 and moto (" + strings.TrimSpace(string(out)) + err.Error() +
		"): run scripts/venv.sh, or make deploy-test"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestLocalStackServices checks that localstack/docker-compose.yml's SERVICES starts every AWS
// service the stack needs there: each of the template's resource types, each AWS SDK client the
// code imports, and what deploying takes (CloudFormation, and S3 for the packaged code).
func TestLocalStackServices(t *testing.T) {
	raw, err := os.ReadFile("../../localstack/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "SERVICES:"); ok {
			services = strings.Split(strings.TrimSpace(v), ",")
		}
	}
	started := map[string]bool{}
	for _, s := range services {
		started[strings.TrimSpace(s)] = true
	}
	if len(started) == 0 {
		t.Fatal("localstack/docker-compose.yml sets no SERVICES")
	}

	// LocalStack's name for each service, by CloudFormation type prefix and by SDK package.
	byType := map[string][]string{
		"AWS::Serverless::Function": {"lambda", "iam"}, "AWS::Serverless::StateMachine": {"stepfunctions", "iam"},
		"AWS::CloudWatch": {"cloudwatch"}, "AWS::DynamoDB": {"dynamodb"}, "AWS::Events": {"events"},
		"AWS::IAM": {"iam"}, "AWS::Lambda": {"lambda"}, "AWS::Logs": {"logs"}, "AWS::SNS": {"sns"},
		"AWS::SQS": {"sqs"}, "AWS::SSM": {"ssm"}, "AWS::StepFunctions": {"stepfunctions"}, "AWS::S3": {"s3"},
	}
	bySDK := map[string]string{"dynamodb": "dynamodb", "eventbridge": "events", "sqs": "sqs", "ssm": "ssm", "sts": "sts",
		"cloudwatch": "cloudwatch", "cloudwatchlogs": "logs", "sns": "sns", "lambda": "lambda", "sfn": "stepfunctions", "s3": "s3",
		"secretsmanager": "secretsmanager"}
	need := map[string]string{"cloudformation": "deploying the stack", "s3": "sam deploy's packaged code", "sts": "the SDK's credential checks"}

	for id, r := range render(t, Options{})["Resources"].(map[string]any) {
		typ := r.(map[string]any)["Type"].(string)
		names, ok := byType[typ]
		if !ok {
			parts := strings.Split(typ, "::")
			names, ok = byType[strings.Join(parts[:2], "::")]
		}
		if !ok {
			t.Errorf("%s: no LocalStack service known for %s; add it to this test and to SERVICES", id, typ)
		}
		for _, n := range names {
			need[n] = typ + " (" + id + ")"
		}
	}
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	err = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata" || d.Name() == "third_party") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			pkg, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), sdk)
			if !ok {
				continue
			}
			pkg, _, _ = strings.Cut(pkg, "/")
			n, ok := bySDK[pkg]
			if !ok {
				t.Errorf("%s imports the %s client: no LocalStack service known for it; add it here and to SERVICES", path, pkg)
				continue
			}
			need[n] = path + " (" + pkg + " client)"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for n, why := range need {
		if !started[n] {
			t.Errorf("SERVICES lacks %s, needed by %s", n, why)
		}
	}
}
