package deploy

import (
	"bytes"
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
