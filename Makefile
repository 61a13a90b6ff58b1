# kube-lite — see README.md. Every target is safe to run twice.
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
KUBE_LITE_DIR ?= $(CURDIR)/.kube-lite
export KUBE_LITE_DIR
GOTEST_FLAGS ?= -count=1
CMDS := $(notdir $(wildcard cmd/*))

.PHONY: all build deps test test-unit test-integration test-e2e test-compose bench up down compose-up compose-down lint images clean

all: build

# grpcnotrace drops gRPC's golang.org/x/net/trace (off unless a program turns
# it on; kube-lite never does). It pulls in html/template, whose calls by
# method name make the linker keep every exported method of every type: 40 %
# of the kubelet's mapped binary, resident for its whole life (docs/benchmarks.md,
# idle memory). The apiserver links x/net/trace through etcd's embed anyway.
GO_BUILD_FLAGS ?= -tags grpcnotrace

## build: compile every command into bin/
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build $(GO_BUILD_FLAGS) -o $(BIN)/ $(addprefix ./cmd/,$(CMDS))

## deps: install the Debian packages that are missing (idempotent)
deps:
	@hack/deps.sh base node

## test: every tier — unit, integration, end to end
test: deps
	@hack/test.sh

test-unit:
	$(GO) test $(GOTEST_FLAGS) ./pkg/... ./cmd/...

test-integration:
	$(GO) test $(GOTEST_FLAGS) ./test/integration/...

# The compose suite has its own tier (test-compose): it starts a docker engine.
test-e2e: build
	$(GO) test $(GOTEST_FLAGS) -p 1 -tags e2e -timeout 40m $$($(GO) list -tags e2e ./test/e2e/... | grep -v /test/e2e/compose)

## test-compose: the multi-node docker-compose cluster's end-to-end tests
test-compose: build
	@SKIP_BUILD=1 hack/compose.sh test

## images: OCI image tarballs (pause, busybox, testapp) for the kubelet's --image-dir
images:
	@hack/images.sh $(KUBE_LITE_DIR)/images

## bench: benchmarks that print figures (see docs/benchmarks.md)
bench: build
	@hack/bench.sh

## up: start a local one-node cluster on an embedded etcd; down: stop it
up: deps build
	@hack/up.sh

down:
	@hack/down.sh

## compose-up / compose-down: a 3-node cluster in docker-compose (deploy/compose)
compose-up: build
	@hack/deps.sh compose
	@SKIP_BUILD=1 hack/compose.sh up

compose-down:
	@hack/compose.sh down

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@# Functions that neither a binary nor a test reaches.
	@out=$$($(GO) run golang.org/x/tools/cmd/deadcode@v0.39.0 -test ./...) && test -z "$$out" || { echo "$$out"; echo "lint: unreachable functions (deadcode)"; exit 1; }
	@# The apiserver registers only the API groups it serves (docs/benchmarks.md, "Idle memory"):
	@# client-go's typed Clientset would link and register every group again.
	@! $(GO) list -deps ./cmd/kube-lite-apiserver | grep -qx 'k8s.io/client-go/kubernetes' || { echo "lint: kube-lite-apiserver links k8s.io/client-go/kubernetes"; exit 1; }
	@# So does kube-lite-proxy, whose idle RSS it took from 31 to 24 MiB (docs/benchmarks.md, "Service proxy").
	@! $(GO) list -deps ./cmd/kube-lite-proxy | grep -qx 'k8s.io/client-go/kubernetes' || { echo "lint: kube-lite-proxy links k8s.io/client-go/kubernetes"; exit 1; }

clean:
	rm -rf $(BIN)
