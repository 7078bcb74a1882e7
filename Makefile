# shardwise build, test and packaging. GNU make + bash; needs only Go, Python 3 and make.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules

BIN := $(CURDIR)/bin
CACHE := $(CURDIR)/.cache
BUILD := $(CURDIR)/build

# Pinned tool versions: bump deliberately, in one place.
GOLANGCI_LINT_VERSION := 2.15.0
GOLANGCI_LINT := $(BIN)/golangci-lint
# The Lambda Runtime Interface Emulator, built from its Go module: the proxy serves this
# pseudo-version, not the tagged releases. functions/lambda_test.go pins the same one, and builds
# it there itself when it is missing.
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE_PACKAGE := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE := $(CURDIR)/.cache/bin/aws-lambda-rie

FUNCTIONS := ingest detect move replicas sandbox
# What `shardwise version` and each function's start-up log report, set with the linker: the
# tag (or "dev" before the first one) and the commit.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_LDFLAGS := -X github.com/shardwise/shardwise/shared/buildinfo.Version=$(VERSION) -X github.com/shardwise/shardwise/shared/buildinfo.Commit=$(COMMIT)
# Every Go file of ours, NUL-separated: not the caches and outputs, not testdata, whose files
# may be malformed on purpose.
GO_FILES := find . \( -path ./.git -o -path ./.cache -o -path ./bin -o -path ./build -o -path ./.aws-sam \
	-o -name testdata \) -prune -o -name '*.go' -print0
FUZZTIME ?= 10s
# QUICK=1 makes `make bench` run the small scenarios only (shardwise bench --quick).
QUICK ?=
# The fault test's seeds in `make faults` (without the race detector; the unit run uses 25).
FAULT_SEEDS ?= 200
# The race detector covers every package: on 2 cores it took the shared/ tests from 2m00s to
# 2m51s, cold caches both times. It needs cgo, hence a C compiler; where there is none the tests
# run without it. RACE= turns it off, TEST_PKGS=... narrows the run.
RACE ?= $(if $(shell command -v "$$(go env CC)" 2>/dev/null),-race)
TEST_PKGS ?= ./...
# A test binary's whole-run deadline. go test's default of 10 minutes is a wall-clock race on a
# loaded 2-core machine (shared/runner took 588 s under the race detector with one core busy); a
# hung test still fails, just later.
TEST_TIMEOUT ?= 45m

.PHONY: help
help: ## List targets.
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

.PHONY: run
run: ## Run the write-hotspot scenario against the built-in simulator, acting (not dry-run).
	go run ./cmd/shardwise simulate --scenario scenarios/write-hotspot.json --dry-run=false

.PHONY: test
test: fmt-check tidy-check vet lint unit properties faults fuzz template-check template-lint ## The full gate, as CI runs it. (`unit` includes the moto deploy test, TestCloudFormationDeploy; `make deploy-test` runs it alone.)

.PHONY: fmt-check
fmt-check: ## Fail, listing the files, if any Go file is not gofmt-formatted.
	@unformatted="$$($(GO_FILES) | xargs -0 -r gofmt -l)"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi

.PHONY: fmt
fmt: ## Format all Go files in place.
	$(GO_FILES) | xargs -0 -r gofmt -w

.PHONY: tidy-check
tidy-check: ## Fail, showing the diff, if go.mod or go.sum is not what `go mod tidy` makes.
	go mod tidy -diff

.PHONY: vet
vet: ## go vet every package.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint with .golangci.yml.
	$(GOLANGCI_LINT) run ./...

.PHONY: unit
unit: ## go test every package (race detector on; see RACE).
	@if [[ -z "$(RACE)" ]]; then echo "unit: running without the race detector (no C compiler, or RACE=)"; fi
	go test $(RACE) -count=1 -timeout $(TEST_TIMEOUT) $(TEST_PKGS)

# The packages whose tests record requests or calls on goroutines of their own (httptest handlers,
# recording proxies, fakes called from concurrent invocations): see race-stress.
RACE_STRESS_PKGS ?= ./shared/deploy/ ./functions/ ./shared/runner/ ./shared/opensearch/ ./shared/engine/ ./shared/collect/ ./shared/handler/ ./cmd/shardwise/
RACE_STRESS_COUNT ?= 5

.PHONY: race-stress
race-stress: ## Not in the gate: run the packages with recorders on other goroutines under -race, RACE_STRESS_COUNT times each (run it beside `stress-ng --cpu 1` to see what a loaded machine sees).
	@if [[ -z "$(RACE)" ]]; then echo "race-stress: the race detector needs a C compiler"; exit 1; fi
	go test -race -count=$(RACE_STRESS_COUNT) -timeout $(TEST_TIMEOUT) $(RACE_STRESS_PKGS)

