package deploy

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/telemetry"
)

// emittedMetrics reads the Go code under shared/ (tests left out) and returns every metric it
// emits, as "Name{Dim1,Dim2}" with the dimension names sorted: each call of the engine's
// metric(cluster, "Name", …), which adds the Cluster dimension, and each Metrics.Add("Name", unit,
// value, dimensions…) with its telemetry.Dimension{Name: …} literals. Names and dimensions given
// as telemetry constants are resolved from that package's source.
func emittedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	root := ".." // shared/
	fset := token.NewFileSet()
	var files []*ast.File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The string constants of package telemetry, by name.
	consts := map[string]string{}
	for _, f := range files {
		if f.Name.Name != "telemetry" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	str := func(e ast.Expr) (string, bool) {
		switch x := e.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				s, err := strconv.Unquote(x.Value)
				return s, err == nil
			}
		case *ast.SelectorExpr:
			if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "telemetry" {
				s, ok := consts[x.Sel.Name]
				return s, ok
			}
		case *ast.Ident:
			s, ok := consts[x.Name] // inside package telemetry
			return s, ok
		}
		return "", false
	}
	out := map[string]bool{}
	add := func(name string, dims []string) {
		slices.Sort(dims)
		out[name+"{"+strings.Join(dims, ",")+"}"] = true
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch {
			case sel.Sel.Name == "metric" && len(call.Args) == 4:
				if name, ok := str(call.Args[1]); ok {
					add(name, []string{telemetry.DimensionCluster})
				}
			case sel.Sel.Name == "Add" && len(call.Args) >= 3:
				recv, ok := sel.X.(*ast.SelectorExpr)
				if !ok || recv.Sel.Name != "Metrics" {
					return true
				}
				name, ok := str(call.Args[0])
				if !ok {
					return true
				}
				var dims []string
				for _, a := range call.Args[3:] {
					lit, ok := a.(*ast.CompositeLit)
					if !ok {
						continue
					}
					for _, el := range lit.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
								if d, ok := str(kv.Value); ok {
									dims = append(dims, d)
								}
							}
						}
					}
				}
				add(name, dims)
			}
			return true
		})
	}
	return out
}

// searchPattern is a dashboard SEARCH: {namespace,Dim1,…} MetricName="Name".
var searchPattern = regexp.MustCompile(`^SEARCH\('\{([^}]*)\} MetricName="([^"]+)"', '[A-Za-z]+', [0-9]+\)$`)

// TestDashboardMetricsAreEmitted reads the dashboard of template.yaml's generator and checks that
// every graph's metric, with its namespace and dimension set, is one the code emits: a metric
// renamed in the engine, or a dimension added to it, would leave an empty graph.
func TestDashboardMetricsAreEmitted(t *testing.T) {
	emitted := emittedMetrics(t)
	// The scan finds the engine's metrics at all.
	for _, m := range []string{"HotNodes{Cluster}", "IngestSeconds{Cluster}", "WriteQueueLatency{Cluster}", "ScaleUpNeeded{Bound,Cluster}"} {
		if !emitted[m] {
			t.Fatalf("the code scan does not find %s; found %v", m, slices.Sorted(maps.Keys(emitted)))
		}
	}

	doc := render(t, Options{})
	body := get(t, doc, "Resources", dashboardID, "Properties", "DashboardBody", "Fn::Sub").(string)
	// The threshold line's value is a number once Fn::Sub has put the parameter in.
	body = strings.ReplaceAll(body, "${"+paramLatencyThreshold+"}", "3")
	var board struct {
		Widgets []struct {
			Properties struct {
				Title       string  `json:"title"`
				Region      string  `json:"region"`
				Metrics     [][]any `json:"metrics"`
				Annotations struct {
					Horizontal []struct {
						Value float64 `json:"value"`
					} `json:"horizontal"`
				} `json:"annotations"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &board); err != nil {
		t.Fatalf("dashboard body: %v\n%s", err, body)
	}
	var shown []string
	for _, w := range board.Widgets {
		p := w.Properties
		if p.Region != "${AWS::Region}" {
			t.Errorf("%s: region %q, want the stack's", p.Title, p.Region)
		}
		if len(p.Metrics) == 0 {
			t.Errorf("%s: no metric", p.Title)
		}
		for _, line := range p.Metrics {
			expr, _ := line[0].(map[string]any)["expression"].(string)
			m := searchPattern.FindStringSubmatch(expr)
			if m == nil {
				t.Errorf("%s: expression %q is not a SEARCH of one metric", p.Title, expr)
				continue
			}
			schema := strings.Split(m[1], ",")
			if schema[0] != telemetry.Namespace {
				t.Errorf("%s: namespace %q, want %q", p.Title, schema[0], telemetry.Namespace)
			}
			dims := slices.Clone(schema[1:])
			slices.Sort(dims)
			key := m[2] + "{" + strings.Join(dims, ",") + "}"
			if !emitted[key] {
				t.Errorf("%s: %s is not a metric the code emits (it emits %v)", p.Title, key, slices.Sorted(maps.Keys(emitted)))
			}
			shown = append(shown, m[2])
		}
	}
	// What the dashboard is for: per cluster, hot nodes, the queue latency estimate per node,
	// moves, replica changes, scale-up signals and breaker refusals.
	for _, want := range []string{"HotNodes", telemetry.MetricWriteQueueLatency, "MovesPlanned", "MovesExecuted", "ReplicaChanges", "ScaleUpNeeded", "BreakerOpen"} {
		if !slices.Contains(shown, want) {
			t.Errorf("the dashboard does not show %s (it shows %v)", want, shown)
		}
	}
}
