//go:build linux

// Package functions_test invokes the real Lambda binaries — functions/*/main.go built as bootstrap
// for provided.al2023, for the host's architecture — through the AWS Lambda Runtime Interface
// Emulator with the sample events of events/*.json, against moto (DynamoDB, EventBridge, SQS, SSM)
// and the simulator over HTTP. It is what tests the wiring in main.go and shared/handler.Env:
// configuration from the environment, AWS clients from the default chain and the
// AWS_ENDPOINT_URL_* variables, and the payloads Lambda hands a function.
//
// The emulator runs only on Linux, hence the build constraint; -short leaves the test out.
package functions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/handler"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
	"github.com/shardwise/shardwise/shared/webhook"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

const (
	// The emulator is built from source with `go install`. The module proxy serves this
	// pseudo-version of it; its tagged releases (v1.23.0) are not served.
	rieModule  = "github.com/aws/aws-lambda-runtime-interface-emulator"
	riePackage = rieModule + "/cmd/aws-lambda-rie"
	// The Makefile's RIE_VERSION is the same (TestRIEVersionMatchesMakefile).
	rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"
	// rieBin is where the emulator is kept between runs, under the module root; .cache/ is
	// git-ignored.
	rieBin = ".cache/bin/aws-lambda-rie"

	// clusterName is the cluster events/invoke.json names; SHARDWISE_CLUSTERS points it at the
	// simulator.
	clusterName = "prod"
	region      = dynamotest.Region
	// scenarioFile: the write-hotspot scenario's clicks index jumps from 4 to 13 WRITE threads at
	// 600 s and saturates node-0 and node-1.
	scenarioFile = "scenarios/write-hotspot.json"
	// warmupTicks steps the simulator to 660 s, two ticks past the jump, before the first ingest,
	// so the WRITE queues have started to grow.
	warmupTicks = 22

	// functionTimeout is AWS_LAMBDA_FUNCTION_TIMEOUT, in seconds: each invocation here takes well
	// under one; the emulator's default is 300.
	functionTimeout = 60
	// invokeTimeout bounds one HTTP invocation: the function's timeout plus the emulator's own
	// start of the runtime.
	invokeTimeout = (functionTimeout + 30) * time.Second
	// buildTimeout bounds building the five functions and the emulator on a cold cache: about a
	// minute each on 2 cores, and over 5 minutes in all with the other core busy and the race
	// detector's tests beside it. A hung build still fails, just later.
	buildTimeout = 15 * time.Minute
	// readyTimeout bounds the emulator's start until it accepts connections (milliseconds here).
	readyTimeout = 10 * time.Second
	// stopTimeout bounds the wait for an emulator and its runtime to exit once told to stop.
	stopTimeout = 10 * time.Second
)

// functionNames are the Lambdas under functions/, as the Makefile's FUNCTIONS lists them.
var functionNames = []string{"ingest", "detect", "move", "replicas", "sandbox"}

// sandboxDefinitions gives the sandbox function one RFC sandbox, so that it lists the
// simulator's search tasks and evaluates them instead of returning at once.
const sandboxDefinitions = `{"sandbox":{"definitions":{"sandboxes":[` +
	`{"name":"clicks-readers","attributes":{"indices_name":"clicks"},"resources":{"cpu":{"allocation":0.3}},"enforcement":"soft"}]}}}`

