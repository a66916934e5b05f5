#!/usr/bin/env bash
# make image: the otelcol-diskhealth image for linux/amd64 and linux/arm64, built for real with buildah
# FROM scratch, as one manifest list per target (the non-root default and the SMART variant).
#
# No registry is needed: the build context (_build/image) holds everything the Dockerfile copies: the
# static binary for each architecture (cross-compiled from the sources `make build` wrote), the build
# host's CA bundle and smartmontools' drive database, and config/prometheus.yaml. It installs what it
# needs (buildah, podman and runc, ca-certificates, smartmontools, qemu-user-static) from the distribution's packages.
#
# Result, in buildah/podman's local storage:
#   $IMAGE:$TAG        manifest list: linux/amd64 + linux/arm64, non-root (USER 10001)
#   $IMAGE:$TAG-smart  manifest list: the same as uid 0 (the SMART / storage-stack profile)
#   $IMAGE:$TAG-$ARCH, $IMAGE:$TAG-smart-$ARCH   the per-architecture images in them
# and _build/image/sizes.tsv (target, architecture, bytes). The arm64 binary gets a first smoke run
# under qemu-user-static here (--version); deploy's TestImage* tests check the rest.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/otelcol-diskhealth}
TAG=${IMAGE_TAG:-$(sed -n 's/^  version: *//p' builder-config.yaml)}
ARCHES=${IMAGE_ARCHES:-amd64 arm64}
CTX=_build/image
GO=${GO:-go}

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
[ -f /usr/share/smartmontools/drivedb.h ] || need+=(smartmontools)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

rm -rf "$CTX"
mkdir -p "$CTX"
cp /etc/ssl/certs/ca-certificates.crt "$CTX/ca-certificates.crt"
cp /usr/share/smartmontools/drivedb.h "$CTX/drivedb.h"
cp config/prometheus.yaml "$CTX/config.yaml"
# The same flags as ocb's own build (static, no cgo, stripped), for every architecture, from the
# sources ocb generated in _build.
for arch in $ARCHES; do
	mkdir -p "$CTX/linux/$arch"
	(cd _build && CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -ldflags='-s -w' \
		-o "image/linux/$arch/otelcol-diskhealth" .)
done
if [[ " $ARCHES " == *" arm64 "* ]]; then
	qemu-aarch64-static "$CTX/linux/arm64/otelcol-diskhealth" --version
fi

: >"$CTX/sizes.tsv"
for target in nonroot smart; do
	list=$IMAGE:$TAG
	[ "$target" = smart ] && list=$IMAGE:$TAG-smart
	buildah manifest rm "$list" >/dev/null 2>&1 || true
	buildah manifest create "$list" >/dev/null
	for arch in $ARCHES; do
		img=$list-$arch
		buildah rmi -f "$img" >/dev/null 2>&1 || true
		buildah build --quiet --layers=false --platform "linux/$arch" --target "$target" \
			-f deploy/Dockerfile -t "$img" "$CTX" >/dev/null
		buildah manifest add "$list" "containers-storage:$img" >/dev/null
		size=$(podman image inspect --format '{{.Size}}' "$img")
		printf '%s\t%s\t%s\n' "$target" "$arch" "$size" >>"$CTX/sizes.tsv"
	done
	echo "$list: $(buildah manifest inspect "$list" | grep -c '"architecture"') architectures"
done
column -t "$CTX/sizes.tsv"
