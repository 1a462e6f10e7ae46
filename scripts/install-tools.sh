#!/usr/bin/env bash
# Installs the external tools the integration suite runs against:
#   - Apache Kafka's tool jars (version pinned in scripts/versions.env), resolved from
#     Maven Central with integration/kafka/pom.xml into
#     ${KGO_CACHE:-$HOME/.cache/kgo-broker}/kafka-<version>/libs
#   - kcat (Debian package), only if it is not on PATH already.
#   - a JDK with javac (Debian's openjdk-17-jdk-headless), only if javac is not on PATH:
#     the integration suite compiles its own Java clients (integration/java/*.java)
#     against the Kafka jars at test time.
# Idempotent: a stamp (hash of the pom and versions.env) marks a complete install, and a
# second run with the same stamp does nothing. Run scripts/kafka-tool to use the jars.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
. "$ROOT/scripts/versions.env"

CACHE=${KGO_CACHE:-$HOME/.cache/kgo-broker}
KAFKA_DIR=$CACHE/kafka-$KAFKA_VERSION
POM=$ROOT/integration/kafka/pom.xml

log() { printf 'install-tools: %s\n' "$*" >&2; }
die() { printf 'install-tools: ERROR: %s\n' "$*" >&2; exit 1; }

# as_root runs a command as root: directly, or with passwordless sudo.
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
	else return 1
	fi
}

apt_updated=
apt_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	if [ -z "$apt_updated" ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq || return 1
		apt_updated=1
	fi
	local out; out=$(mktemp)
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >"$out" 2>&1; then
		tail -n 20 "$out" >&2; rm -f "$out"; return 1
	fi
	rm -f "$out"
}

stamp() {
	cat "$ROOT/scripts/versions.env" "$POM" | sha256sum | cut -d' ' -f1
}

# --- Java and Maven -----------------------------------------------------------------------
# A JDK, not only a JRE: javac compiles integration/java/ at test time.
need_java_maven() {
	local missing=()
	{ command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; } || missing+=(openjdk-17-jdk-headless)
	command -v mvn >/dev/null 2>&1 || missing+=(maven)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "missing ${missing[*]}; trying apt-get"
	apt_install "${missing[@]}" ||
		die "need a JDK (17+) and Maven 3 on PATH to fetch Kafka's tools; install them (e.g. apt-get install -y openjdk-17-jdk-headless maven) and rerun"
}

# --- Kafka tool jars ----------------------------------------------------------------------
install_kafka() {
	local want; want=$(stamp)
	if [ -f "$KAFKA_DIR/.installed" ] && [ "$(cat "$KAFKA_DIR/.installed")" = "$want" ] &&
		[ -f "$KAFKA_DIR/libs/kafka-tools-$KAFKA_VERSION.jar" ]; then
		log "Apache Kafka $KAFKA_VERSION tools already installed in $KAFKA_DIR"
		return 0
	fi
	need_java_maven
	log "fetching Apache Kafka $KAFKA_VERSION tool jars from Maven Central (first run takes a few minutes)"
	mkdir -p "$CACHE"
	local tmp; tmp=$(mktemp -d "$CACHE/kafka-$KAFKA_VERSION.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	local try ok=
	for try in 1 2 3; do
		# The local repository lives in the cache too, so one directory holds everything.
		if mvn -q -B -f "$POM" \
			-Dmaven.repo.local="$CACHE/m2" \
			-Dkafka.version="$KAFKA_VERSION" -Dlog4j.version="$LOG4J_VERSION" \
			-DincludeScope=runtime -DoutputDirectory="$tmp/libs" \
			dependency:copy-dependencies >"$tmp/mvn.log" 2>&1; then
			ok=1; break
		fi
		log "mvn failed (attempt $try/3):"; tail -n 20 "$tmp/mvn.log" >&2
		sleep $((try * 5))
	done
	[ -n "$ok" ] || die "could not fetch Kafka $KAFKA_VERSION from Maven Central"
	[ -f "$tmp/libs/kafka-tools-$KAFKA_VERSION.jar" ] && [ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ] ||
		die "mvn finished but the Kafka jars are missing from $tmp/libs"
	rm -f "$tmp/mvn.log"
	printf '%s\n' "$want" >"$tmp/.installed"
	rm -rf "$KAFKA_DIR"
	mv "$tmp" "$KAFKA_DIR"
	trap - EXIT
	log "installed $(find "$KAFKA_DIR/libs" -name '*.jar' | wc -l) jars in $KAFKA_DIR/libs"
}

# --- JDK (javac) --------------------------------------------------------------------------
# Checked on every run, also when the Kafka jars are already installed (a machine that
# installed them with only a JRE gets the JDK now).
install_jdk() {
	if command -v javac >/dev/null 2>&1; then
		log "javac already installed: $(javac -version 2>&1)"
		return 0
	fi
	log "javac is missing; installing openjdk-17-jdk-headless with apt-get"
	apt_install openjdk-17-jdk-headless ||
		die "need javac (a JDK 17+) on PATH to compile integration/java/; install one (e.g. apt-get install -y openjdk-17-jdk-headless) and rerun"
	command -v javac >/dev/null 2>&1 || die "javac still not on PATH after apt-get install openjdk-17-jdk-headless"
}

# --- kcat ---------------------------------------------------------------------------------
install_kcat() {
	if command -v kcat >/dev/null 2>&1; then
		log "kcat already installed: $(command -v kcat)"
		return 0
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		die "kcat is not installed and apt-get is not available; install kcat (https://github.com/edenhill/kcat) so that it is on PATH"
	fi
	log "installing kcat with apt-get"
	apt_install kcat ||
		die "apt-get -o DPkg::Lock::Timeout=600 install kcat failed (needs root or passwordless sudo); install kcat by hand so that it is on PATH"
	command -v kcat >/dev/null 2>&1 || die "kcat still not on PATH after apt-get install"
}

install_kafka
install_jdk
install_kcat

# --- verify -------------------------------------------------------------------------------
command -v java >/dev/null 2>&1 || need_java_maven
v=$("$ROOT/scripts/kafka-tool" kafka-topics.sh --version 2>&1 | tail -n 1) ||
	die "scripts/kafka-tool kafka-topics.sh --version failed: $v"
case "$v" in
*"$KAFKA_VERSION"*) log "kafka-topics.sh --version: $v" ;;
*) die "expected Kafka $KAFKA_VERSION from kafka-topics.sh --version, got: $v" ;;
esac
[ -f "$KAFKA_DIR/libs/kafka-streams-$KAFKA_VERSION.jar" ] ||
	die "kafka-streams-$KAFKA_VERSION.jar is missing from $KAFKA_DIR/libs (integration/kafka/pom.xml lists it)"
log "kcat: $(kcat -V 2>&1 | grep -m 1 '^Version' || true)"