// TestLambdaRIE runs the five functions as Lambda would, through the emulator, and follows one
// write hotspot from the schedule to an executed move: ingest three samples 30 s apart, detect on
// each "Stats Ingested", then a CloudWatch alarm a tick later on which detect ingests and plans a
// fresh sample itself, replicas and sandbox on that sample, move on the alarm plan's "Moves
// Planned" event as the bus delivered it; then the metrics webhook's Function URL payloads, and functions that must
// refuse to start or refuse an event.
func TestLambdaRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and invokes the five Lambda binaries through the Runtime Interface Emulator (about 70 s on a warm build cache); -short leaves it out")
	}
	root := moduleRoot(t)
	built := startBuilds(t, root)

	motoURL := dynamotest.Endpoint(t)
	ddb := dynamotest.Client(t, motoURL)
	table := dynamotest.NewTable(t, ddb)
	store := state.NewDynamo(ddb, table, time.Now)
	rec := newBusRecorder(t, motoURL)
	secret := []byte(rand.Text() + rand.Text()) // 52 bytes; the webhook wants at least 32
	secretParam := putSecret(t, motoURL, secret)

	bins := built.wait(t)

	sc, err := sim.LoadScenario(filepath.Join(root, scenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Duration(sc.TickSeconds * float64(time.Second))
	// The functions stamp each sample with the wall clock and derive rates over the wall-clock time
	// between samples, as they must against a real cluster. So the simulator's clock is set to end
	// its warm-up now, and from here each Step is matched by a tick of real time between ingests.
	s, err := sim.New(sc, sim.Options{Start: time.Now().Add(-warmupTicks * tick)})
	if err != nil {
		t.Fatal(err)
	}
	for range warmupTicks {
		s.Step()
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	env := map[string]string{
		"AWS_REGION":                   region,
		"AWS_ACCESS_KEY_ID":            "testing",
		"AWS_SECRET_ACCESS_KEY":        "testing",
		"AWS_EC2_METADATA_DISABLED":    "true",
		"AWS_ENDPOINT_URL_DYNAMODB":    motoURL,
		"AWS_ENDPOINT_URL_EVENTBRIDGE": motoURL,
		"AWS_ENDPOINT_URL_SSM":         motoURL,
		"AWS_LAMBDA_FUNCTION_TIMEOUT":  strconv.Itoa(functionTimeout),
		"SHARDWISE_CLUSTERS":           clusterName + "=" + srv.URL,
		"SHARDWISE_AUTH":               "none",
		"SHARDWISE_TABLE":              table,
		"SHARDWISE_BUS":                rec.bus,
		// Acting, not dry-run: the move must reach the simulator and the ledger.
		"SHARDWISE_DRY_RUN":              "false",
		"SHARDWISE_CONFIG":               sandboxDefinitions,
		"SHARDWISE_WEBHOOK_SECRET_PARAM": secretParam,
	}

	t.Run("start refused", func(t *testing.T) {
		tests := []struct {
			name     string
			function string
			set      map[string]string
			unset    []string
			wantLog  string
		}{
			{"dry run not a boolean", "detect", map[string]string{"SHARDWISE_DRY_RUN": "maybe"}, nil,
				`SHARDWISE_DRY_RUN: "maybe" is not true or false`},
			{"cluster without a URL", "move", map[string]string{"SHARDWISE_CLUSTERS": clusterName}, nil,
				`SHARDWISE_CLUSTERS: "prod": want name=url`},
			{"no cluster at all", "replicas", nil, []string{"SHARDWISE_CLUSTERS"},
				"clusters: at least one cluster is required"},
			{"webhook secret too short", "ingest", map[string]string{"SHARDWISE_WEBHOOK_SECRET": "short"}, []string{"SHARDWISE_WEBHOOK_SECRET_PARAM"},
				"SHARDWISE_WEBHOOK_SECRET: webhook secret configuration: secret is 5 bytes, want at least 32"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e := maps.Clone(env)
				maps.Copy(e, tc.set)
				for _, k := range tc.unset {
					delete(e, k)
				}
				fn := startFunction(t, bins.rie, bins.functions[tc.function], tc.function, e)
				status, body, err := fn.invoke(t, []byte(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				// The emulator answers 502 Bad Gateway when the runtime exits during init.
				if status != http.StatusBadGateway {
					t.Errorf("got HTTP %d %s, want 502 (init failed)", status, body)
				}
				if log := fn.log(t); !strings.Contains(log, tc.wantLog) {
					t.Errorf("log does not say %q:\n%s", tc.wantLog, log)
				}
			})
		}
	})

	fns := map[string]*function{}
	for _, name := range functionNames {
		fns[name] = startFunction(t, bins.rie, bins.functions[name], name, env)
	}

	// Three samples a tick apart: the first has no rates, the second starts the hot streak, the
	// third completes it (two consecutive samples, the default).
	var keys []string
	started := time.Now()
	for i, file := range []string{"schedule.json", "invoke.json", "invoke.json"} {
		if i > 0 {
			s.Step()
			sleepUntil(t, started.Add(tick))
			started = time.Now()
		}
		res := invokeOK[[]engine.IngestResult](t, fns["ingest"], "ingest "+file, readEvent(t, root, file))
		if len(res) != 1 || res[0].Cluster != clusterName || res[0].SnapshotKey == "" || res[0].Error != "" {
			t.Fatalf("ingest %s: got %+v, want one result for %s with a snapshot key and no error", file, res, clusterName)
		}
		keys = append(keys, res[0].SnapshotKey)
		checkSnapshot(t, store, sc, res[0].SnapshotKey)
	}
	// Each invocation flushes its metrics to stdout as CloudWatch EMF, where Lambda's log agent
	// picks them up.
	// Only the metrics the stack's alarms and dashboard read are published: the heartbeat, not
	// ingest's own timing, which stays in the log.
	if log := fns["ingest"].log(t); !strings.Contains(log, `"CloudWatchMetrics"`) || !strings.Contains(log, `"SecondsSinceLastSample"`) ||
		strings.Contains(log, `"IngestSeconds":`) {
		t.Errorf("ingest wrote no SecondsSinceLastSample metric as EMF, or IngestSeconds, which nothing reads:\n%s", log)
	}
	if latest, err := snapshots.Latest(t.Context(), store, clusterName); err != nil || latest != keys[2] {
		t.Errorf("latest snapshot in DynamoDB: got %q (err %v), want %q", latest, err, keys[2])
	}
	rec.expect(t, "after ingest", map[string][]string{bus.TypeStatsIngested: keys})

	var detected []engine.DetectResult
	for _, key := range keys[1:] {
		ev := eventBridgeEvent(t, bus.TypeStatsIngested, bus.StatsIngested{Cluster: clusterName, SnapshotKey: key})
		r := invokeOK[engine.DetectResult](t, fns["detect"], "detect "+key, ev)
		if r.Cluster != clusterName || r.PlanKey != "plan#"+key || r.Repeated {
			t.Fatalf("detect %s: got cluster %q plan key %q repeated %v, want %s, plan#%s, false", key, r.Cluster, r.PlanKey, r.Repeated, clusterName, key)
		}
		if _, _, err := state.GetJSON[allocation.Plan](t.Context(), store, state.Key{PK: snapshots.PK(clusterName), SK: r.PlanKey}); err != nil {
			t.Errorf("plan %s in DynamoDB: %v", r.PlanKey, err)
		}
		detected = append(detected, r)
	}
	last := detected[len(detected)-1]
	if hot := hotNodes(last.Plan); len(hot) == 0 || len(last.Plan.Moves) == 0 {
		t.Fatalf("detect %s: hot nodes %v and %d moves, want a hot node and a move (the scenario saturates node-0 and node-1); hotspots: %+v",
			keys[2], hot, len(last.Plan.Moves), last.Plan.Hotspots)
	}
	// A tick later prod's write-queue alarm fires (events/alarm.json: the domain's
	// ThreadpoolWriteQueue alarm, named as the template names it). The latest snapshot is planned
	// already, so detect ingests prod itself and plans that fresh sample: a new snapshot and a new
	// plan, whose note names the alarm.
	s.Step()
	sleepUntil(t, started.Add(tick))
	alarmed := invokeOK[engine.DetectResult](t, fns["detect"], "detect alarm.json", readEvent(t, root, "alarm.json"))
	alarmKey := strings.TrimPrefix(alarmed.PlanKey, "plan#")
	const trigger = "CloudWatch alarm shardwise-prod-write-queue-shardwise entered ALARM"
	if alarmed.Cluster != clusterName || alarmed.Repeated || alarmed.PlanKey == last.PlanKey || !strings.HasPrefix(alarmKey, "snap#") || alarmed.Trigger != trigger {
		t.Fatalf("detect alarm.json: got cluster %q plan key %q repeated %v trigger %q, want a new plan of a fresh %s snapshot (the last was %s) triggered by %q",
			alarmed.Cluster, alarmed.PlanKey, alarmed.Repeated, alarmed.Trigger, clusterName, last.PlanKey, trigger)
	}
	checkSnapshot(t, store, sc, alarmKey)
	if latest, err := snapshots.Latest(t.Context(), store, clusterName); err != nil || latest != alarmKey {
		t.Errorf("latest snapshot after the alarm: got %q (err %v), want the alarm's %q", latest, err, alarmKey)
	}
	stored, _, err := state.GetJSON[allocation.Plan](t.Context(), store, state.Key{PK: snapshots.PK(clusterName), SK: alarmed.PlanKey})
	if err != nil {
		t.Fatalf("alarm's plan %s in DynamoDB: %v", alarmed.PlanKey, err)
	}
	if note := triggerNote(stored); !strings.HasPrefix(note, trigger+": ") {
		t.Errorf("alarm's stored plan: trigger note %q, want it to name the alarm; notes %+v", note, stored.Notes)
	}
	if hot := hotNodes(alarmed.Plan); len(hot) == 0 || len(alarmed.Plan.Moves) == 0 {
		t.Fatalf("detect alarm.json: hot nodes %v and %d moves, want a hot node and a move; hotspots: %+v", hot, len(alarmed.Plan.Moves), alarmed.Plan.Hotspots)
	}
	if log := fns["detect"].log(t); !strings.Contains(log, `"WriteQueueLatency"`) {
		t.Errorf("detect wrote no WriteQueueLatency metric as EMF:\n%s", log)
	}
	// The "Stats Ingested" of the alarm's snapshot wakes detect again: it finds the plan.
	if r := invokeOK[engine.DetectResult](t, fns["detect"], "detect the alarm's snapshot",
		eventBridgeEvent(t, bus.TypeStatsIngested, bus.StatsIngested{Cluster: clusterName, SnapshotKey: alarmKey})); !r.Repeated || r.PlanKey != alarmed.PlanKey {
		t.Errorf("detect on the alarm's Stats Ingested: got plan key %q repeated %v, want %q repeated", r.PlanKey, r.Repeated, alarmed.PlanKey)
	}
	// Prod's queue-latency alarm a moment later takes no second sample (rates over a second
	// would be noise): the alarm's plan, repeated.
	if r := invokeOK[engine.DetectResult](t, fns["detect"], "detect alarm-write-queue-latency.json", readEvent(t, root, "alarm-write-queue-latency.json")); !r.Repeated || r.PlanKey != alarmed.PlanKey {
		t.Errorf("detect alarm-write-queue-latency.json: got plan key %q repeated %v, want %q repeated", r.PlanKey, r.Repeated, alarmed.PlanKey)
	}
	detected = append(detected, alarmed)
	last = alarmed
	want := map[string][]string{bus.TypeStatsIngested: {alarmKey}}
	for _, r := range detected {
		if len(r.Plan.Moves) > 0 {
			want[bus.TypeMovesPlanned] = append(want[bus.TypeMovesPlanned], r.PlanKey)
		}
		if r.Plan.ScaleUp != nil {
			want[bus.TypeScaleUpNeeded] = append(want[bus.TypeScaleUpNeeded], clusterName)
		}
	}
	planned := rec.expect(t, "after detect", want)

	// Move gets "Moves Planned" exactly as EventBridge delivered it to a rule's target, at once,
	// as EventBridge does beside replicas and sandbox: its breaker refuses stats a minute old, and
	// the sandbox function samples tasks for most of its time budget.
	movesEvent := planned[last.PlanKey]
	if movesEvent == nil {
		t.Fatalf("no %q event for %s on the bus", bus.TypeMovesPlanned, last.PlanKey)
	}
	mr := invokeOK[engine.MoveResult](t, fns["move"], "move", movesEvent)
	executed := 0
	for _, o := range mr.Outcomes {
		if o.Outcome == engine.OutcomeExecuted {
			executed++
		}
	}
	if mr.PlanKey != last.PlanKey || !mr.Breaker.Closed || len(mr.Outcomes) != len(last.Plan.Moves) || executed == 0 {
		t.Fatalf("move: got plan key %q, breaker %+v, outcomes %+v; want %q, closed, one outcome per planned move (%d), one executed at least",
			mr.PlanKey, mr.Breaker, mr.Outcomes, last.PlanKey, len(last.Plan.Moves))
	}
	if got := s.Result().Moves; got != executed {
		t.Errorf("simulator accepted %d moves, want the %d the move function executed", got, executed)
	}
	ledger, err := store.Query(t.Context(), snapshots.PK(clusterName), "ledger#"+last.PlanKey+"#")
	if err != nil {
		t.Fatal(err)
	}
	// One ledger entry per group issued together: a move, or the two moves of a swap.
	moved := map[string]bool{}
	for _, o := range mr.Outcomes {
		if o.Outcome == engine.OutcomeExecuted {
			moved[o.Move.Key()] = true
		}
	}
	if len(ledger) == 0 {
		t.Errorf("ledger in DynamoDB: no entry under %s, want one per executed move or swap", last.PlanKey)
	}
	for _, it := range ledger {
		entry, err := state.DecodeJSON[struct {
			Move   allocation.Move `json:"move"`
			Status string          `json:"status"`
		}](it.Value)
		if err != nil {
			t.Fatalf("ledger %s: %v", it.Key.SK, err)
		}
		if entry.Status != "issued" || !moved[entry.Move.Key()] {
			t.Errorf("ledger %s: got status %q for move %s, want issued for an executed move", it.Key.SK, entry.Status, entry.Move.Key())
		}
	}
	outcomes := make([]string, len(mr.Outcomes))
	for i := range outcomes {
		outcomes[i] = mr.PlanKey
	}
	rec.expect(t, "after move", map[string][]string{bus.TypeShardMoveExecuted: outcomes})

	statsEvent := eventBridgeEvent(t, bus.TypeStatsIngested, bus.StatsIngested{Cluster: clusterName, SnapshotKey: alarmKey})
	rr := invokeOK[engine.ReplicasResult](t, fns["replicas"], "replicas", statsEvent)
	if rr.Cluster != clusterName || rr.Repeated || len(rr.Decisions) != len(sc.Indices) {
		t.Errorf("replicas: got cluster %q repeated %v and %d decisions, want %s, false and one per index (%d)",
			rr.Cluster, rr.Repeated, len(rr.Decisions), clusterName, len(sc.Indices))
	}
	// EventBridge delivers at least once: the same event again decides nothing twice.
	if again := invokeOK[engine.ReplicasResult](t, fns["replicas"], "replicas again", statsEvent); !again.Repeated || len(again.Applied) != 0 {
		t.Errorf("replicas on a redelivered event: got repeated %v and %d applied, want repeated and none", again.Repeated, len(again.Applied))
	}
	// The scenario's searches keep under 2 of the cluster's 78 search threads busy, so the
	// simulator lists few running search tasks or none; the findings cover every node whatever
	// the tasks, from the definitions in SHARDWISE_CONFIG and the nodes of the stored snapshot.
	sr := invokeOK[engine.SandboxResult](t, fns["sandbox"], "sandbox", statsEvent)
	assigned := 0
	for _, n := range sr.Assigned {
		assigned += n
	}
	if sr.Cluster != clusterName || assigned != sr.Tasks {
		t.Errorf("sandbox: got cluster %q, %d tasks and %d assigned, want %s and every task assigned", sr.Cluster, sr.Tasks, assigned, clusterName)
	}
	covered := map[string]bool{}
	for _, f := range sr.Report.Findings {
		if f.Sandbox != "clicks-readers" && f.Sandbox != sandbox.GenPop {
			t.Errorf("sandbox: finding for sandbox %q, want clicks-readers or %s", f.Sandbox, sandbox.GenPop)
		}
		covered[f.Node] = true
	}
	if len(covered) != len(sc.Nodes) {
		t.Errorf("sandbox: findings cover nodes %v, want all %d", slices.Sorted(maps.Keys(covered)), len(sc.Nodes))
	}
	want = map[string][]string{}
	if len(rr.Applied) > 0 {
		want[bus.TypeReplicasChanged] = []string{clusterName}
	}
	// One event per sandbox that lost requests in the invocation.
	lost := map[string]bool{}
	for _, o := range sr.Outcomes {
		lost[o.Sandbox] = true
	}
	if len(lost) > 0 {
		want[bus.TypeSandboxEnforced] = slices.Repeat([]string{clusterName}, len(lost))
	}
	rec.expect(t, "after replicas and sandbox", want)

	t.Run("webhook", func(t *testing.T) {
		testWebhooks(t, root, srv.URL, fns["ingest"], store, rec, secret)
	})

	t.Run("event refused", func(t *testing.T) {
		tests := []struct {
			name, function string
			event          []byte
			wantError      string
		}{
			{"schedule to detect", "detect", readEvent(t, root, "schedule.json"), `detect: unsupported event "Scheduled Event"`},
			{"alarm to replicas", "replicas", readEvent(t, root, "alarm.json"), `replicas: unsupported event "CloudWatch Alarm State Change"`},
			{"stats ingested to move", "move", statsEvent, `move: unsupported event "Stats Ingested"`},
			{"unknown detail field", "sandbox", eventBridgeEvent(t, bus.TypeStatsIngested, map[string]string{"cluster": clusterName, "snapshot": alarmKey}),
				`unknown field "snapshot"`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				status, body, err := fns[tc.function].invoke(t, tc.event)
				if err != nil {
					t.Fatal(err)
				}
				fe, isErr := functionError(body)
				if status != http.StatusOK || !isErr || !strings.Contains(fe.Message, tc.wantError) {
					t.Errorf("got HTTP %d %s, want 200 with a function error saying %q", status, body, tc.wantError)
				}
			})
		}
		rec.expect(t, "after refused events", nil)
	})
}

// testWebhooks posts the metrics webhook's Function URL payloads to the ingest function.
func testWebhooks(t *testing.T, root, simURL string, ingest *function, store state.Store, rec *busRecorder, secret []byte) {
	simStats := getBody(t, simURL+"/_nodes/stats")
	tests := []struct {
		name   string
		sample string
		// edit changes the sample request before it is sent.
		edit       func(req *events.LambdaFunctionURLRequest)
		wantStatus int
		wantCode   string // the error body's code, for a refusal
		wantKind   webhook.Kind
		wantAuth   webhook.Auth
		wantDetect bool // an alert or an alarm plans at once
	}{
		{name: "pushed node stats of another cluster", sample: "webhook-nodes-stats.json",
			wantStatus: http.StatusUnprocessableEntity, wantCode: "push_rejected", wantKind: webhook.KindNodesStats, wantAuth: webhook.AuthSigV4},
		{name: "pushed node stats of the cluster", sample: "webhook-nodes-stats.json",
			edit:       func(req *events.LambdaFunctionURLRequest) { req.Body = string(simStats) },
			wantStatus: http.StatusOK, wantKind: webhook.KindNodesStats, wantAuth: webhook.AuthSigV4},
		{name: "alertmanager alert", sample: "webhook-alertmanager.json",
			wantStatus: http.StatusOK, wantKind: webhook.KindAlertmanager, wantAuth: webhook.AuthSigV4, wantDetect: true},
		{name: "cloudwatch alarm", sample: "webhook-alarm.json",
			wantStatus: http.StatusOK, wantKind: webhook.KindAlarm, wantAuth: webhook.AuthSigV4, wantDetect: true},
		{name: "alertmanager alert signed with HMAC", sample: "webhook-alertmanager.json",
			edit:       func(req *events.LambdaFunctionURLRequest) { signHMAC(req, secret) },
			wantStatus: http.StatusOK, wantKind: webhook.KindAlertmanager, wantAuth: webhook.AuthHMAC, wantDetect: true},
		{name: "HMAC signature with another secret", sample: "webhook-alertmanager.json",
			edit: func(req *events.LambdaFunctionURLRequest) {
				signHMAC(req, []byte(rand.Text()+rand.Text()))
			},
			wantStatus: http.StatusUnauthorized, wantCode: "unauthenticated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := readEvent(t, root, tc.sample)
			if tc.edit != nil {
				var req events.LambdaFunctionURLRequest
				if err := json.Unmarshal(payload, &req); err != nil {
					t.Fatalf("%s: %v", tc.sample, err)
				}
				tc.edit(&req)
				var err error
				if payload, err = json.Marshal(req); err != nil {
					t.Fatal(err)
				}
			}
			resp := invokeOK[events.LambdaFunctionURLResponse](t, ingest, tc.name, payload)
			if resp.StatusCode != tc.wantStatus || resp.Headers["content-type"] != "application/json" {
				t.Fatalf("got HTTP %d content-type %q body %s, want %d application/json", resp.StatusCode, resp.Headers["content-type"], resp.Body, tc.wantStatus)
			}
			var body struct {
				webhook.ErrorBody
				handler.WebhookReply
			}
			if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
				t.Fatalf("body %s: %v", resp.Body, err)
			}
			if body.Code != tc.wantCode {
				t.Errorf("error code: got %q (%s), want %q", body.Code, body.Message, tc.wantCode)
			}
			want := map[string][]string{}
			if tc.wantKind == "" {
				rec.expect(t, tc.name, want)
				return
			}
			if body.Kind != tc.wantKind || body.Auth != tc.wantAuth || len(body.Results) != 1 || body.Results[0].Cluster != clusterName {
				t.Fatalf("got kind %q auth %q results %+v, want %q %q and one result for %s", body.Kind, body.Auth, body.Results, tc.wantKind, tc.wantAuth, clusterName)
			}
			res := body.Results[0]
			if tc.wantStatus != http.StatusOK {
				if res.SnapshotKey != "" || res.Error == "" {
					t.Errorf("refused push: got snapshot key %q error %q, want no key and the error", res.SnapshotKey, res.Error)
				}
				rec.expect(t, tc.name, want)
				return
			}
			checkSnapshot(t, store, nil, res.SnapshotKey)
			want[bus.TypeStatsIngested] = []string{res.SnapshotKey}
			if gotDetect := res.PlanKey != ""; gotDetect != tc.wantDetect || (gotDetect && res.PlanKey != "plan#"+res.SnapshotKey) {
				t.Errorf("plan key: got %q for snapshot %q, want a plan of it: %v", res.PlanKey, res.SnapshotKey, tc.wantDetect)
			}
			if res.Moves > 0 {
				want[bus.TypeMovesPlanned] = []string{res.PlanKey}
			}
			rec.expect(t, tc.name, want)
		})
	}
}

