# The two commands of the README: `make demo` runs the main job, `make test`
# runs the checks and the tests. Both install Debian's Chromium when none is
# found.
GO ?= go
# staticcheck and govulncheck run from their modules at fixed versions, so
# that no go.mod needs a tool dependency.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOVULNCHECK ?= golang.org/x/vuln/cmd/govulncheck@v1.9.0
export STATICCHECK GOVULNCHECK GO
# The modules of the repository: the library at the root, and beside it
# modules that carry the dependencies the library does not need: the
# commands (cmd), the Redis store (redisstore), the load and benchmark tools
# (bench). Every go.mod outside testdata is one, and go.work lists them all
# (make lint fails otherwise). Builds and tests run in the workspace, so a
# change to the library and to a module that uses it is tested together:
# the modules require each other at the placeholder version
# v0.0.0-00010101000000-000000000000, which go.work replaces by the working
# tree, and no go.mod carries a replace (`go install ...@version` refuses
# one). make install-check proves the modules install as their users get
# them, from a module proxy made of the working tree.
export GOWORK := $(CURDIR)/go.work
MODULES = $(shell $(GO) work edit -json $(CURDIR)/go.work | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')

.PHONY: lna-table fuzz-toolset flake jq install-check headless-shell bench-anchors bench-tasks image compat test lint demo agent-demo bench fuzz chromium redis proof fleet-load load snapshot-huge

chromium:
	@command -v chromium >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || \
		{ echo "installing Debian's chromium"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# Debian's headless shell: the sidecar prefers it when installed, and a
# session there costs a third of the CPU of the full browser (docs/load.md).
headless-shell:
	@command -v chromium-headless-shell >/dev/null 2>&1 || \
		{ echo "installing Debian's chromium-headless-shell"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell; }

redis:
	@command -v redis-server >/dev/null 2>&1 || \
		{ echo "installing Debian's redis-server"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }

# The scripts read go.mod and go.work as JSON (go mod edit -json) with jq.
jq:
	@command -v jq >/dev/null 2>&1 || \
		{ echo "installing Debian's jq"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq; }

# gofmt, the workspace (go.work and the go.mod files), go mod tidy, vet,
# staticcheck and govulncheck on every module (scripts/lint.sh);
# govulncheck is skipped, saying so, where its database cannot be reached.
lint: jq
	bash scripts/lint.sh

# The checks first: the tests run only when the lint is clean (run beside
# the tests, the lint took 310 s instead of 79 on two cores, and the tests
# slowed as much). Every module's tests run at once, and the target fails
# if any failed. They run on Debian's headless shell, which the sidecar
# prefers when it is installed (a session there costs a third of the CPU
# of the full browser); `make compat` runs the security matrix on the full
# browser and on old majors.
#
# go test's own vet pass is off: make lint ran the whole of go vet on
# every module just before.
#
# TEST_PARALLEL is how many of a package's parallel tests run at once (go
# test's -parallel). Two, go test's default on this machine: the modules
# already run side by side.
TEST_PARALLEL ?= 2
test: headless-shell redis lint
	@rc=0; out=$$(mktemp -d); i=0; \
	for m in $(MODULES); do \
		i=$$((i+1)); \
		( t0=$$(date +%s); cd $$m && $(GO) test -race -count=1 -vet=off -parallel $(TEST_PARALLEL) -timeout 60m ./... >$$out/$$i.log 2>&1; echo $$? >$$out/$$i.rc; \
		  echo $$(( $$(date +%s) - t0 )) >$$out/$$i.s ) & \
	done; wait; i=0; \
	for m in $(MODULES); do \
		i=$$((i+1)); echo "go test -race: $$m ($$(cat $$out/$$i.s) s, compiling included)"; cat $$out/$$i.log; \
		[ "$$(cat $$out/$$i.rc)" = 0 ] || rc=1; \
	done; rm -rf $$out; exit $$rc

# The install a user does, proven with no network for our own modules:
# every module of the repository goes, as a zip of the working tree, into
# a module proxy in a directory, at a pseudo-version of HEAD; then, in an
# empty module cache, `go install .../cmd/hybroute@that-version` and a
# fresh module that gets the library at that version and builds the
# README's example (scripts/install-check.sh).
install-check: jq
	bash scripts/install-check.sh

demo: chromium
	$(GO) run ./examples/dashboard

# A scripted agent loop using the browser toolset as a model would.
agent-demo: chromium
	$(GO) run ./examples/agent

bench: chromium
	@rc=0; for m in $(MODULES); do \
		(cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...) || rc=1; \
	done; exit $$rc

# An Exec right after a Navigate that failed, FLAKE_RUNS times: the state a
# failed navigation leaves a tab in must be one the next call handles
# (TestExecAfterAFailedNavigation; it failed 4 times in 60 before the fix).
FLAKE_RUNS ?= 500
flake: headless-shell
	HYBROUTE_FLAKE_RUNS=$(FLAKE_RUNS) $(GO) test -count=1 -timeout 120m -run '^TestExecAfterAFailedNavigation$$' .

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzVerdict -fuzztime 30s .
	$(GO) test -run '^$$' -fuzz FuzzScanURLs -fuzztime 30s ./internal/urlscan/

# The toolset fuzzed the way models misuse it (docs/figures.md, "The toolset
# fuzzed"): FUZZ_CALLS calls in process (TestToolsetFuzz) and FUZZ_CALLS
# over MCP with the SDK's client (TestToolsetFuzzOverMCP), on the headless
# shell; each prints its seed and figures, and on an invariant break the
# calls that led to it. FUZZ_SEED replays a run (make test runs a short one).
FUZZ_CALLS ?= 10000
FUZZ_SEED ?=
fuzz-toolset: headless-shell
	HYBROUTE_FUZZ_CALLS=$(FUZZ_CALLS) HYBROUTE_FUZZ_SEED=$(FUZZ_SEED) $(GO) test -count=1 -timeout 600m -v -run '^TestToolsetFuzz$$' ./agent/
	HYBROUTE_FUZZ_CALLS=$(FUZZ_CALLS) HYBROUTE_FUZZ_SEED=$(FUZZ_SEED) $(GO) -C mcpserver test -count=1 -timeout 600m -v -run '^TestToolsetFuzzOverMCP$$' .

# The load and fault suite of provider outages (docs/library.md, "Proof"): the
# 1,000-call outage, every kind of provider failure, a hanging provider,
# Release and Close during creation. Each test prints its figures.
proof: chromium
	HYBROUTE_PROOF=1 $(GO) test -count=1 -timeout 60m -v -run 'TestOutage|TestHangingProvider|TestEveryFailure|TestReleaseAndClose|TestCloseReleases|TestOneProbe|TestBrowsersKilled|TestCancellationStorm' .

# A snapshot of issue 38's 100,000-item page (docs/load.md, "A snapshot of
# a huge page"): the test process's live heap after it stays within its
# bound. The suite runs the same test on 5,000 items.
snapshot-huge: headless-shell
	HYBROUTE_SNAPSHOT_ITEMS=100000 $(GO) test -count=1 -timeout 60m -v -run '^TestSnapshotOfAHugePageIsBounded$$' ./agent/

# The fleet under load (docs/library.md, "Fleet"): three routers on one redis-server,
# each with its local Chromium, 50 new sessions at once against a provider
# with a real Chromium behind it, and the fleet's concurrency cap. It prints
# its figures and asserts counts. The test is redisstore's.
fleet-load: chromium redis
	HYBROUTE_FLEET_LOAD=1 $(GO) -C redisstore test -count=1 -timeout 30m -v -run '^TestFleetCapLoad$$' .

# The Chromium matrix (docs/library.md, "Supported browsers"): route, guard, egress and
# rate-limit fallback tests against headless-shell builds of several majors and the
# system's Chromium, one table row per browser. COMPAT_MAJORS picks the
# majors; CI runs a few of them.
COMPAT_MAJORS ?= 130 131 138 143 148 153
COMPAT_SHELL ?= 1
compat: chromium
	COMPAT_SHELL=$(COMPAT_SHELL) bash scripts/compat.sh $(COMPAT_MAJORS)

# What Chromium's own Local Network Access check refuses, per major
# (docs/security.md, "The browser's own check"): TestLocalNetworkAccessTable
# on the system's Chromium and on the compat builds of LNA_MAJORS, each in a
# network namespace with decoys (root). A few minutes a browser.
LNA_MAJORS ?= 138 148
lna-table: chromium
	bash scripts/compat.sh --fetch $(LNA_MAJORS)
	@cache=$${HYBROUTE_COMPAT_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/hybroute-compat}; \
	for b in $$(command -v chromium) $(foreach m,$(LNA_MAJORS),$$cache/$(m)/chromium); do \
		CHROMIUM=$$b HYBROUTE_LNA_TABLE=1 $(GO) test -count=1 -timeout 30m -v -run '^TestLocalNetworkAccessTable$$' . || exit 1; \
	done

# The container image of hybroute mcp (Dockerfile), where Docker exists.
image:
	@command -v docker >/dev/null 2>&1 || { echo "make image: no docker on this machine"; exit 1; }
	docker build -t hybroute .

# The MCP server under load (docs/load.md): for each count in LOAD_CLIENTS,
# a fresh "hybroute mcp --http" on loopback and that many SDK clients at
# once, each navigate → snapshot → click → exec → close on a loopback page;
# then LOAD_ABANDON sessions that navigate once and go away without ending
# their session, against the server's session and memory caps. It prints a
# table per count and fails on any failure that is not a prompt "busy".
LOAD_CLIENTS ?= 10,25,50,100
LOAD_ABANDON ?= 500
load: headless-shell
	@mkdir -p bin
	$(GO) -C cmd build -o $(CURDIR)/bin/hybroute ./hybroute
	$(GO) -C bench build -o $(CURDIR)/bin/hybroute-load ./hybroute-load
	./bin/hybroute-load -server bin/hybroute -clients $(LOAD_CLIENTS)
	./bin/hybroute-load -server bin/hybroute -abandon $(LOAD_ABANDON) -server-flag=--max-sessions=50 -server-flag=--max-local-memory=1GiB

# hybroute mcp side by side with Playwright MCP and chrome-devtools-mcp
# (docs/figures.md, "Against the anchors"): the anchors are installed from npm once
# into a cache outside the repository, with no browser download; one MCP
# client drives all three over the same scripted session on loopback pages
# and prints p50/p95 per tool and the snapshot sizes. BENCH_FLAGS passes
# more flags, e.g. BENCH_FLAGS="-only exec,screenshot -pause 150ms".
BENCH_ROUNDS ?= 20
BENCH_FLAGS ?=
bench-anchors: chromium
	bash scripts/bench-anchors.sh -rounds $(BENCH_ROUNDS) $(BENCH_FLAGS)

# The task suite (issue 36, docs/figures.md, "What the model reads"): the
# same three servers, driven the same way, each run thirteen scripted tasks
# over loopback sites; it prints per task the tokens, characters, calls,
# success and wall time of each, and the largest answers. Not part of make
# test: it takes a few minutes. BENCH_TASK_ROUNDS above 1 warms the servers
# up: the table is the last round's.
BENCH_TASK_ROUNDS ?= 1
bench-tasks: chromium
	bash scripts/bench-anchors.sh -tasks -rounds $(BENCH_TASK_ROUNDS)
