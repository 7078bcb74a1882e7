//go:build linux

package functions_test

import (
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

// envJSONCluster is the OpenSearch URL events/env.json gives every cluster: the host's, reached
// from the function's container with --docker-network host.
const envJSONCluster = "http://localhost:9200"

// sampleRuns lists, in the order they run, every sample event of events/ and the functions it is
// for (the Lambda logical IDs of template.yaml, as `sam local invoke` names them).
var sampleRuns = []struct {
	file      string
	functions []string
}{
	{"cadence-ingest.json", []string{"IngestFunction"}},
	{"schedule.json", []string{"IngestFunction"}},
	{"invoke.json", []string{"IngestFunction"}},
	{"stats-ingested.json", []string{"DetectFunction", "ReplicasFunction", "SandboxFunction"}},
	{"alarm.json", []string{"DetectFunction"}},
	{"alarm-write-queue-latency.json", []string{"DetectFunction"}},
	{"moves-planned.json", []string{"MoveFunction"}},
	{"webhook-nodes-stats.json", []string{"IngestFunction"}},
	{"webhook-alertmanager.json", []string{"IngestFunction"}},
	{"webhook-alarm.json", []string{"IngestFunction"}},
}

// documentedInvoke matches the local invocations the docs give: `sam local invoke <Function>
// --event events/<file>` and `aws lambda invoke ... --function-name <Function> ... --payload
// file://events/<file>` (continuation lines joined).
var (
	samInvoke = regexp.MustCompile(`sam local invoke (\w+)\s+(?:--event|-e) (events/[\w.-]+\.json)`)
	cliInvoke = regexp.MustCompile(`aws lambda invoke .*--function-name (\w+) .*--payload file://(events/[\w.-]+\.json)`)
)

// TestSampleEventsWithEnvJSON runs every sample event of events/ through the emulator as `sam
// local invoke --env-vars events/env.json` would: each function with env.json's variables for it,
// only the OpenSearch URL, the table and the bus pointed at the simulator and moto. The events
// name the clusters env.json configures, so none fails with "unknown cluster"; every local
// invocation README.md and docs/ give is among these runs.
func TestSampleEventsWithEnvJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and invokes the Lambda binaries through the Runtime Interface Emulator; -short leaves it out")
	}
	root := moduleRoot(t)

	t.Run("every sample event runs", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(root, "events", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for _, f := range files {
			if name := filepath.Base(f); name != "env.json" {
				have = append(have, name)
			}
		}
		var run []string
		for _, r := range sampleRuns {
			run = append(run, r.file)
		}
		slices.Sort(run)
		if !slices.Equal(have, run) {
			t.Errorf("events/ holds %v, the runs cover %v", have, run)
		}
	})
	t.Run("every documented invocation runs", func(t *testing.T) {
		documented := documentedInvocations(t, root)
		if len(documented) == 0 {
			t.Fatal("no `sam local invoke` in README.md or docs/: the pattern no longer matches")
		}
		for _, d := range documented {
			covered := false
			for _, r := range sampleRuns {
				covered = covered || "events/"+r.file == d[1] && slices.Contains(r.functions, d[0])
			}
			if !covered {
				t.Errorf("%s with %s is documented but not run here", d[0], d[1])
			}
		}
	})

	envs := readEnvJSON(t, root)
	built := startBuilds(t, root)
	motoURL := dynamotest.Endpoint(t)
	ddb := dynamotest.Client(t, motoURL)
	table := dynamotest.NewTable(t, ddb)
	store := state.NewDynamo(ddb, table, time.Now)
	rec := newBusRecorder(t, motoURL)
	bins := built.wait(t)

	sc, err := sim.LoadScenario(filepath.Join(root, scenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	fns := map[string]*function{}
	for id, vars := range envs {
		env := maps.Clone(vars)
		clusters, ok := strings.CutSuffix(env["SHARDWISE_CLUSTERS"], "="+envJSONCluster)
		if !ok || strings.Contains(clusters, ",") {
			t.Fatalf("env.json %s: SHARDWISE_CLUSTERS %q, want one name=%s", id, env["SHARDWISE_CLUSTERS"], envJSONCluster)
		}
		if clusters != clusterName {
			t.Errorf("env.json %s configures cluster %q; the sample events name %q", id, clusters, clusterName)
		}
		// What `sam local` cannot point elsewhere (docs/deploy.md): the table and bus of your
		// account, here moto's; the cluster, here the simulator.
		env["SHARDWISE_CLUSTERS"] = clusters + "=" + srv.URL
		env["SHARDWISE_TABLE"], env["SHARDWISE_BUS"] = table, rec.bus
		maps.Copy(env, map[string]string{
			"AWS_REGION": region, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
			"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL_DYNAMODB": motoURL, "AWS_ENDPOINT_URL_EVENTBRIDGE": motoURL,
			"AWS_ENDPOINT_URL_SSM": motoURL, "AWS_LAMBDA_FUNCTION_TIMEOUT": strconv.Itoa(functionTimeout),
		})
		name := strings.ToLower(strings.TrimSuffix(id, "Function"))
		fns[id] = startFunction(t, bins.rie, bins.functions[name], name, env)
	}
	if got := slices.Sorted(maps.Keys(fns)); len(got) != len(functionNames) {
		t.Fatalf("env.json configures %v, want the %d functions", got, len(functionNames))
	}

	for _, r := range sampleRuns {
		payload := readEvent(t, root, r.file)
		if r.file == "stats-ingested.json" {
			seedSampleSnapshot(t, store, payload)
		}
		for _, id := range r.functions {
			t.Run(id+" "+r.file, func(t *testing.T) {
				status, body, err := fns[id].invoke(t, payload)
				if err != nil {
					t.Fatal(err)
				}
				if fe, isErr := functionError(body); status != 200 || isErr {
					t.Fatalf("got HTTP %d, function error %+v: %s", status, fe, body)
				}
				if strings.Contains(string(body), engine.ErrUnknownCluster.Error()) {
					t.Errorf("answer names an unknown cluster: %s", body)
				}
			})
		}
	}
	rec.drain(t, 0)
}

// seedSampleSnapshot stores the latest snapshot again under the key events/stats-ingested.json
// names, as the ingest that published that event would have: detect, replicas and sandbox plan
// and read a stored snapshot, never the event's summary.
func seedSampleSnapshot(t *testing.T, store state.Store, payload []byte) {
	t.Helper()
	var ev struct {
		Detail bus.StatsIngested `json:"detail"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	latest, err := snapshots.Latest(t.Context(), store, ev.Detail.Cluster)
	if err != nil {
		t.Fatalf("no snapshot of %s after the ingest samples: %v", ev.Detail.Cluster, err)
	}
	snap, ctrs, err := snapshots.Load(t.Context(), store, ev.Detail.Cluster, latest)
	if err != nil {
		t.Fatal(err)
	}
	snap.At = ev.Detail.At
	ctrs.At = ev.Detail.At
	key, err := snapshots.Save(t.Context(), store, snap, *ctrs, nil, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if key != ev.Detail.SnapshotKey {
		t.Fatalf("seeded %s, the event names %s", key, ev.Detail.SnapshotKey)
	}
}

// readEnvJSON reads events/env.json: each function's variables by logical ID.
func readEnvJSON(t *testing.T, root string) map[string]map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "events", "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var envs map[string]map[string]string
	if err := json.Unmarshal(raw, &envs); err != nil {
		t.Fatalf("events/env.json: %v", err)
	}
	return envs
}

// documentedInvocations lists the (function, event file) pairs of every local invocation in
// README.md and docs/*.md.
func documentedInvocations(t *testing.T, root string) [][2]string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, p := range append(docs, filepath.Join(root, "README.md")) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "\\\n", " ")
		for line := range strings.Lines(text) {
			for _, re := range []*regexp.Regexp{samInvoke, cliInvoke} {
				if m := re.FindStringSubmatch(line); m != nil {
					out = append(out, [2]string{m[1], m[2]})
				}
			}
		}
	}
	return out
}