// signHMAC turns a SigV4 Function URL request into one for the public webhook URL: no IAM
// authorizer, the HMAC headers over the method, path, cluster header and body instead.
func signHMAC(req *events.LambdaFunctionURLRequest, secret []byte) {
	req.RequestContext.Authorizer = nil
	m := webhook.Message{Method: req.RequestContext.HTTP.Method, Path: req.RawPath, Cluster: req.Headers[webhook.HeaderCluster], Body: []byte(req.Body)}
	ts, sig := webhook.Sign(secret, m, time.Now())
	req.Headers[webhook.HeaderTimestamp] = ts
	req.Headers[webhook.HeaderSignature] = sig
}

// TestRIEVersionMatchesMakefile: `make rie-install`, which CI runs, installs the version this
// test runs, so CI never builds the emulator in the middle of the tests.
func TestRIEVersionMatchesMakefile(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(moduleRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	want := "RIE_VERSION := " + rieVersion + "\n"
	if !strings.Contains(string(mk), want) {
		t.Errorf("Makefile does not pin %q", strings.TrimSpace(want))
	}
	if !strings.Contains(string(mk), rieBin) || !strings.Contains(string(mk), riePackage) {
		t.Errorf("Makefile's rie-install does not build %s into %s", riePackage, rieBin)
	}
}

// builds is the background build of the functions and the emulator.
type builds struct {
	done   chan struct{}
	result built
	// err is the functions' build failing, rieErr the emulator's.
	err, rieErr error
}

type built struct {
	rie       string
	functions map[string]string // name → bootstrap path
}

// startBuilds builds the functions and the emulator while moto starts; wait collects them.
func startBuilds(t *testing.T, root string) *builds {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	b := &builds{done: make(chan struct{})}
	dir := t.TempDir()
	go func() {
		defer close(b.done)
		rie := make(chan error, 1)
		go func() {
			var err error
			b.result.rie, err = ensureRIE(ctx, root)
			rie <- err
		}()
		b.result.functions, b.err = buildFunctions(ctx, root, dir)
		b.rieErr = <-rie
	}()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

func (b *builds) wait(t *testing.T) built {
	t.Helper()
	<-b.done
	if b.err != nil {
		t.Fatal(b.err)
	}
	if b.rieErr != nil {
		// The one prerequisite the test fetches: the emulator's module, from the Go module proxy
		// (`make rie-install` builds it). In CI it must be there.
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", b.rieErr)
		}
		t.Skipf("skipped: the Lambda Runtime Interface Emulator could not be built, so the functions cannot be invoked as Lambda "+
			"invokes them; run `make rie-install` where the Go module proxy is reachable (in CI, CI=true, this fails): %v", b.rieErr)
	}
	return b.result
}

// buildFunctions builds every function as `make build` does, for the host's architecture so
// that it runs here, each as <dir>/<name>/bootstrap: the layout of a provided.al2023 zip.
func buildFunctions(ctx context.Context, root, dir string) (map[string]string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("build functions: the go command is not on PATH: %w", err)
	}
	out := filepath.Join(dir, "out") + string(filepath.Separator)
	args := []string{"build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out}
	for _, name := range functionNames {
		args = append(args, "./functions/"+name)
	}
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build functions: %s: %w\n%s", strings.Join(cmd.Args, " "), err, msg)
	}
	paths := map[string]string{}
	for _, name := range functionNames {
		p := filepath.Join(dir, name, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("build functions: %w", err)
		}
		if err := os.Rename(filepath.Join(out, name), p); err != nil {
			return nil, fmt.Errorf("build functions: %w", err)
		}
		paths[name] = p
	}
	return paths, nil
}

