# diskhealth: the disk_health receiver and the otelcol-diskhealth distribution.
#   make run    build the collector and run it on this host (config/default.yaml)
#   make test   everything: generated-code drift, vet/gofmt/golangci-lint, unit + golden + fuzz seeds with -race,
#               the end-to-end tests against the built collector and real peers, and a smoke run of the
#               side-by-side benchmarks (bench/, its own module) on a small tree
#   make image  the container image for linux/amd64 and linux/arm64 (buildah, FROM scratch; deploy/image.sh):
#               manifest lists localhost/otelcol-diskhealth:<version> and :<version>-smart, sizes in
#               _build/image/sizes.tsv
#   make bench  the side-by-side suite against hostmetrics, the receiver's own benchmarks and the
#               collector's footprint (takes minutes); results in bench.out, see BENCHMARKS.md
#   make bench-latency  only the block latency source's benchmarks (root: BPF run time per I/O beside
#               bpftrace, fio IOPS A/B, memory and scrape cost per device); bench-latency.{out,md}
#   make bpf    regenerate the committed BPF objects (block and file latency) and their Go bindings (clang-14)

SHELL        := /bin/bash
GO           ?= go
OCB_VERSION  := v0.165.0
TOOLS_BIN    := $(CURDIR)/.tools
OCB          := $(TOOLS_BIN)/ocb
# golangci-lint, built from source through the module proxy like ocb; its config is .golangci.yml.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# helm v4, for deploy's Helm test (`helm template` of the upstream opentelemetry-collector chart with
# deploy/helm/values.yaml); built from source like ocb. The test runs `make -s helm` and reads the path.
HELM_VERSION := v4.3.2
HELM         := $(TOOLS_BIN)/helm-$(HELM_VERSION)
GO_TOOL      := $(GO) tool -modfile=$(CURDIR)/internal/tools/go.mod
DIST         := $(CURDIR)/_build/otelcol-diskhealth
# The whole-process comparison (bench/cmd/scrapecost): a collector with hostmetricsreceiver v0.165.1 only.
HM_DIST      := $(CURDIR)/_build-hostmetrics/otelcol-hostmetrics
RECEIVER     := receiver/diskhealthreceiver
GOTEST_FLAGS ?= -race -timeout 75m
BENCH_FLAGS  ?= -benchtime=1s -count=1
# The side-by-side suite: -count runs of each case, summarised by their medians (benchtable).
SIDE_FLAGS   ?= -benchtime=1s -count=3 -timeout 120m
FOOTPRINT    ?= 3m
SCRAPECOST   ?= 1m
# The latency sources' benchmarks (root): medians of -count runs, and the fio A/B (rounds in one run):
# block latency (biolat) and file latency (filelat).
BIOLAT       := ./$(RECEIVER)/internal/biolat/
FILELAT      := ./$(RECEIVER)/internal/filelat/
LAT_FLAGS    ?= -benchtime=1s -count=3
LATENCY_BENCH = $(GO) test -run '^$$' -bench . -skip FioIOPS -benchmem $(LAT_FLAGS) $(BIOLAT) $(FILELAT) && \
	$(GO) test -run '^$$' -bench FioIOPS -benchtime=1x -count=1 -timeout 30m $(BIOLAT) $(FILELAT)

.PHONY: all run build build-hostmetrics image helm test unit generate bpf lint bench bench-latency clean

all: build

$(OCB):
	GOBIN=$(TOOLS_BIN) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
	mv $(TOOLS_BIN)/builder $(OCB)

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS_BIN)/golangci-lint $(GOLANGCI_LINT)

# Built in a directory of its own and renamed into place: two checkouts or test runs building it at the
# same time each finish with a whole binary. -mod=mod: a GOFLAGS=-mod=readonly from the environment would
# refuse the download. `make -s helm` prints the binary's path (deploy's TestHelm* read it).
$(HELM):
	mkdir -p $(TOOLS_BIN) && tmp=$$(mktemp -d $(TOOLS_BIN)/.helm-XXXXXX) && \
	GOBIN=$$tmp GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION) && \
	mv $$tmp/helm $(HELM) && rmdir $$tmp

helm: $(HELM)
	@echo $(HELM)

