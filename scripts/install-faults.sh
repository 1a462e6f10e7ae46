#!/usr/bin/env bash
# Installs what the fault suite (integration/faults*_test.go, `make faults`) needs for
# its network faults: Debian's iptables (iptables-nft, on the kernel's nf_tables),
# used inside each node's network namespace to drop packets between nodes. ip
# (iproute2) and tc come with the base system. Idempotent: does nothing when
# iptables is already on PATH. Kill, pause and disk faults need nothing installed.
set -euo pipefail

log() { printf 'install-faults: %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
	else return 1
	fi
}

if command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ]; then
	log "iptables already installed: $(/usr/sbin/iptables --version 2>/dev/null || iptables --version)"
	exit 0
fi
command -v apt-get >/dev/null 2>&1 || { log "no apt-get: install iptables by hand"; exit 1; }
log "installing iptables (Debian package)"
export DEBIAN_FRONTEND=noninteractive
as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends iptables >/tmp/install-faults.$$.log 2>&1 || {
	tail -n 30 /tmp/install-faults.$$.log >&2; rm -f /tmp/install-faults.$$.log; exit 1; }
rm -f /tmp/install-faults.$$.log
log "installed: $(/usr/sbin/iptables --version)"