// ensureRIE returns the emulator at <root>/.cache/bin, building it from its module when it is
// missing or another version. It is built into a fresh directory and renamed into place, so a
// build cut short never leaves a broken binary behind.
func ensureRIE(ctx context.Context, root string) (string, error) {
	bin := filepath.Join(root, rieBin)
	if info, err := buildinfo.ReadFile(bin); err == nil && info.Main.Path == rieModule && info.Main.Version == rieVersion {
		return bin, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build the emulator: the go command is not on PATH: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("build the emulator: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(bin), "rie-build-")
	if err != nil {
		return "", fmt.Errorf("build the emulator: %w", err)
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // a leftover temp dir under .cache/ harms nothing
	cmd := exec.CommandContext(ctx, goTool, "install", riePackage+"@"+rieVersion)
	// GOFLAGS is cleared: flags meant for this module (-mod, -tags) do not apply to another's.
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the emulator: %s: %w\n%s", strings.Join(cmd.Args, " "), err, msg)
	}
	if err := os.Rename(filepath.Join(tmp, filepath.Base(bin)), bin); err != nil {
		return "", fmt.Errorf("build the emulator: %w", err)
	}
	return bin, nil
}

// function is one Lambda running under its own emulator.
type function struct {
	name    string
	url     string
	logPath string
}

// startFunction runs bootstrap under the emulator on free ports of 127.0.0.1 with env as the
// whole environment (the emulator passes its own to the function, as Lambda sets a function's),
// and stops both when t ends. The function starts at its first invocation.
//
// The ports come from freeAddr, so another process can bind one before the emulator does. The
// emulator then exits at once saying the address is in use, and the start is tried again on new
// ports, up to startAttempts times.
func startFunction(t *testing.T, rie, bootstrap, name string, env map[string]string) *function {
	t.Helper()
	for attempt := 1; ; attempt++ {
		f, stop, err := startEmulator(t, rie, bootstrap, name, env)
		if err == nil {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("%s: emulator and function log:\n%s", name, f.log(t))
				}
			})
			return f
		}
		stop()
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatalf("%s: %v:\n%s", name, err, f.log(t))
		}
		t.Logf("%s: %v; starting again on new ports (attempt %d of %d)", name, err, attempt+1, startAttempts)
	}
}

