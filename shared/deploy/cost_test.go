package deploy

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// costMarkers enclose the generated cost table in docs/deploy.md.
const (
	costBegin = "<!-- cost table: go run ./cmd/costtable -->\n"
	costEnd   = "<!-- end of the cost table -->\n"
)

// TestCostTableCurrent measures the cost scenario again and fails when docs/deploy.md's table is
// not what `go run ./cmd/costtable` prints now: a change to what the functions write, publish or
// log, or to the template's settings, shows as a stale table. SHARDWISE_UPDATE_COST=1 rewrites it.
func TestCostTableCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the cost scenario through the functions (about a minute); -short leaves it out")
	}
	m, err := Measure(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if m.WriteUnits == 0 || m.ReadUnits == 0 || len(m.Series) == 0 || m.LogBytes == 0 || m.Copies != 2000 {
		t.Fatalf("measurement %+v: want writes, reads, metrics and logs of a 2,000-copy cluster", m)
	}
	want := CostTable(m, ListPrices, DefaultAssumptions)
	const path = "../../docs/deploy.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok := strings.Cut(doc, costBegin)
	got, after, ok2 := strings.Cut(rest, costEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/deploy.md has no %q ... %q section", costBegin, costEnd)
	}
	if os.Getenv("SHARDWISE_UPDATE_COST") == "1" {
		if err := os.WriteFile(path, []byte(before+costBegin+"\n"+want+"\n"+costEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("docs/deploy.md's cost table is stale: run SHARDWISE_UPDATE_COST=1 go test -run TestCostTableCurrent ./shared/deploy/\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// The table's figures follow from its lines: the 1, 20 and 100 rows are the stack's fixed part
// shared out plus the per-cluster part.
func TestCostTableArithmetic(t *testing.T) {
	m := Measured{Scenario: "s", Nodes: 10, Copies: 2000, Cycles: 60, WriteUnits: 10, ReadUnits: 10, LogBytes: 100,
		Series: []string{"a", "b"}, Datapoints: 2}
	lines := costLines(m, ListPrices, DefaultAssumptions)
	var stack, cluster float64
	for _, l := range lines {
		stack += l.perStack
		cluster += l.perCluster
	}
	table := CostTable(m, ListPrices, DefaultAssumptions)
	for _, n := range []int{1, 20, 100} {
		row := "| " + strconv.Itoa(n) + " | " + dollars(stack+float64(n)*cluster) + " | " + dollars((stack+float64(n)*cluster)/float64(n)) + " |"
		if !strings.Contains(table, row) {
			t.Errorf("table lacks %q:\n%s", row, table)
		}
	}
	// Two custom metrics at $0.30.
	if !strings.Contains(table, "| Custom metrics | 2 series for this cluster (10 nodes), measured | - | $0.60 |") {
		t.Errorf("custom metrics line wrong:\n%s", table)
	}
}
