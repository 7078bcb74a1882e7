package deploy

import (
	"slices"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/webhook"
)

// alarmPrefix marks the CloudWatch alarms that should wake detect; alarms on anything else in the
// account are not shardwise's business. The webhook reads the cluster from the rest of the name.
const alarmPrefix = webhook.AlarmPrefix

// function is one Lambda of the stack: everything that differs between them.
type function struct {
	// name is the directory under Options.SourceDir and the lower-case stem of the logical ID.
	name        string
	description string
	// memoryMB also buys CPU: Lambda allocates CPU in proportion to memory.
	memoryMB int
	// timeoutSeconds is the function's Lambda timeout; 0 takes timeoutSeconds.
	timeoutSeconds int
	// openSearch lists the requests the function sends to OpenSearch: its IAM grant on the
	// domain and its fine-grained access control role (access.go).
	openSearch []request
	// dynamoDB lists the DynamoDB actions the function calls on the state table.
	dynamoDB []string
	// triggers are the EventBridge rules that invoke it. A function with triggers is invoked
	// asynchronously and so gets the failure destination.
	triggers []trigger
	// functionURL exposes the function as an IAM-authenticated HTTPS endpoint (the metrics webhook).
	functionURL bool
	// publicWebhook adds the "webhook" alias with a public URL for HMAC-signed requests, when the
	// stack names the secret's parameter (webhook.go).
	publicWebhook bool
}

// trigger is one EventBridge rule targeting a function.
type trigger struct {
	// name is the key under the function's Events, so SAM names the rule <Function><name>.
	name string
	// onBus is true for rules on the shardwise bus, false for the account's default bus, where
	// AWS services such as CloudWatch publish.
	onBus   bool
	pattern map[string]any
}

// onShardwiseBus matches one detail type published by shardwise itself.
func onShardwiseBus(detailType string) trigger {
	return trigger{
		name:  bus.RuleName(detailType),
		onBus: true,
		pattern: map[string]any{
			"source":      []string{bus.Source},
			"detail-type": []string{detailType},
		},
	}
}

// busTriggers are the rules for the shardwise events that invoke function (bus.Subscriptions).
func busTriggers(function string) []trigger {
	var out []trigger
	for _, dt := range bus.Subscriptions(function) {
		out = append(out, onShardwiseBus(dt))
	}
	return out
}

// alarmTrigger matches shardwise's own CloudWatch alarms entering ALARM. Transitions back to OK
// carry nothing to act on, so they do not invoke detect.
func alarmTrigger() trigger {
	return trigger{
		name: "AlarmStateChange",
		pattern: map[string]any{
			"source":      []string{"aws.cloudwatch"},
			"detail-type": []string{"CloudWatch Alarm State Change"},
			"detail": map[string]any{
				"alarmName": []any{map[string]any{"prefix": alarmPrefix}},
				"state":     map[string]any{"value": []string{"ALARM"}},
			},
		},
	}
}

// functions lists the stack's Lambdas in template order. The 256 MB functions hold a whole
// cluster snapshot (shard-level stats of every index); the 128 MB ones work on index- or
// task-level data. Memory is the only knob for CPU on Lambda, so the snapshot holders get more.
func functions() []function {
	return []function{
		{
			name:        "ingest",
			description: "Reads _nodes/stats, _stats and _cluster/state, stores a snapshot, publishes Stats Ingested.",
			memoryMB:    256,
			// A sample, then removing the allocation filters of moves that have finished.
			openSearch: append(slices.Clone(readCluster), reqIndexSettings, reqPutSettings),
			// Snapshots are written in batches (BatchGetItem reads the live versions first);
			// webhook replay marks, filter records and the lease are single items.
			dynamoDB:      []string{ddbGetItem, ddbPutItem, ddbDeleteItem, ddbQuery, ddbBatchGetItem, ddbBatchWriteItem},
			functionURL:   true,
			publicWebhook: true,
		},
		{
			name:        "detect",
			description: "Finds write hotspots in each snapshot, or in a fresh one when an alarm fires, and publishes Moves Planned or Scale Up Needed.",
			memoryMB:    256,
			// Plans a stored snapshot; on a shardwise-* alarm it first reads a fresh sample and
			// stores it in batches as ingest does (engine.DetectNow), but leaves removing
			// allocation filters to ingest: no settings requests, and it deletes nothing.
			openSearch: slices.Clone(readCluster),
			dynamoDB:   []string{ddbGetItem, ddbPutItem, ddbQuery, ddbBatchGetItem, ddbBatchWriteItem},
			triggers:   append(busTriggers(bus.FunctionDetect), alarmTrigger()),
		},
		{
			name:        "move",
			description: "Re-checks the deciders on fresh state and executes planned shard moves behind the safety gates.",
			memoryMB:    256,
			// A fresh read of the topology (no shard stats), POST _cluster/reroute (dry-run
			// first), and index allocation filters where reroute is refused or not the strategy.
			openSearch: append(slices.Clone(readTopology), reqReroute, reqIndexSettings, reqPutSettings),
			// The ledger, the lease and the cycle claim; DeleteItem removes allocation-filter records.
			dynamoDB: []string{ddbGetItem, ddbPutItem, ddbDeleteItem, ddbQuery},
			triggers: busTriggers(bus.FunctionMove),
			// No reserved concurrency: moves are serialized per cluster by the cluster's lease,
			// not per stack. A stack-wide cap of 1 made the clusters of one stack wait for each
			// other, and their events aged past the 60 s maximum into the dead-letter queue; an
			// invocation that finds its cluster's lease held skips its plan (the next cycle plans
			// again) and fails nothing.
		},
		{
			name:        "replicas",
			description: "Scales each index's replicas with its share of search load, with cooldowns.",
			memoryMB:    128,
			// Health for the breaker, PUT <index>/_settings for number_of_replicas.
			openSearch: []request{reqHealth, reqPutSettings},
			// Cooldowns and the snapshot's claim; DeleteItem gives the claim back when a cycle fails.
			dynamoDB: []string{ddbGetItem, ddbPutItem, ddbDeleteItem, ddbQuery},
			triggers: busTriggers(bus.FunctionReplicas),
		},
		{
			name:        "sandbox",
			description: "Measures each sandbox's share of the nodes' CPU and heap, cancels the newest requests of sandboxes over their limits, and syncs the sandboxes to workload management.",
			memoryMB:    128,
			// Its loop samples the tasks until 5 s (engine.SandboxMargin) before this timeout:
			// 30 s, one stats cycle, so each invocation hands over to the next one's and a flood
			// is met between cycles too.
			timeoutSeconds: sandboxTimeoutSeconds,
			// Health for the breaker, the nodes' own CPU and heap, the search tasks and their
			// cancellation; the version (GET /) and the workload-management groups, rules and wlm.*
			// settings it syncs.
			openSearch: append([]request{reqHealth, reqRoot, reqNodesStats, reqNodesOS, reqTasks, reqCancelTask,
				reqClusterSettings, reqPutClusterSet}, wlmRequests()...),
			// One record per invocation in its cluster's history (usage, cancellations, the last
			// plan), which `shardwise sandbox report` reads; it reads nothing back.
			dynamoDB: []string{ddbPutItem},
			triggers: busTriggers(bus.FunctionSandbox),
		},
	}
}