// startAttempts bounds the starts of one emulator that lose their ports to another process.
const startAttempts = 5

// errPortTaken marks an emulator that exited because another process had bound its port.
var errPortTaken = errors.New("another process took the emulator's port")

// startEmulator makes one attempt of startFunction. It returns the function, a stop that ends the
// emulator and the runtime it started (always non-nil, to be called once), and an error when the
// emulator did not come up listening.
func startEmulator(t *testing.T, rie, bootstrap, name string, env map[string]string) (*function, func(), error) {
	t.Helper()
	addr, apiAddr := freeAddr(t), freeAddr(t)
	f := &function{name: name, url: "http://" + addr + "/2015-03-31/functions/function/invocations",
		logPath: filepath.Join(t.TempDir(), name+".log")}
	noop := func() {}
	logFile, err := os.Create(f.logPath)
	if err != nil {
		return f, noop, err
	}
	e := maps.Clone(env)
	e["AWS_LAMBDA_FUNCTION_NAME"] = "shardwise-" + name
	ctx, cancel := context.WithCancel(context.Background())
	// The runtime API gets its own port too: the emulator's default, 9001, would be shared by
	// the five emulators.
	cmd := exec.CommandContext(ctx, rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Dir = filepath.Dir(bootstrap) // the function's working directory, /var/task in Lambda
	for _, k := range slices.Sorted(maps.Keys(e)) {
		cmd.Env = append(cmd.Env, k+"="+e[k])
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// SIGTERM lets the emulator shut down; WaitDelay kills it if it does not. Pdeathsig kills it
	// when the test binary dies without running its cleanups (a -timeout panic).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopTimeout
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	exited := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// A parent-death signal follows the thread that started the child, so this goroutine keeps
		// its thread until the emulator is gone.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait() // stopped by us: its exit status says nothing
		close(exited)
	}()
	startErr := <-started
	if err := logFile.Close(); err != nil {
		t.Error(err)
	}
	if startErr != nil {
		cancel()
		return f, noop, fmt.Errorf("start %s: %w", cmd.Path, startErr)
	}
	stop := func() {
		cancel()
		<-exited
		if err := stopRuntime(bootstrap); err != nil {
			t.Error(err)
		}
	}
	return f, stop, waitListening(t, addr, exited, f)
}

// stopRuntime waits for the function process the emulator started to exit: the emulator runs it
// in a process group of its own and leaves it when it stops, and the runtime then exits because
// its runtime API is gone. One still running after stopTimeout is killed by its pid.
func stopRuntime(bootstrap string) error {
	deadline := time.Now().Add(stopTimeout)
	for {
		pids := processesOf(bootstrap)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					return fmt.Errorf("kill %s (pid %d): %w", bootstrap, pid, err)
				}
			}
			return fmt.Errorf("%s (pids %v) still ran %s after its emulator stopped; killed", bootstrap, pids, stopTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesOf lists the processes running the executable at path.
func processesOf(path string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitListening waits until the emulator accepts connections. An emulator that exits first
// returns errPortTaken when its log says a port was in use.
func waitListening(t *testing.T, addr string, exited <-chan struct{}, f *function) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-exited:
			if strings.Contains(f.log(t), "address already in use") {
				return fmt.Errorf("the emulator exited during start: %w", errPortTaken)
			}
			return errors.New("the emulator exited during start")
		case <-ctx.Done():
			return fmt.Errorf("the emulator did not listen on %s within %s", addr, readyTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// invoke posts payload to the function and returns the emulator's answer.
func (f *function) invoke(t *testing.T, payload []byte) (int, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), invokeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("invoke %s: %w", f.name, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("invoke %s: %w", f.name, err)
	}
	defer resp.Body.Close() //nolint:errcheck // the body is read whole below; a close error adds nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("invoke %s: read response: %w", f.name, err)
	}
	return resp.StatusCode, body, nil
}

// log is what the emulator and the function wrote: the function's JSON logs and EMF metrics
// among the emulator's own lines.
func (f *function) log(t *testing.T) string {
	t.Helper()
	const tail = 16 << 10
	b, err := os.ReadFile(f.logPath)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return string(b)
}

// lambdaError is the body the emulator returns, with HTTP 200 as Lambda's Invoke API does, when
// the handler returned an error.
type lambdaError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func functionError(body []byte) (lambdaError, bool) {
	var e lambdaError
	if json.Unmarshal(body, &e) != nil || e.Type == "" {
		return e, false
	}
	return e, true
}

// invoke invokes f and decodes its successful response as T; anything else fails t.
func invokeOK[T any](t *testing.T, f *function, what string, payload []byte) T {
	t.Helper()
	var v T
	status, body, err := f.invoke(t, payload)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if status != http.StatusOK {
		t.Fatalf("%s: HTTP %d %s", what, status, body)
	}
	if e, ok := functionError(body); ok {
		t.Fatalf("%s: the function returned an error: %s: %s", what, e.Type, e.Message)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: response %s: %v", what, body, err)
	}
	return v
}

// eventBridgeEvent is an event as EventBridge delivers it to a rule's target.
func eventBridgeEvent(t *testing.T, detailType string, detail any) []byte {
	t.Helper()
	d, err := json.Marshal(detail)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(events.CloudWatchEvent{Version: "0", ID: rand.Text(), DetailType: detailType, Source: bus.Source,
		AccountID: "123456789012", Time: time.Now().UTC(), Region: region, Resources: []string{}, Detail: d})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSnapshot loads a snapshot from DynamoDB and, given the scenario, checks that it holds
// every node and every copy.
func checkSnapshot(t *testing.T, store state.Store, sc *sim.Scenario, key string) {
	t.Helper()
	snap, _, err := snapshots.Load(t.Context(), store, clusterName, key)
	if err != nil {
		t.Fatalf("snapshot %s in DynamoDB: %v", key, err)
	}
	if sc == nil {
		return
	}
	copies := 0
	for _, ix := range sc.Indices {
		copies += ix.Primaries * (ix.Replicas + 1)
	}
	if len(snap.Nodes) != len(sc.Nodes) || len(snap.Copies) != copies {
		t.Errorf("snapshot %s: got %d nodes and %d copies, want %d and %d", key, len(snap.Nodes), len(snap.Copies), len(sc.Nodes), copies)
	}
}

// triggerNote is the reason of the plan's note saying what asked for it outside the cadence.
func triggerNote(p allocation.Plan) string {
	for _, n := range p.Notes {
		if n.Kind == engine.NoteTriggered {
			return n.Reason
		}
	}
	return ""
}

func hotNodes(p allocation.Plan) []string {
	var hot []string
	for _, h := range p.Hotspots {
		if h.Hot {
			hot = append(hot, h.NodeName)
		}
	}
	return hot
}

// busRecorder is a custom EventBridge bus in moto with a rule sending every shardwise event to an
// SQS queue, which the test reads to see what the functions published.
type busRecorder struct {
	eb       *eventbridge.Client
	sqs      *sqs.Client
	bus      string
	queueURL string
}

func newBusRecorder(t *testing.T, endpoint string) *busRecorder {
	t.Helper()
	ctx := t.Context()
	creds := credentials.NewStaticCredentialsProvider("testing", "testing", "")
	r := &busRecorder{
		eb:  eventbridge.New(eventbridge.Options{Region: region, BaseEndpoint: aws.String(endpoint), Credentials: creds}),
		sqs: sqs.New(sqs.Options{Region: region, BaseEndpoint: aws.String(endpoint), Credentials: creds}),
		bus: "shardwise-test-" + strings.ToLower(rand.Text()),
	}
	if _, err := r.eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(r.bus)}); err != nil {
		t.Fatalf("create event bus: %v", err)
	}
	cleanup(t, "delete event bus", func(ctx context.Context) error {
		_, err := r.eb.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: aws.String(r.bus)})
		return err
	})
	q, err := r.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(r.bus)})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	r.queueURL = aws.ToString(q.QueueUrl)
	cleanup(t, "delete queue", func(ctx context.Context) error {
		_, err := r.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		return err
	})
	attrs, err := r.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue arn: %v", err)
	}
	rule := aws.String("record-shardwise")
	if _, err := r.eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: rule, EventBusName: aws.String(r.bus),
		EventPattern: aws.String(`{"source":["` + bus.Source + `"]}`)}); err != nil {
		t.Fatalf("put rule: %v", err)
	}
	cleanup(t, "delete rule", func(ctx context.Context) error {
		_, err := r.eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: rule, EventBusName: aws.String(r.bus)})
		return err
	})
	if _, err := r.eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: rule, EventBusName: aws.String(r.bus),
		Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}}); err != nil {
		t.Fatalf("put targets: %v", err)
	}
	cleanup(t, "remove targets", func(ctx context.Context) error {
		_, err := r.eb.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: rule, EventBusName: aws.String(r.bus), Ids: []string{"queue"}})
		return err
	})
	return r
}

