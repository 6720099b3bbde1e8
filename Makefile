# skiff — see README.md. All targets run from the repository root.
SHELL := /bin/bash
GO ?= go
PKG := github.com/skiffhq/skiff
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || echo 1970-01-01T00:00:00Z)
LDFLAGS := -s -w -X $(PKG)/internal/version.version=$(VERSION) -X $(PKG)/internal/version.commit=$(COMMIT) -X $(PKG)/internal/version.buildDate=$(BUILD_DATE)
GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)"
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 10000x
# Debian packages the test suites need; scripts/ensure-deps installs the missing ones.
TEST_DEPS ?= containerd runc busybox-static iproute2 nftables curl chromium rpm postgresql qemu-system-x86 qemu-user-static util-linux
# nfpm builds the .deb and .rpm; it runs as a pinned tool and is not a
# dependency of the skiff module.
NFPM ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
# PKG_VERSION is valid for both dpkg and rpm (see scripts/pkg-version).
PKG_VERSION ?= $(shell scripts/pkg-version)
# PKG_ARCHES are Go architecture names; arm7 is Debian's armhf and RPM's
# armv7hl.
PKG_ARCHES ?= amd64 arm64 arm7
PKG_DIR ?= dist

.PHONY: all build build-all test test-vm test-arm test-faults test-unit fuzz-smoke bench bench-datastores fleet lint run clean-run package clean deps soak

all: build

build:
	$(GOBUILD) -o bin/skiff ./cmd/skiff

build-all:
	GOOS=linux GOARCH=amd64 $(GOBUILD) -o dist/skiff-linux-amd64 ./cmd/skiff
	GOOS=linux GOARCH=arm64 $(GOBUILD) -o dist/skiff-linux-arm64 ./cmd/skiff
	GOOS=linux GOARCH=arm GOARM=7 $(GOBUILD) -o dist/skiff-linux-armv7 ./cmd/skiff
	@ls -l dist/skiff-linux-*

# kubectl (v1.32 on these machines) drives test/kubectl; where it is
# missing, try the kubectl package, then Debian's own kubernetes-client.
deps:
	@scripts/ensure-deps $(TEST_DEPS)
	@command -v kubectl >/dev/null || scripts/ensure-deps kubectl || scripts/ensure-deps kubernetes-client

# test runs every suite CI runs: vet, unit and integration tests (with the
# race detector), the arm64 and armv7 runs (test-arm), each fuzz target
# briefly over its committed corpus, then the agent's real-containerd
# suites again in a cgroup v2 VM (test-vm). test/qemuarm runs once, in
# test-arm.
test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/test/qemuarm$$')
	# sizes of a release build's stacks, which -race changes:
	$(GO) test -count=1 -timeout 5m -run '^TestSharedStreamWaitsOnASmallStack$$' ./server
	$(MAKE) --no-print-directory test-arm
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory test-vm

# test-vm boots Debian's kernel (apt-get download linux-image-amd64 into
# $(VM_CACHE), reused) under qemu TCG with cgroup v2 alone and runs the
# agent's real-containerd suites inside, then cuts the power twice under
# a store writing to a disk (-powercut); see test/vm and
# docs/operations.md. VM_FLAGS=-v prints the whole console.
VM_CACHE ?= $(HOME)/.cache/skiff-vm
VM_FLAGS ?=
test-vm:
	@scripts/ensure-deps qemu-system-x86 containerd runc busybox-static iproute2 nftables curl e2fsprogs
	$(GO) run ./test/vm -cache $(VM_CACHE) $(VM_FLAGS)
	$(GO) run ./test/vm -cache $(VM_CACHE) -powercut 2 $(VM_FLAGS)

# test-arm runs the portable packages' tests as linux/arm64 and linux/arm
# (GOARM=7) binaries under qemu-user-static, invoked explicitly (no
# binfmt_misc needed), after `go vet` as GOARCH=arm. scripts/test-arm
# lists which packages run and, for each, the host-only tests left out
# (real containerd, cgroups, network namespaces) and why; a package in
# neither list fails the run. Then test/qemuarm starts the armv7 and
# arm64 `skiff server --disable-agent` under the emulators and creates a
# pod over HTTPS. ARM_ARCHES="armv7" limits scripts/test-arm to one
# architecture; docs/operations.md "Tested platforms" has the details.
test-arm:
	@scripts/test-arm
	$(GO) test -count=1 -timeout 10m ./test/qemuarm

# test-faults runs the fault suite's long form: test/faults (a server
# host and two agent hosts in network namespaces: partition beyond the
# production grace and eviction timeouts, the server away for 10 minutes,
# a lossy and slow link for 3 minutes, clock skew) and the agent-local
# faults under test/faults/. `make test` runs the short form (a few
# minutes). See docs/operations.md, "Fault suite".
test-faults: deps
	SKIFF_FAULTS_LONG=1 $(GO) test -count=1 -timeout 60m -v ./test/faults/...
