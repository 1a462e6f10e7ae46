#!/usr/bin/env bash
# Regenerates metadatacache/testdata/kafka-4.4.0: __cluster_metadata as Apache Kafka
# 4.4.0 itself writes it, for the byte-for-byte codec test
# (metadatacache/kafka_fixture_test.go). Needs the jars of scripts/install-tools.sh.
#
#   scripts/metadata-fixtures.sh            # writes metadatacache/testdata/kafka-4.4.0/
#
# One combined node formatted by kafka-storage.sh at the newest metadata.version
# (4.4-IV2) runs the admin operations below, is stopped (controlled shutdown),
# started again and stopped again, so the log holds every record type a single
# node can make Kafka write: feature levels, broker and controller registrations,
# registration changes, topics, partitions and partition changes, configs, client
# quotas, SCRAM credentials, ACLs, producer ids, ELR turned off and on, metadata
# transactions and NoOps. The fixtures are:
#
#   cluster-metadata.log    the metadata log's only segment (00000000000000000000.log)
#   bootstrap.checkpoint    the zero checkpoint kafka-storage.sh format wrote
#                           (00000000000000000000-0000000000.checkpoint)
#   bootstrap-4.0-tv1.checkpoint  the same for --release-version 4.0 --feature transaction.version=1
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=$ROOT/scripts/kafka-tool
out=$ROOT/metadatacache/testdata/kafka-4.4.0
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

port=$((20000 + RANDOM % 20000))
cport=$((port + 1))
bs=127.0.0.1:$port
cat >"$work/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$work/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true
super.users=User:ANONYMOUS
metadata.max.idle.interval.ms=5000
EOF

cluster=5L6g3nShT-eMCtK--X86sw
start() {
	KAFKA_HEAP_OPTS=-Xmx512M "$tool" kafka-server-start.sh "$work/server.properties" >"$work/server.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 120); do
		if "$tool" kafka-topics.sh --bootstrap-server "$bs" --list >/dev/null 2>&1; then
			return 0
		fi
		sleep 1
	done
	echo "metadata-fixtures: Kafka did not start; see $work/server.log" >&2
	tail -50 "$work/server.log" >&2
	exit 1
}
stop() {
	kill -TERM "$pid"
	wait "$pid" || true
	pid=
}
k() { "$tool" "$@" --bootstrap-server "$bs"; }

# A second format, kept only for its zero checkpoint.
cp "$work/server.properties" "$work/other.properties"
sed -i "s|^log.dirs=.*|log.dirs=$work/other|" "$work/other.properties"
"$tool" kafka-storage.sh format -t "$cluster" -c "$work/other.properties" --release-version 4.0 --feature transaction.version=1 >/dev/null

"$tool" kafka-storage.sh format -t "$cluster" -c "$work/server.properties" >/dev/null
start
k kafka-topics.sh --create --topic fixture-a --partitions 3 --replication-factor 1 --config retention.ms=3600000 >/dev/null
k kafka-topics.sh --create --topic fixture-b --partitions 1 --replication-factor 1 >/dev/null
k kafka-topics.sh --alter --topic fixture-a --partitions 4
k kafka-configs.sh --alter --entity-type topics --entity-name fixture-a --add-config segment.bytes=1048576,cleanup.policy=compact >/dev/null
k kafka-configs.sh --alter --entity-type topics --entity-name fixture-a --delete-config cleanup.policy >/dev/null
k kafka-configs.sh --alter --entity-type brokers --entity-default --add-config log.cleaner.threads=2 >/dev/null
k kafka-configs.sh --alter --entity-type brokers --entity-name 1 --add-config log.cleaner.io.max.bytes.per.second=1e9 >/dev/null
k kafka-configs.sh --alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 >/dev/null
k kafka-configs.sh --alter --entity-type users --entity-name alice --entity-type clients --entity-default --add-config request_percentage=50 >/dev/null
k kafka-configs.sh --alter --entity-type ips --entity-name 127.0.0.1 --add-config connection_creation_rate=100 >/dev/null
k kafka-configs.sh --alter --entity-type users --entity-name alice --delete-config consumer_byte_rate >/dev/null
k kafka-configs.sh --alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' >/dev/null
k kafka-configs.sh --alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-512=[password=alice-secret]' >/dev/null
k kafka-configs.sh --alter --entity-type users --entity-name alice --delete-config SCRAM-SHA-512 >/dev/null
k kafka-acls.sh --add --allow-principal User:alice --operation Read --operation Describe --topic fixture-a >/dev/null
k kafka-acls.sh --add --deny-principal User:bob --allow-host 10.0.0.0/8 --operation Write --topic fixture --resource-pattern-type prefixed >/dev/null
k kafka-acls.sh --remove --force --allow-principal User:alice --operation Describe --topic fixture-a >/dev/null
# An idempotent producer gets its producer id from a block the controller allocates.
printf 'one\ntwo\n' | k kafka-console-producer.sh --topic fixture-b >/dev/null
k kafka-topics.sh --delete --topic fixture-b
# eligible.leader.replicas.version off and on again (FeatureLevelRecords; with no
# ELR set at that point Kafka writes no ClearElrRecord).
"$tool" kafka-features.sh --bootstrap-server "$bs" downgrade --feature eligible.leader.replicas.version=0 >/dev/null
"$tool" kafka-features.sh --bootstrap-server "$bs" upgrade --feature eligible.leader.replicas.version=1 >/dev/null
stop
start
k kafka-topics.sh --create --topic fixture-c --partitions 1 --replication-factor 1 >/dev/null
stop

mkdir -p "$out"
cp "$work/data/__cluster_metadata-0/00000000000000000000.log" "$out/cluster-metadata.log"
cp "$work/data/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint" "$out/bootstrap.checkpoint"
cp "$work/other/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint" "$out/bootstrap-4.0-tv1.checkpoint"
chmod 644 "$out"/*
ls -l "$out"