// drain reads and deletes every event the queue holds, waiting up to wait for the first when it
// holds none. moto delivers an event to the rule's target inside PutEvents, so all a finished
// invocation published should be there at once; the wait is for a loaded machine's sake.
func (r *busRecorder) drain(t *testing.T, wait time.Duration) []events.CloudWatchEvent {
	t.Helper()
	var out []events.CloudWatchEvent
	for {
		in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.queueURL), MaxNumberOfMessages: 10}
		if wait > 0 {
			in.WaitTimeSeconds = int32(min(wait, 20*time.Second) / time.Second)
		}
		msgs, err := r.sqs.ReceiveMessage(t.Context(), in)
		if err != nil {
			t.Fatalf("receive events: %v", err)
		}
		if len(msgs.Messages) == 0 {
			return out
		}
		wait = 0
		for _, m := range msgs.Messages {
			var ev events.CloudWatchEvent
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
				t.Fatalf("event %s: %v", aws.ToString(m.Body), err)
			}
			out = append(out, ev)
			if _, err := r.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(r.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete event: %v", err)
			}
		}
	}
}

// expect drains the bus and checks that it got exactly the events in want: per detail type, one
// event per listed key (the snapshot key of "Stats Ingested", the plan key of "Moves Planned" and
// "Shard Move Executed", else the cluster), in any order. It returns the "Moves Planned" events
// as delivered, by plan key.
func (r *busRecorder) expect(t *testing.T, when string, want map[string][]string) map[string][]byte {
	t.Helper()
	got := map[string][]string{}
	planned := map[string][]byte{}
	wanted := 0
	for _, keys := range want {
		wanted += len(keys)
	}
	// An expected event not yet drained is waited for, a few seconds at most; with none expected,
	// one drain.
	var received []events.CloudWatchEvent
	for deadline := time.Now().Add(expectWait); ; {
		wait := time.Until(deadline).Truncate(time.Second)
		if len(received) >= wanted || wait <= 0 {
			wait = 0
		}
		batch := r.drain(t, wait)
		received = append(received, batch...)
		if len(received) >= wanted || len(batch) == 0 && wait == 0 {
			break
		}
	}
	for _, ev := range received {
		if ev.Source != bus.Source {
			t.Errorf("%s: event from %q, want %q", when, ev.Source, bus.Source)
		}
		var d struct {
			Cluster     string `json:"cluster"`
			SnapshotKey string `json:"snapshot_key"`
			PlanKey     string `json:"plan_key"`
		}
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			t.Fatalf("%s: %q detail %s: %v", when, ev.DetailType, ev.Detail, err)
		}
		key := d.Cluster
		switch ev.DetailType {
		case bus.TypeStatsIngested:
			key = d.SnapshotKey
		case bus.TypeMovesPlanned, bus.TypeShardMoveExecuted:
			key = d.PlanKey
		}
		got[ev.DetailType] = append(got[ev.DetailType], key)
		if ev.DetailType == bus.TypeMovesPlanned {
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			planned[key] = b
		}
	}
	for _, m := range []map[string][]string{got, want} {
		for k := range m {
			slices.Sort(m[k])
		}
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%s: events on the bus by detail type:\n got %v\nwant %v\n%s", when, got, want, r.describe(t))
	}
	return planned
}