.PHONY: properties
properties: ## The whole-scenario property suites (scenarios/, random clusters, random segment-replication clusters, random clusters on a managed domain that refuses reroute, random clusters with a rollover onto a node that has just joined) without the race detector; SEEDS=200 runs that many random clusters (default 24).
	$(if $(SEEDS),SHARDWISE_RANDOM_SEEDS=$(SEEDS)) go test -count=1 -timeout $(TEST_TIMEOUT) -run '^(TestBalancerScenarios|TestRandomClusters|TestRandomSegrepClusters|TestRandomManagedClusters|TestRandomRolloverClusters)$$' -v ./shared/runner \
		| grep -vE '^\s*(=== (RUN|PAUSE|CONT|NAME)|--- PASS: TestRandom(Segrep|Managed|Rollover)?Clusters/seeds/)'

.PHONY: faults
faults: ## Randomized fault test: FAULT_SEEDS scenarios with API errors, latency, reroute refusals, node loss.
	SHARDWISE_FAULT_SEEDS=$(FAULT_SEEDS) go test -count=1 -timeout $(TEST_TIMEOUT) -run '^TestFaults$$' -v ./shared/runner | grep -E '^(fault test:|---|ok|FAIL|PASS)' | grep -v -- '--- PASS: TestFaults/seeds/'

.PHONY: rie
rie: ## Invoke the five Lambda binaries through the Runtime Interface Emulator with events/*.json (moto, simulator); `unit` runs it too.
	go test -count=1 -run '^TestLambdaRIE$$' -v ./functions

.PHONY: rie-install
rie-install: ## Build the pinned Lambda Runtime Interface Emulator into .cache/bin, where the RIE test looks (CI runs this).
	@mkdir -p "$(dir $(RIE))"
	@tmp="$$(mktemp -d "$(dir $(RIE))rie-build-XXXXXX")"; trap 'rm -rf "$$tmp"' EXIT; \
	GOFLAGS= CGO_ENABLED=0 GOBIN="$$tmp" go install $(RIE_PACKAGE)@$(RIE_VERSION); \
	mv "$$tmp/aws-lambda-rie" "$(RIE)"; \
	go version -m "$(RIE)" | sed -n 2,3p

.PHONY: fuzz
fuzz: ## Run every Fuzz* target in the repo for FUZZTIME each.
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

.PHONY: it
it: ## Integration tests on a real three-node OpenSearch 2.19 (scripts/opensearch.sh), then it-wlm.
	@trap 'scripts/opensearch.sh stop' EXIT; \
	exports="$$(scripts/opensearch.sh start)"; \
	eval "$$exports"; \
	started=$$SECONDS; \
	go test -tags integration -count=1 -v -timeout 35m -skip '^TestWLM' ./it/...; \
	echo "it: tests took $$((SECONDS - started))s after a $${SHARDWISE_OPENSEARCH_STARTUP_SECONDS}s start-up"
	@$(MAKE) --no-print-directory it-wlm

# The workload-management node runs after the 2.19 cluster has stopped: the test measures latency,
# which three other JVMs on the same two cores would decide instead of the plugin.
.PHONY: it-wlm
it-wlm: ## The workload-management integration test (TestWLM*) on a one-node OpenSearch 3.8 with the plugin, fetched, assembled, started and stopped by scripts/opensearch-wlm.sh.
	@trap 'scripts/opensearch-wlm.sh stop' EXIT; \
	exports="$$(scripts/opensearch-wlm.sh start)"; \
	eval "$$exports"; \
	started=$$SECONDS; \
	go test -tags integration -count=1 -v -timeout 20m -run '^TestWLM' ./it/; \
	echo "it-wlm: tests took $$((SECONDS - started))s after a $${SHARDWISE_OPENSEARCH_STARTUP_SECONDS}s start-up"

# Whether `make bench` regenerates docs/results.md and docs/bench: always after a full bench; after
# a quick one only with DOCS=1, so a quick check leaves the published results alone.
BENCH_DOCS := $(if $(filter-out 0,$(QUICK)),$(filter-out 0,$(DOCS)),1)
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser)

.PHONY: bench
bench: ## Run every scenario with every balancer into build/bench (results.md, results.json, report.html), then regenerate docs/results.md and docs/bench; QUICK=1: small scenarios only, docs left alone unless DOCS=1.
	go run ./cmd/shardwise bench --scenarios scenarios --out $(BUILD)/bench $(if $(filter-out 0,$(QUICK)),--quick)
	$(if $(BENCH_DOCS),go run ./cmd/shardwise bench-docs --results $(BUILD)/bench/results.json --docs docs,@echo "docs/ left as they are: a quick bench regenerates them only with DOCS=1")

.PHONY: bench-docs
bench-docs: ## The full bench, then docs/results.md, docs/bench and the report's first screen (1400x900, headless Chromium).
	$(MAKE) bench QUICK=
	$(MAKE) bench-screenshots

.PHONY: bench-docs-render
bench-docs-render: ## Re-render docs/results.md and docs/bench from docs/bench/results.json, without running the bench (after a change to the report's or the page's generator).
	go run ./cmd/shardwise bench-docs --results docs/bench/results.json --docs docs

