#!/usr/bin/env bash
# Makes kube-lite/base:bookworm, the base image of the compose cluster, where
# no registry can be reached: debootstrap a minimal Debian from the host's
# apt mirror and `docker import` it. The root filesystem tarball is cached,
# so a rerun only imports it again (or does nothing if the image exists).
#
#   hack/compose-base.sh            build (or reuse) the image
#   FORCE=1 hack/compose-base.sh    debootstrap afresh
#
# Environment: BASE_IMAGE (default kube-lite/base:bookworm), KUBE_LITE_CACHE
# (default /var/cache/kube-lite), MIRROR (default: the host's Debian mirror).
set -euo pipefail

BASE_IMAGE=${BASE_IMAGE:-kube-lite/base:bookworm}
CACHE=${KUBE_LITE_CACHE:-/var/cache/kube-lite}
SUITE=bookworm

die() { echo "compose-base.sh: $*" >&2; exit 1; }

# What the node, control-plane, etcd and registry containers need, from the
# list the Dockerfile installs too, comma-separated for debootstrap. The list
# is part of the cache key, so changing it rebuilds the tarball.
PACKAGES=$(sed -e 's/#.*//' "$(dirname "$0")/../deploy/compose/packages" | xargs | tr ' ' ',')
[ -n "$PACKAGES" ] || die "no packages in deploy/compose/packages"

if [ -z "${FORCE:-}" ] && docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
	echo "$BASE_IMAGE exists"
	exit 0
fi

mirror() {
	local m=${MIRROR:-}
	if [ -z "$m" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
		# The first URIs: line of the main (not security) suite.
		m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	fi
	if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
		m=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

key=$(printf '%s %s' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)
tarball=$CACHE/base-$SUITE-$key.tar
mkdir -p "$CACHE"

if [ -n "${FORCE:-}" ] || [ ! -s "$tarball" ]; then
	command -v debootstrap >/dev/null || die "debootstrap is missing (hack/deps.sh compose)"
	[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
	rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
	trap 'rm -rf "$rootfs"' EXIT
	m=$(mirror)
	echo "==> debootstrap $SUITE from $m (about a minute)"
	debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$m" >"$CACHE/debootstrap.log" 2>&1 ||
		{ tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed; log: $CACHE/debootstrap.log"; }
	# apt inside `docker build` uses the same mirror; package lists and
	# the .deb cache would only make the image bigger.
	printf 'deb %s %s main\n' "$m" "$SUITE" >"$rootfs/etc/apt/sources.list"
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	tar --numeric-owner -C "$rootfs" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
fi

echo "==> docker import $tarball as $BASE_IMAGE"
docker import "$tarball" "$BASE_IMAGE" >/dev/null
echo "$BASE_IMAGE imported"
