#!/usr/bin/env bash
# Builds the kgo-broker container image (make docker).
#   1. builds a static bin/kgo-broker-linux-<arch> (CGO_ENABLED=0, -trimpath,
#      -ldflags "-s -w -X main.version=<git describe>");
#   2. lays out the build context in bin/docker-context: docker/Dockerfile,
#      rootfs/ (docker/rootfs, the binary, /tmp 1777, /mnt/shared/config) and the
#      directories that become appuser's: home/appuser and kafka/data;
#   3. builds it with `docker build` when a Docker daemon answers, else with
#      `podman build --format docker` (HEALTHCHECK is a docker-format field) using
#      docker/containers.conf (scripts/install-podman.sh installs podman).
# Environment: IMAGE (default kgo-broker:latest, then also tagged kgo-broker:<version>
# when the work tree is clean),
# ENGINE (docker or podman, default: detected), GO, VERSION, GOARCH.
# Prints the image id on stdout.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

GO=${GO:-go}
IMAGE=${IMAGE:-kgo-broker:latest}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
GOARCH=${GOARCH:-$("$GO" env GOARCH)}
log() { printf 'docker/build.sh: %s\n' "$*" >&2; }

# engine prints the container engine to use: docker with a daemon, else podman.
engine() {
	if [ -n "${ENGINE:-}" ]; then echo "$ENGINE"; return; fi
	if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then echo docker; return; fi
	if command -v podman >/dev/null 2>&1; then echo podman; return; fi
	return 1
}
ENG=$(engine) || { log "no container engine: no Docker daemon answers and podman is not installed (scripts/install-podman.sh)"; exit 1; }
if [ "$ENG" = podman ]; then
	export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/docker/containers.conf}
	if ! podman info >/dev/null 2>&1 && STORAGE_DRIVER=vfs podman info >/dev/null 2>&1; then
		log "podman's default storage driver fails here; using STORAGE_DRIVER=vfs"
		export STORAGE_DRIVER=vfs
	fi
fi

CTX=$ROOT/bin/docker-context
rm -rf "$CTX"
mkdir -p "$CTX/rootfs/usr/local/bin" "$CTX/rootfs/tmp" "$CTX/rootfs/mnt/shared/config" \
	"$CTX/rootfs/home" "$CTX/rootfs/var/lib/kafka" "$CTX/home/appuser" "$CTX/kafka/data"
log "building the binary ($VERSION, linux/$GOARCH)"
CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH "$GO" build -trimpath \
	-ldflags "-s -w -X main.version=$VERSION" -o "$CTX/rootfs/usr/local/bin/kgo-broker" ./cmd/kgo-broker
cp -R docker/rootfs/. "$CTX/rootfs/"
cp docker/Dockerfile "$CTX/Dockerfile"
chmod 1777 "$CTX/rootfs/tmp"
chmod 0755 "$CTX/rootfs/mnt/shared/config" "$CTX/rootfs/usr/local/bin/kgo-broker"
chmod 0644 "$CTX/rootfs/etc/passwd" "$CTX/rootfs/etc/group" "$CTX/rootfs/etc/kafka/docker/server.properties"
chmod 0755 "$CTX/home/appuser" "$CTX/kafka/data"

args=(build --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" -t "$IMAGE")
tags=$IMAGE
if [ "${IMAGE##*:}" = latest ] && [ "${VERSION%-dirty}" = "$VERSION" ]; then # a clean tree's kgo-broker:latest is also kgo-broker:<version>
	tag=${IMAGE%:*}:${VERSION//[^A-Za-z0-9_.-]/_}
	args+=(-t "$tag")
	tags="$IMAGE $tag"
fi
[ "$ENG" = podman ] && args+=(--format docker --layers=false) # no intermediate images left behind
old=$("$ENG" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
log "$ENG ${args[*]} $CTX"
"$ENG" "${args[@]}" "$CTX" >&2
id=$("$ENG" image inspect --format '{{.Id}}' "$IMAGE")
# The image this build replaced, if nothing else refers to it now.
if [ -n "$old" ] && [ "$old" != "$id" ] && [ -z "$("$ENG" image inspect --format '{{join .RepoTags ","}}' "$old" 2>/dev/null)" ]; then
	"$ENG" rmi "$old" >/dev/null 2>&1 || true
fi
size=$("$ENG" image inspect --format '{{.Size}}' "$IMAGE")
log "built $tags: $((size / 1024 / 1024)) MiB ($size bytes)"
echo "$id"
