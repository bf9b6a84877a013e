# Each target is a command a person could type.
GO ?= go

.PHONY: test quick script demo bench fuzz update fmt vet cross build agentclis

# What CI runs: vet, then every test (unit tests and testscript scenarios) with the race detector.
# atexit_sleep_ms=0: the scenarios start many short-lived server processes, and the race
# runtime would otherwise idle a second in each on exit (races found are still reported).
test: vet cross
	GORACE=atexit_sleep_ms=0 $(GO) test -race -count=1 -timeout 30m ./...

vet:
	$(GO) vet ./...

# aipm builds for macOS and Windows too (the tests need Linux's inotify, fifos and rusage).
cross:
	GOOS=darwin $(GO) build -o /dev/null ./cmd/aipm
	GOOS=windows $(GO) build -o /dev/null ./cmd/aipm

# The inner loop, in seconds rather than minutes: vet, and the unit tests of every package
# but the scenarios of cmd/aipm (no race detector, -short skips the slowest tests). Then
# run the scenarios an edit touches with `make script RUN=<regexp>`, e.g. RUN='sync_|run_team'.
quick: vet
	$(GO) test -short -count=1 ./filestore/... ./tools/ ./watch/ ./cmd/aipm/internal/...

RUN ?= .
script:
	GORACE=atexit_sleep_ms=0 $(GO) test -race -count=1 -run 'TestScripts/($(RUN))' ./cmd/aipm

# The main job on its embedded default: a temporary project, agents, a task tree, a real MCP session.
demo:
	$(GO) run ./cmd/aipm demo

# Every benchmark (only here: `make test` passes no -bench), among them the wake latency
# of SPEC §10: watch.BenchmarkWakeLatency in one process, and BenchmarkWakeAcrossProcesses
# (cmd/aipm) between two real `aipm mcp` servers, which logs its p50/p99 over 200 messages;
# and BenchmarkUI (cmd/aipm): `aipm ui` in Chromium at 2,000 and 10,000 tasks, its first load
# and what a change costs; and BenchmarkOneShot (cmd/aipm): the commands that read the whole
# project (task list, task tree, doctor) and task add at 200, 10,000 and 100,000 tasks, each
# beside its floor in the same run (cat of the same files; task add at 200 tasks).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -timeout 90m ./...

# Short fuzzing runs of the store's parsers (kept out of `make test`).
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzReadLines -fuzztime=20s ./filestore/internal/engine/
	$(GO) test -run='^$$' -fuzz=FuzzRepairTail -fuzztime=20s ./filestore/internal/engine/
	$(GO) test -run='^$$' -fuzz=FuzzValidateIDs -fuzztime=20s ./filestore/
	$(GO) test -run='^$$' -fuzz=FuzzTaskDecode -fuzztime=20s ./filestore/
	$(GO) test -run='^$$' -fuzz=FuzzMerge -fuzztime=20s ./filestore/merge/
	$(GO) test -run='^$$' -fuzz=FuzzQuickMessage -fuzztime=20s ./filestore/
	$(GO) test -run='^$$' -fuzz=FuzzQuickLineKey -fuzztime=20s ./filestore/

# Rewrite golden sections of testscript scenarios (e.g. the tools/list snapshot).
update:
	$(GO) test ./cmd/aipm -run TestScripts -update

fmt:
	gofmt -w $$(git ls-files '*.go')

build:
	CGO_ENABLED=0 $(GO) build -o bin/aipm ./cmd/aipm

# The real agent CLIs (Claude Code, Codex, Gemini CLI) at the versions pinned in
# testdata/agentclis/package-lock.json, for the end-to-end scenarios in testdata/e2e/
# (they skip when a CLI is missing, except under CI). Install scripts are not run (some
# would compile native modules the tests never load), except Claude Code's, which puts its
# native binary in place.
agentclis:
	npm ci --prefix testdata/agentclis --ignore-scripts --no-audit --no-fund
	cd testdata/agentclis && node node_modules/@anthropic-ai/claude-code/install.cjs
