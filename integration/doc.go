// Package integration holds kgo-broker's end-to-end tests. They start the real
// bin/kgo-broker process and drive it with Apache Kafka's own command-line tools
// (run from Maven jars by scripts/kafka-tool), kcat and franz-go.
//
// The transaction and exactly-once tests (txn_*_test.go, streams_test.go)
// also run small Java programs of their own, integration/java/*.java (TxnTool:
// transactional producer, consumers of both isolation levels,
// consume-transform-produce, fencing, timeouts; StreamsCount: a Kafka Streams
// exactly_once_v2 app). They are compiled at test time with javac against the
// same jars, once per change of their sources, into
// $KGO_CACHE/java-classes/<hash>, and print JSON lines that the tests parse
// (txn_helpers_test.go). Against a broker whose ApiVersions lacks the
// transaction APIs those tests fail at once, naming the missing APIs.
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
//	KGO_TOOLS_LOG_LEVEL log4j2 level of the Kafka tools and of integration/java's programs
//	                    (default warn; their logs go to stderr)
//	KGO_READY_TIMEOUT   how long to wait for a started broker to answer Metadata (default 60s)
//	KGO_KEEP_DIRS       if set, keep every broker's temp dir (failed tests always keep it)
//	KGO_FAULT_RUNS      the fault suite's runs per kind (unset: short mode, one run); see
//	                    faults_test.go for KGO_FAULT_CYCLE, KGO_FAULT_KINDS, KGO_FAULT_SEED,
//	                    KGO_FAULT_RESULTS
//	KGO_REQUIRE_FAULTS  if set, a fault that cannot run here (no root, no netns, no
//	                    iptables) fails instead of skipping (scripts/test.sh sets it)
package integration