# --skip-strict-versioning: the elasticsearch (v0.157.0) and file (v0.161.0) exporters are the newest
# versions the module proxy serves; they build into a v0.165.0 collector.
build: $(OCB)
	$(OCB) --config builder-config.yaml --skip-strict-versioning

# ocb writes the sources and go.mod, then fails in its own `go mod tidy` (a test dependency of one of
# hostmetrics' scrapers is not served); `go mod tidy -e` and `go build` in the folder finish it.
build-hostmetrics: $(OCB)
	-$(OCB) --config bench/otelcol-hostmetrics.yaml --skip-strict-versioning
	cd _build-hostmetrics && $(GO) mod tidy -e && $(GO) build -trimpath -o otelcol-hostmetrics .

run: build
	$(DIST) --config config/default.yaml

# The image's tag is the distribution's version (builder-config.yaml).
IMAGE        := localhost/otelcol-diskhealth:$(shell sed -n 's/^  version: *//p' builder-config.yaml)
ARM64_DIST   := $(CURDIR)/_build/image/linux/arm64/otelcol-diskhealth

image: build
	IMAGE=$(firstword $(subst :, ,$(IMAGE))) GO=$(GO) bash deploy/image.sh

# Every component: the receiver and each source's scraper. What mdatagen cannot express (log events)
# lives in a source's documentation-extra.md and is appended to its documentation.md.
COMPONENTS   := $(RECEIVER) $(patsubst %/metadata.yaml,%,$(wildcard $(RECEIVER)/internal/scraper/*/metadata.yaml))

# A source whose doc.go runs emitgen (internal/tools/emitgen) also gets, from the same metadata.yaml
# and after mdatagen, the fast emitter its scraper writes through (internal/metadata/generated_emitter.go).
EMITTERS     := $(patsubst %/doc.go,%,$(shell grep -l 'emitgen' $(RECEIVER)/internal/scraper/*/doc.go))

# The metadata.yaml files name semantic conventions v1.44.0, which go.opentelemetry.io/otel has no Go package
# for yet (v1.47.0 ends at v1.43.0): the generated code imports the receiver's internal/semconv/v1.44.0 (its
# schema URL) instead. Drop this step and that package when otel ships semconv/v1.44.0.
OTEL_SEMCONV  := go.opentelemetry.io/otel/semconv/v1.44.0
LOCAL_SEMCONV := github.com/diskhealth/diskhealth/$(RECEIVER)/internal/semconv/v1.44.0

# A source's hostmetrics.yaml (the metrics it emits under `conventions: hostmetrics`, hostmetrics' names)
# is generated first, into internal/hostmetrics; its documentation.md becomes documentation-hostmetrics.md.
generate:
	set -e; for d in $(COMPONENTS); do \
		if [ -f $$d/hostmetrics.yaml ]; then (cd $$d && $(GO_TOOL) mdatagen hostmetrics.yaml && mv documentation.md documentation-hostmetrics.md); fi; \
		(cd $$d && $(GO_TOOL) mdatagen metadata.yaml); \
		if [ -f $$d/documentation-extra.md ]; then printf '\n' >> $$d/documentation.md; cat $$d/documentation-extra.md >> $$d/documentation.md; fi; \
	done
	cd internal/tools && $(GO) run ./emitgen $(addprefix $(CURDIR)/,$(EMITTERS))
	find $(RECEIVER) -path '*/internal/metadata/generated_*.go' -exec sed -i 's#"$(OTEL_SEMCONV)"#"$(LOCAL_SEMCONV)"#' {} + -exec gofmt -w {} +

# The object is committed so that nothing else needs clang; Debian's clang-14 makes it byte for byte
# (TestObjectMatchesSources rebuilds and compares).
bpf:
	command -v clang-14 >/dev/null && command -v llvm-strip-14 >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clang-14 llvm-14 libbpf-dev; }
	cd $(RECEIVER)/internal/biolat && $(GO) generate ./...
	cd $(RECEIVER)/internal/filelat && $(GO) generate ./...

