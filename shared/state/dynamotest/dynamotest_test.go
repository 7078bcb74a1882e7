package dynamotest_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// TestMotoRequirementMatchesScripts keeps the tests' moto the one scripts/moto.sh and CI run.
func TestMotoRequirementMatchesScripts(t *testing.T) {
	reqs, err := os.ReadFile("../../../scripts/python-requirements.txt")
	if err != nil {
		t.Fatal(err)
	}
	var pins []string
	for line := range strings.Lines(string(reqs)) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "moto") {
			pins = append(pins, line)
		}
	}
	if !slices.Equal(pins, []string{dynamotest.MotoRequirement}) {
		t.Fatalf("scripts/python-requirements.txt pins moto as %q, want [%q]", pins, dynamotest.MotoRequirement)
	}
}

func TestEndpoint(t *testing.T) {
	tests := []struct {
		name string
		env  string
		want string // "" means a server this binary started
	}{
		{name: "environment names a server", env: "http://127.0.0.1:4566", want: "http://127.0.0.1:4566"},
		{name: "started here when unset", env: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(dynamotest.EndpointEnv, tc.env)
			got := dynamotest.Endpoint(t)
			if tc.want != "" {
				if got != tc.want {
					t.Fatalf("Endpoint: got %q, want %q", got, tc.want)
				}
				return
			}
			if !strings.HasPrefix(got, "http://127.0.0.1:") {
				t.Fatalf("Endpoint: got %q, want a server on http://127.0.0.1", got)
			}
			client := dynamotest.Client(t, got)
			name := dynamotest.NewTable(t, client)
			out, err := client.ListTables(t.Context(), &dynamodb.ListTablesInput{})
			if err != nil {
				t.Fatalf("ListTables: %v", err)
			}
			if !slices.Contains(out.TableNames, name) {
				t.Fatalf("ListTables: got %q, want it to hold %q", out.TableNames, name)
			}
		})
	}
}