.PHONY: bench-screenshots
bench-screenshots: ## Screenshot the first screen of build/bench/report.html (1400x900, headless Chromium) into docs/bench/report-screenshot.png.
	@if [[ -z "$(CHROMIUM)" ]]; then echo "bench-screenshots: no chromium on PATH (apt-get install -y chromium)"; exit 1; fi
	"$(CHROMIUM)" --headless --no-sandbox --disable-gpu --hide-scrollbars --run-all-compositor-stages-before-draw \
		--virtual-time-budget=30000 --window-size=1400,900 \
		--screenshot="$(CURDIR)/docs/bench/report-screenshot.png" "file://$(BUILD)/bench/report.html" 2>/dev/null
	@echo "wrote docs/bench/report-screenshot.png"

.PHONY: bench-go
bench-go: ## Run every Go benchmark once, with allocations.
	go test -run='^$$' -bench=. -benchmem ./...

.PHONY: build
build: ## Build each Lambda as build/<fn>/bootstrap for provided.al2023 on arm64, and the CLI as build/shardwise, version and commit set.
	@for fn in $(FUNCTIONS); do \
		echo "build/$$fn/bootstrap"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w $(VERSION_LDFLAGS)' \
			-o "$(BUILD)/$$fn/bootstrap" "./functions/$$fn"; \
	done
	@echo "build/shardwise"; CGO_ENABLED=0 go build -trimpath -ldflags='$(VERSION_LDFLAGS)' -o "$(BUILD)/shardwise" ./cmd/shardwise

.PHONY: sam-build
# sam build's Go builder runs `go build` with the environment it is given and takes no flags of
# its own, so the build tags and the version's linker flags travel in GOFLAGS (its quoting keeps
# the one -ldflags value whole).
sam-build: ## Build the functions as `sam build` does from template.yaml (Go builder, arm64), into .aws-sam/, version and commit set.
	GOFLAGS="$$(go env GOFLAGS) -tags=lambda.norpc '-ldflags=$(VERSION_LDFLAGS)'" SAM_CLI_TELEMETRY=0 \
		"$$(scripts/venv.sh)/sam" build --template-file template.yaml

.PHONY: template
template: ## Regenerate template.yaml from shared/deploy.
	@tmp="$$(mktemp)"; trap 'rm -f "$$tmp"' EXIT; \
	go run ./cmd/shardwise template > "$$tmp"; \
	cat "$$tmp" > template.yaml; echo "wrote template.yaml"

.PHONY: template-check
template-check: ## Fail if template.yaml differs from what shared/deploy generates.
	@tmp="$$(mktemp)"; trap 'rm -f "$$tmp"' EXIT; \
	go run ./cmd/shardwise template > "$$tmp"; \
	if ! diff -u template.yaml "$$tmp"; then echo "template.yaml is stale: run 'make template'"; exit 1; fi

.PHONY: config-reference
config-reference: ## Regenerate docs/configuration.md from the configuration types, their defaults and doc comments.
	@tmp="$$(mktemp)"; trap 'rm -f "$$tmp"' EXIT; \
	go run ./cmd/shardwise config-reference > "$$tmp"; \
	cat "$$tmp" > docs/configuration.md; echo "wrote docs/configuration.md"

.PHONY: config-reference-check
config-reference-check: ## Fail if docs/configuration.md differs from what the code generates (go test ./shared/configref does the same).
	@tmp="$$(mktemp)"; trap 'rm -f "$$tmp"' EXIT; \
	go run ./cmd/shardwise config-reference > "$$tmp"; \
	if ! diff -u docs/configuration.md "$$tmp"; then echo "docs/configuration.md is stale: run 'make config-reference'"; exit 1; fi

.PHONY: template-lint
template-lint: ## Lint template.yaml with cfn-lint and `sam validate --lint` (installs them into .cache/venv).
	scripts/template-lint.sh template.yaml

.PHONY: deploy-test
deploy-test: ## Deploy template.yaml on moto's CloudFormation (aws-sam-translator, no Docker) and check every resource and reference.
	scripts/venv.sh >/dev/null
	go test -count=1 -run '^TestCloudFormationDeploy$$' -v ./shared/deploy

.PHONY: moto
moto: ## Start a moto server for the integration tests; eval the export line it prints.
	scripts/moto.sh start

.PHONY: moto-stop
moto-stop: ## Stop the moto server started by `make moto`.
	scripts/moto.sh stop

.PHONY: golangci-lint
golangci-lint: ## Install the pinned golangci-lint into ./bin when missing or of another version.
	@if [[ "$$($(GOLANGCI_LINT) version --short 2>/dev/null || true)" != "$(GOLANGCI_LINT_VERSION)" ]]; then \
		echo "installing golangci-lint v$(GOLANGCI_LINT_VERSION) into $(BIN)"; \
		rm -f $(GOLANGCI_LINT); \
		GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$(GOLANGCI_LINT_VERSION); \
	fi

.PHONY: clean
clean: ## Remove build output, installed tools and caches made by this Makefile.
	rm -rf $(BUILD) $(BIN) $(CACHE) .aws-sam