# The receiver runs on Linux only, but the module must build elsewhere: creating it there fails with an
# error that says so.
lint: $(GOLANGCI_LINT)
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) build ./...
	GOOS=darwin $(GO) vet ./receiver/...
	GOOS=windows $(GO) vet ./receiver/...
	cd deploy && $(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd e2e/datadog && $(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	cd deploy && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	cd bench && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	cd e2e/datadog && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

unit:
	$(GO) test $(GOTEST_FLAGS) ./...
	cd deploy && $(GO) test $(GOTEST_FLAGS) ./...

# The end-to-end tests run the built collector; they find it through DISKHEALTH_OTELCOL.
# deploy/ (Kubernetes API types), e2e/datadog/ (Datadog's OTLP translator) and bench/ (hostmetrics, side
# by side) are modules of their own; the benchmark code gets a one-iteration smoke run so it cannot rot.
# The e2e tests build the peers Debian lacks (VictoriaMetrics, vmagent, VictoriaLogs) into .tools on
# first use, pinned like ocb.
# Two parts run beside the rest, each into its own log printed after it: the QEMU guest tests
# (e2e/qemu), which keep one CPU busy with TCG for most of the run, and the 10-minute quiet-log soak
# (SOAK), which only waits on scrapes; the host's other end-to-end tests mostly wait on scrapes and peers
# too. Every step runs; the target fails if any did.
SOAK         := TestPersistentProblemsLogOnce
# The hostmetrics peer (build-hostmetrics) is what e2e TestHostmetricsConventions compares
# `conventions: hostmetrics` with; it finds it through DISKHEALTH_HOSTMETRICS.
test: lint image build-hostmetrics $(HELM)
	@rc=0; logs=$(CURDIR)/_build; \
	DISKHEALTH_OTELCOL=$(DIST) $(GO) test $(GOTEST_FLAGS) ./e2e/qemu/ > $$logs/test-qemu.log 2>&1 & guests=$$!; \
	DISKHEALTH_OTELCOL=$(DIST) $(GO) test $(GOTEST_FLAGS) -run '^$(SOAK)$$' ./e2e/ > $$logs/test-soak.log 2>&1 & soak=$$!; \
	DISKHEALTH_OTELCOL=$(DIST) DISKHEALTH_OTELCOL_ARM64=$(ARM64_DIST) DISKHEALTH_HOSTMETRICS=$(HM_DIST) $(GO) test $(GOTEST_FLAGS) -skip '^$(SOAK)$$' $$($(GO) list ./... | grep -v '/e2e/qemu$$') || rc=1; \
	(cd deploy && DISKHEALTH_IMAGE=$(IMAGE) $(GO) test $(GOTEST_FLAGS) ./...) || rc=1; \
	(cd e2e/datadog && DISKHEALTH_OTELCOL=$(DIST) $(GO) test $(GOTEST_FLAGS) ./...) || rc=1; \
	(cd bench && $(GO) test $(GOTEST_FLAGS) ./cmd/...) || rc=1; \
	(cd bench && $(GO) test $(GOTEST_FLAGS) -bench . -benchtime=1x . -args -devices=10 -mounts=50) || rc=1; \
	wait $$guests || rc=1; wait $$soak || rc=1; \
	for l in qemu soak; do echo "--- $$logs/test-$$l.log:"; cat $$logs/test-$$l.log; done; \
	exit $$rc

bench: build build-hostmetrics
	set -o pipefail; cd bench && $(GO) test -run '^$$' -bench . $(SIDE_FLAGS) . | tee ../bench.out
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem $(BENCH_FLAGS) $$($(GO) list ./$(RECEIVER)/... | grep -v -e /internal/biolat$$ -e /internal/filelat$$) | tee -a bench.out
	set -o pipefail; { $(LATENCY_BENCH); } | tee -a bench.out
	cd bench && $(GO) run ./cmd/benchtable < ../bench.out | tee ../bench.md
	cd bench && $(GO) run ./cmd/footprint -otelcol $(DIST) -duration $(FOOTPRINT) | tee -a ../bench.md
	cd bench && $(GO) run ./cmd/scrapecost -otelcol $(DIST) -hostmetrics $(HM_DIST) -duration $(SCRAPECOST) | tee -a ../bench.md

bench-latency:
	set -o pipefail; { $(LATENCY_BENCH) && \
		$(GO) test -run '^$$' -bench LatencyScrape -benchmem $(LAT_FLAGS) ./$(RECEIVER)/internal/scraper/latencyscraper/; } | tee bench-latency.out
	cd bench && $(GO) run ./cmd/benchtable < ../bench-latency.out | tee ../bench-latency.md

clean:
	rm -rf _build _build-hostmetrics bench.out bench.md bench-latency.out bench-latency.md