// expectWait is how long expect waits for an expected event that is not on the queue yet.
const expectWait = 10 * time.Second

// describe says what moto holds for the recorder: the queue's message counts and the bus's rules
// and their targets, to tell a lost event from one never routed.
func (r *busRecorder) describe(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	attrs, err := r.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(r.queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		fmt.Fprintf(&b, "queue %s: %v\n", r.queueURL, err)
	} else {
		fmt.Fprintf(&b, "queue %s: %v\n", r.queueURL, attrs.Attributes)
	}
	rules, err := r.eb.ListRules(t.Context(), &eventbridge.ListRulesInput{EventBusName: aws.String(r.bus)})
	if err != nil {
		fmt.Fprintf(&b, "rules on %s: %v\n", r.bus, err)
		return b.String()
	}
	for _, rule := range rules.Rules {
		targets, err := r.eb.ListTargetsByRule(t.Context(), &eventbridge.ListTargetsByRuleInput{Rule: rule.Name, EventBusName: aws.String(r.bus)})
		if err != nil {
			fmt.Fprintf(&b, "rule %s (%s, %s): targets: %v\n", aws.ToString(rule.Name), rule.State, aws.ToString(rule.EventPattern), err)
			continue
		}
		var arns []string
		for _, tg := range targets.Targets {
			arns = append(arns, aws.ToString(tg.Arn))
		}
		fmt.Fprintf(&b, "rule %s (%s, %s): targets %v\n", aws.ToString(rule.Name), rule.State, aws.ToString(rule.EventPattern), arns)
	}
	return b.String()
}

