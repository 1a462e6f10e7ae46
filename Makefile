# kgo-broker: build, test, run.
GO ?= go
BIN := bin/kgo-broker

.PHONY: build test unit integration integration-reference fuzz run clean tools bench docker

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/kgo-broker

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

integration: build tools
	$(GO) test -count=1 -timeout 30m -tags integration ./integration/...

# The integration suite against Apache Kafka itself (kafka.Kafka from the same jars,
# behind kgo-broker's command line): checks the tests, not kgo-broker. Expected
# failures: no-argument start, exit code 0 on SIGTERM. TestAgainstKafka44 runs both
# side by side in the ordinary suite.
integration-reference: tools
	KGO_BROKER_BIN=integration/testdata/kafka-reference-broker KGO_READY_TIMEOUT=180s \
		$(GO) test -count=1 -timeout 30m -tags integration -v ./integration/...

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
