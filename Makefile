# kgo-broker: build, test, run.
GO ?= go
BIN := bin/kgo-broker
# The binary the integration suite runs in CI: kgo-broker with -tags invariants,
# so that a broken invariant or lock order (docs/LOCKING.md) panics the broker.
INVARIANTS_BIN := bin/invariants/kgo-broker

.PHONY: build build-invariants test unit integration integration-reference faults faults-reference fuzz run clean tools bench docker

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/kgo-broker

build-invariants:
	CGO_ENABLED=0 $(GO) build -trimpath -tags invariants -o $(INVARIANTS_BIN) ./cmd/kgo-broker

run: build
	./$(BIN)

# All tests: unit tests with the race detector, short fuzz runs, and the
# integration suite against real Kafka tools, franz-go and kcat.
test:
	./scripts/test.sh

unit:
	$(GO) test -race -count=1 ./...

fuzz:
	./scripts/fuzz.sh

integration: build-invariants tools
	KGO_BROKER_BIN=$(INVARIANTS_BIN) $(GO) test -count=1 -timeout 30m -tags integration ./integration/...

# The integration suite against Apache Kafka itself (kafka.Kafka from the same jars,
# behind kgo-broker's command line): checks the tests, not kgo-broker. Expected
# failures: no-argument start, exit code 0 on SIGTERM. TestAgainstKafka44 runs both
# side by side in the ordinary suite.
integration-reference: tools
	KGO_BROKER_BIN=integration/testdata/kafka-reference-broker KGO_READY_TIMEOUT=180s \
		$(GO) test -count=1 -timeout 30m -tags integration -v ./integration/...

# The fault suite (integration/faults_test.go) in long mode: KGO_FAULT_RUNS runs of each
# fault kind (kill -9, SIGSTOP, network partitions in network namespaces, a full disk, a
# slow and a failing disk) on real clusters, checked for lost, duplicated and reordered
# acknowledged records and diverged replicas. It runs the invariants binary, as CI's
# integration stage does: the slow and failing disks go through its test-only disk fault
# hook (cmd/kgo-broker/diskfault_invariants.go), which make build leaves out.
# KGO_FAULT_RUNS=100 makes 1,200 runs over the 12 kinds (3-4 hours
# on 2 cores; ~12 s a run, a partition run ~20 s). Results: integration/faults-results/ (kgo-broker.json, kafka.json,
# summary.md side by side). faults-reference runs the same against Apache Kafka 4.4
# (the disk-hook kinds skip there: Kafka has no such seam).
# KGO_FAULT_PARALLEL=n runs n suites at once, each with every n-th kind on network
# namespaces of its own (a run mostly waits on timeouts: 3 in parallel made 1,008 runs in
# 50 min on 2 cores), logs in integration/faults-results/shard-<i>.log.
KGO_FAULT_RUNS ?= 40
KGO_FAULT_PARALLEL ?= 1
faults: build-invariants tools
	./scripts/install-faults.sh
	mkdir -p integration/faults-results
	$(GO) test -c -tags integration -o integration/faults-results/faults.test ./integration/
	cd integration && pids=; for i in $$(seq 0 $$(($(KGO_FAULT_PARALLEL)-1))); do \
		KGO_BROKER_BIN=$(CURDIR)/$(INVARIANTS_BIN) KGO_FAULT_RUNS=$(KGO_FAULT_RUNS) KGO_REQUIRE_FAULTS=1 \
			KGO_FAULT_SHARD=$$i/$(KGO_FAULT_PARALLEL) ./faults-results/faults.test -test.count=1 -test.timeout 0 -test.v \
			-test.run 'TestFaults' > faults-results/shard-$$i.log 2>&1 & pids="$$pids $$!"; done; \
		rc=0; for p in $$pids; do wait $$p || rc=1; done; tail -n 3 faults-results/shard-*.log; \
		cat faults-results/summary.md; exit $$rc

faults-reference: tools
	./scripts/install-faults.sh
	KGO_BROKER_BIN=integration/testdata/kafka-reference-broker KGO_READY_TIMEOUT=180s \
		KGO_FAULT_RUNS=$${KGO_REFERENCE_FAULT_RUNS:-10} KGO_REQUIRE_FAULTS=1 \
		$(GO) test -count=1 -timeout 0 -tags integration -v -run 'TestFaults' ./integration/

# Apache Kafka 4.4.0 and kgo-broker side by side (bench/, results in bench/results/):
# BENCH_QUICK=1 for a smoke test, BENCH_N=<reps>, PROFILE=1 (or scenario ids) for
# kgo-broker CPU and allocation profiles instead. See docs/PERFORMANCE.md.
bench:
	BENCH_PROFILE="$${BENCH_PROFILE:-$(PROFILE)}" ./bench/run.sh

# Installs Apache Kafka's tool jars (Maven Central, cached) and kcat.
tools:
	./scripts/install-tools.sh

# The container image kgo-broker:latest (docker/Dockerfile: the static binary FROM
# scratch, no registry pull), built with docker when a Docker daemon answers, else
# with podman (scripts/install-podman.sh installs it). See README "Docker".
docker:
	GO=$(GO) ./docker/build.sh

clean:
	rm -rf bin