// putSecret stores the webhook's HMAC secret as an SSM SecureString in moto, as a deployment
// does, and returns the parameter's name.
func putSecret(t *testing.T, endpoint string, secret []byte) string {
	t.Helper()
	client := ssm.New(ssm.Options{Region: region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
	name := "/shardwise-test-" + strings.ToLower(rand.Text()) + "/webhook-secret"
	if _, err := client.PutParameter(t.Context(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(string(secret)),
		Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatalf("put webhook secret: %v", err)
	}
	cleanup(t, "delete webhook secret", func(ctx context.Context) error {
		_, err := client.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(name)})
		return err
	})
	return name
}

// cleanup runs f when t ends, with a context of its own: t.Context is canceled by then.
func cleanup(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f(ctx); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

func readEvent(t *testing.T, root, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // the body is read whole below; a close error adds nothing
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %s (err %v)", url, resp.StatusCode, b, err)
	}
	return b
}

func sleepUntil(t *testing.T, when time.Time) {
	t.Helper()
	select {
	case <-time.After(time.Until(when)):
	case <-t.Context().Done():
		t.Fatal("test ended while waiting for the next sample")
	}
}

// freeAddr asks the kernel for a free TCP port on 127.0.0.1. Another process could take it before
// the emulator binds it; startFunction then starts the emulator again on new ports.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// moduleRoot is the directory above this package's, holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}