# soak churns 10 pod creates and deletes a second, with Deployments
# scaling, against a real `skiff server` and `skiff agent` on a containerd
# of its own, for DURATION, sampling DB and WAL size, RSS and goroutines
# of both; it writes soak.csv and soak.png to SOAK_OUT and prints a
# summary (docs/operations.md, "Soak"). SOAK_TIMEOUT must exceed
# DURATION by 10 minutes. SOAK_EVENT_TTL is the server's --event-ttl
# (empty: its default, 1h, so the database grows for the first hour).
DURATION ?= 1h
SOAK_OUT ?= soak-out
SOAK_TIMEOUT ?= 3h
SOAK_EVENT_TTL ?=
soak:
	SKIFF_SOAK_DURATION=$(DURATION) SKIFF_SOAK_OUT=$(abspath $(SOAK_OUT)) SKIFF_SOAK_EVENT_TTL=$(SOAK_EVENT_TTL) $(GO) test -count=1 -v -run '^TestSoak$$' -timeout $(SOAK_TIMEOUT) ./test/soak

fuzz-smoke:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) >/tmp/skiff-fuzz.log 2>&1 || { cat /tmp/skiff-fuzz.log; exit 1; }; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./...

# bench-datastores compares SQLite and PostgreSQL (a private cluster with
# fsync on, see internal/pgtest) in one run, then times leader failover
# (docs/benchmarks.md, "Several servers on PostgreSQL").
bench-datastores:
	$(GO) test ./storage -run '^$$' -bench 'BenchmarkBackends|BenchmarkPostgres|BenchmarkSQLiteList10kPods' -benchtime 3s -count=1 -timeout 20m
	$(GO) test ./server -run 'TestPostgresTwoServersKillLeader' -count=3 -v -timeout 10m | grep -E 'leader killed|acknowledged writes|^--- '

# fleet runs the fleet simulator (test/fleet): AGENTS simulated agents
# against one `skiff server` on loopback, through join, steady
# heartbeats, direct binds, a Deployment of AGENTS replicas spread by
# zone and a server restart (docs/benchmarks.md, "Fleet"). Each agent
# holds the real agent's connections (two files in each process): a
# 20,000-file limit fits 9,000; FLEET_FLAGS=-full=false for pod-watch-only
# agents as in the rounds before 2026-12-03.
AGENTS ?= 9000
FLEET_FLAGS ?=
fleet:
	$(GO) run ./test/fleet/fleetsim -agents $(AGENTS) $(FLEET_FLAGS)

lint:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...

# run starts a one-machine cluster with its data under ./.skiff/, in the
# foreground (Ctrl-C stops it gracefully). It needs containerd and runc:
# as root it installs the missing ones (Debian's packages), otherwise it
# prints the apt-get line. clean-run stops it and removes ./.skiff.
RUN_DIR ?= ./.skiff
RUN_LISTEN ?= 127.0.0.1:7443
RUN_ABS = $(abspath $(RUN_DIR))
run: build
	@command -v containerd >/dev/null && command -v runc >/dev/null || scripts/ensure-deps containerd runc
	@echo "skiff: data in $(RUN_DIR)/ (make clean-run removes it)"
	@echo "  dashboard:   https://$(RUN_LISTEN)/  (the CA is $(RUN_DIR)/server/tls/ca.crt)"
	@echo "  admin token: $(RUN_DIR)/server/admin.token"
	@echo "  curl:        curl --cacert $(RUN_DIR)/server/tls/ca.crt -H \"Authorization: Bearer \$$(cat $(RUN_DIR)/server/admin.token)\" https://$(RUN_LISTEN)/api/v1/namespaces"
	@echo "  kubectl:     export KUBECONFIG=$(RUN_ABS)/server/kubeconfig.yaml"
	@echo "  skiff:       export SKIFF_CONFIG=$(RUN_ABS)/server/skiff.yaml; ./bin/skiff get pods"
	@echo "  preflight:   ./bin/skiff check --config '' --data-dir $(RUN_DIR) (before starting)"
	@exec ./bin/skiff server --config "" --data-dir $(RUN_ABS) --listen $(RUN_LISTEN)

clean-run:
	@scripts/clean-run $(RUN_DIR)

# package writes $(PKG_DIR)/skiff_<version>_<arch>.deb and
# $(PKG_DIR)/skiff-<version>.<arch>.rpm for each of PKG_ARCHES; see
# packaging/README.md. packaging/package_test.go (part of make test)
# builds the amd64 ones and checks them.
package:
	@set -e; mkdir -p $(PKG_DIR); v='$(PKG_VERSION)'; [ -n "$$v" ] || { echo "make package: no version (scripts/pkg-version failed)"; exit 1; }; \
	for a in $(PKG_ARCHES); do \
	  case $$a in \
	    amd64) goenv="GOARCH=amd64"; deb=amd64; rpm=x86_64 ;; \
	    arm64) goenv="GOARCH=arm64"; deb=arm64; rpm=aarch64 ;; \
	    arm7)  goenv="GOARCH=arm GOARM=7"; deb=armhf; rpm=armv7hl ;; \
	    *) echo "make package: unknown arch $$a (want amd64, arm64 or arm7)"; exit 1 ;; \
	  esac; \
	  bin=$(PKG_DIR)/skiff-linux-$$a; \
	  env GOOS=linux $$goenv $(GOBUILD) -o $$bin ./cmd/skiff; \
	  ARCH=$$a VERSION=$$v BINARY=$$bin $(NFPM) package -f packaging/nfpm.yaml -p deb -t $(PKG_DIR)/skiff_$${v}_$$deb.deb; \
	  ARCH=$$a VERSION=$$v BINARY=$$bin $(NFPM) package -f packaging/nfpm.yaml -p rpm -t $(PKG_DIR)/skiff-$$v.$$rpm.rpm; \
	done

clean:
	rm -rf bin dist
