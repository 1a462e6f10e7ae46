#!/usr/bin/env bash
# Installs a container engine for `make docker` and integration/docker_test.go when no
# Docker daemon answers: Debian's podman and runc (plus uidmap and slirp4netns), and,
# where the distribution has them, the CNI dnsname plugin (container names resolve on
# compose networks: docker/compose.yaml) and podman-compose. Idempotent: does nothing
# when podman, runc and the dnsname plugin are already there.
set -euo pipefail

log() { printf 'install-podman: %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
	else return 1
	fi
}

if docker info >/dev/null 2>&1; then
	log "a Docker daemon answers; nothing to install"
	exit 0
fi
if command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 && [ -e /usr/lib/cni/dnsname ]; then
	log "podman and runc already installed: $(podman --version)"
	exit 0
fi
command -v apt-get >/dev/null 2>&1 || { log "no apt-get: install podman and runc by hand"; exit 1; }

log "installing podman and runc (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
pkgs=(podman runc uidmap slirp4netns)
as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${pkgs[@]}" >/tmp/install-podman.$$.log 2>&1 || {
	tail -n 30 /tmp/install-podman.$$.log >&2; rm -f /tmp/install-podman.$$.log; exit 1; }
rm -f /tmp/install-podman.$$.log
# Optional: name resolution between containers on CNI networks, and podman-compose.
for p in golang-github-containernetworking-plugin-dnsname podman-compose; do
	as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || log "$p not available (optional)"
done
log "installed: $(podman --version), $(runc --version | head -n1)"
