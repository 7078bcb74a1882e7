#!/bin/bash
# LocalStack ready hook: creates what template.yaml creates that the functions need to find
# (state table, bus, rules) with the same names, keys and event patterns. Rules deliver to one
# SQS queue per function, so what each function would receive can be read with
#   awslocal sqs receive-message --queue-url http://localhost:4566/000000000000/shardwise-detect-events
# Runs once per LocalStack start; every step tolerates a resource that already exists.
set -euo pipefail

table=shardwise-state
bus=shardwise

awslocal dynamodb create-table \
	--table-name "$table" \
	--attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
	--key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
	--billing-mode PAY_PER_REQUEST >/dev/null ||
	echo "table $table exists"
awslocal dynamodb wait table-exists --table-name "$table"
awslocal dynamodb update-time-to-live --table-name "$table" \
	--time-to-live-specification Enabled=true,AttributeName=expires_at >/dev/null ||
	echo "TTL on $table already set"

awslocal events create-event-bus --name "$bus" >/dev/null || echo "bus $bus exists"

# rule NAME BUS FUNCTION PATTERN: an EventBridge rule delivering to shardwise-FUNCTION-events.
rule() {
	local name=$1 on_bus=$2 fn=$3 pattern=$4 queue_url queue_arn
	queue_url="$(awslocal sqs create-queue --queue-name "shardwise-$fn-events" --query QueueUrl --output text)"
	queue_arn="$(awslocal sqs get-queue-attributes --queue-url "$queue_url" \
		--attribute-names QueueArn --query Attributes.QueueArn --output text)"
	awslocal events put-rule --name "$name" --event-bus-name "$on_bus" --event-pattern "$pattern" >/dev/null
	awslocal events put-targets --rule "$name" --event-bus-name "$on_bus" \
		--targets "Id=$fn,Arn=$queue_arn" >/dev/null
	echo "rule $name on $on_bus -> $queue_url"
}

stats_ingested='{"source":["shardwise"],"detail-type":["Stats Ingested"]}'
rule shardwise-detect-stats "$bus" detect "$stats_ingested"
rule shardwise-detect-alarm default detect \
	'{"source":["aws.cloudwatch"],"detail-type":["CloudWatch Alarm State Change"],"detail":{"alarmName":[{"prefix":"shardwise-"}],"state":{"value":["ALARM"]}}}'
rule shardwise-move-planned "$bus" move '{"source":["shardwise"],"detail-type":["Moves Planned"]}'
rule shardwise-replicas-stats "$bus" replicas "$stats_ingested"
rule shardwise-sandbox-stats "$bus" sandbox "$stats_ingested"

awslocal sqs create-queue --queue-name shardwise-dead-letters >/dev/null
echo "shardwise: table $table, bus $bus and rules ready"
