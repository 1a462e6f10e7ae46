// Package integration holds kgo-broker's end-to-end tests. They start the real
// bin/kgo-broker process and drive it with Apache Kafka's own command-line tools
// (run from Maven jars by scripts/kafka-tool), kcat and franz-go.
//
// The tests carry the build tag "integration" so that `go test ./...` skips them:
//
//	make build && scripts/install-tools.sh
//	go test -tags integration -count=1 -timeout 25m ./integration/...
//
// Environment:
//
//	KGO_BROKER_BIN      broker binary to test, relative to the repository root or absolute
//	                    (default: build bin/kgo-broker first)
//	KGO_REQUIRE_TOOLS   if set, a missing Kafka tool install or kcat fails the tests
//	                    instead of skipping them (scripts/test.sh sets it)
//	KGO_CACHE           where scripts/install-tools.sh put the Kafka jars
//	KGO_READY_TIMEOUT   how long to wait for a started broker to answer Metadata (default 60s)
//	KGO_KEEP_DIRS       if set, keep every broker's temp dir (failed tests always keep it)
//	KGO_FAULT_RUNS      the fault suite's runs per kind (unset: short mode, one run); see
//	                    faults_test.go for KGO_FAULT_CYCLE, KGO_FAULT_KINDS, KGO_FAULT_SEED,
//	                    KGO_FAULT_RESULTS
//	KGO_REQUIRE_FAULTS  if set, a fault that cannot run here (no root, no netns, no
//	                    iptables) fails instead of skipping (scripts/test.sh sets it)
package integration
