#!/usr/bin/env bash
# Deploys the stack into LocalStack (localstack/docker-compose.yml, started first) and runs one
# cycle against the compose OpenSearch:
#
#   1. `make sam-build`, then `sam deploy` of the built template with every AWS call sent to
#      LocalStack (AWS_ENDPOINT_URL; S3 through s3.localhost.localstack.cloud, which resolves to
#      127.0.0.1, for the packaged code), one cluster `local` at http://opensearch:9200 (the compose
#      service, reached over the compose network, see LAMBDA_DOCKER_NETWORK), no auth, dry run;
#   2. `sam remote invoke` of ingest for that cluster, as the cadence would;
#   3. the Stats Ingested event it publishes reaches detect, replicas and sandbox through the bus:
#      their logs are printed with `sam logs`.
#
#   scripts/localstack-deploy.sh            deploy and run the cycle
#   scripts/localstack-deploy.sh --print    print the commands it would run, run nothing
#
# LOCALSTACK_ENDPOINT (default http://localhost:4566) and SHARDWISE_LOCALSTACK_STACK (default
# shardwise-local) override the endpoint and the stack name. Needs Docker for LocalStack and its
# Lambda containers, so it was never run where this project is built; see localstack/README.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
endpoint="${LOCALSTACK_ENDPOINT:-http://localhost:4566}"
stack="${SHARDWISE_LOCALSTACK_STACK:-shardwise-local}"
cluster=local

print=false
case "${1:-}" in
"") ;;
--print) print=true ;;
*)
	echo "usage: scripts/localstack-deploy.sh [--print]" >&2
	exit 2
	;;
esac

# run COMMAND...: runs it, or with --print shows it, quoted as a shell would need it.
run() {
	if $print; then
		printf '%q ' "$@"
		echo
	else
		"$@"
	fi
}

# LocalStack answers any credentials; the region must match the compose file's.
export AWS_ENDPOINT_URL="$endpoint" AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test SAM_CLI_TELEMETRY=0
export AWS_ENDPOINT_URL_S3="${AWS_ENDPOINT_URL_S3:-http://s3.localhost.localstack.cloud:4566}"

if $print; then
	sam="$root/.cache/venv/bin/sam"
	echo "# environment: AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3=$AWS_ENDPOINT_URL_S3 AWS_REGION=$AWS_REGION"
else
	sam="$("$root/scripts/venv.sh")/sam"
	if ! curl -fsS "$endpoint/_localstack/init/ready" >/dev/null; then
		echo "LocalStack does not answer at $endpoint: cd localstack && docker compose up -d --wait" >&2
		exit 1
	fi
fi

cd "$root"
run make sam-build
run "$sam" deploy --template-file .aws-sam/build/template.yaml --stack-name "$stack" \
	--resolve-s3 --capabilities CAPABILITY_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
	--parameter-overrides "ClusterEndpoints=$cluster=http://opensearch:9200" AuthMode=none DryRun=true \
	LogLevel=debug

# One cycle: ingest the cluster now; its Stats Ingested event starts the rest through the bus.
run "$sam" remote invoke IngestFunction --stack-name "$stack" --event "{\"cluster\":\"$cluster\"}"

for fn in IngestFunction DetectFunction ReplicasFunction SandboxFunction; do
	run "$sam" logs --stack-name "$stack" --name "$fn" --start-time '10min ago'
done
