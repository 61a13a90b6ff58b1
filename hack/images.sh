#!/usr/bin/env bash
# Builds kube-lite's container images as OCI image-layout tarballs, with no
# registry and no docker: a rootfs, `tar`, and hand-written JSON.
#
#   hack/images.sh OUTDIR
#
# writes OUTDIR/pause.tar (kube-lite.local/pause:3.10), OUTDIR/busybox.tar
# (kube-lite.local/busybox:1.35, Debian's busybox-static), OUTDIR/testapp.tar
# (kube-lite.local/testapp:$TESTAPP_VERSION, default 1.0) and OUTDIR/coredns.tar
# (kube-lite.local/coredns:<version>, CoreDNS built from its Go module by
# hack/coredns.sh, which caches the binary per version: only the first run
# after a version change takes minutes). The kubelet's --image-dir imports
# every tarball it finds there; `ctr -n k8s.io images import` takes them too.
set -euo pipefail

OUT=${1:?usage: images.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTAPP_VERSION=${TESTAPP_VERSION:-1.0}
PAUSE_IMAGE=${PAUSE_IMAGE:-kube-lite.local/pause:3.10}
BUSYBOX_IMAGE=kube-lite.local/busybox:1.35
TESTAPP_IMAGE=kube-lite.local/testapp:$TESTAPP_VERSION
BUSYBOX=${BUSYBOX:-/bin/busybox}
ARCH=$(go env GOARCH)

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# blob FILE: moves FILE into the layout's blob store and prints its digest.
blob() {
	local d
	d=$(sha "$1")
	mv "$1" "$LAYOUT/blobs/sha256/$d"
	echo "$d"
}

# image NAME ROOTFS TARBALL ENTRYPOINT CMD: ENTRYPOINT and CMD are JSON
# arrays or null, as in an image config.
image() {
	local name=$1 rootfs=$2 tarball=$3 entrypoint=$4 cmd=$5
	LAYOUT=$WORK/layout-$(basename "$tarball" .tar)
	mkdir -p "$LAYOUT/blobs/sha256"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$LAYOUT/oci-layout"

	# Reproducible layer: fixed order, times and owners.
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$WORK/layer.tar" .
	local layer_size layer
	layer_size=$(size "$WORK/layer.tar")
	layer=$(blob "$WORK/layer.tar")

	printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":%s,"Cmd":%s,"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"kube-lite hack/images.sh"}]}' \
		"$ARCH" "$entrypoint" "$cmd" "$layer" >"$WORK/config.json"
	local config_size config
	config_size=$(size "$WORK/config.json")
	config=$(blob "$WORK/config.json")

	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$config" "$config_size" "$layer" "$layer_size" >"$WORK/manifest.json"
	local manifest_size manifest
	manifest_size=$(size "$WORK/manifest.json")
	manifest=$(blob "$WORK/manifest.json")

	# containerd's importer names the image from io.containerd.image.name;
	# other OCI tools read org.opencontainers.image.ref.name (the tag).
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$manifest" "$manifest_size" "$ARCH" "$name" "${name##*:}" >"$LAYOUT/index.json"

	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$LAYOUT" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	echo "$name -> $tarball"
}

# busybox_rootfs DIR: busybox-static with one symlink per applet and the
# few files that tools expect.
busybox_rootfs() {
	local dir=$1
	[ -x "$BUSYBOX" ] || { echo "images.sh: $BUSYBOX missing (apt-get install busybox-static)" >&2; exit 1; }
	mkdir -p "$dir/bin" "$dir/etc" "$dir/tmp" "$dir/proc" "$dir/sys" "$dir/dev" "$dir/var" "$dir/root"
	chmod 1777 "$dir/tmp"
	cp "$BUSYBOX" "$dir/bin/busybox"
	local applet
	for applet in $("$BUSYBOX" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$dir/bin/$applet"
	done
	mkdir -p "$dir/usr"
	ln -sf ../bin "$dir/usr/bin"
	ln -sf bin "$dir/sbin"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
}

export CGO_ENABLED=0
(cd "$ROOT" && go build -trimpath -ldflags "-s -w" -o "$WORK/pause" ./cmd/pause)
(cd "$ROOT" && go build -trimpath -ldflags "-s -w -X main.version=$TESTAPP_VERSION" -o "$WORK/testapp" ./cmd/testapp)

mkdir -p "$WORK/rootfs-pause"
cp "$WORK/pause" "$WORK/rootfs-pause/pause"
image "$PAUSE_IMAGE" "$WORK/rootfs-pause" "$OUT/pause.tar" '["/pause"]' null

busybox_rootfs "$WORK/rootfs-busybox"
# As Docker Hub's busybox: no entrypoint and `sh` as the command, so that a
# pod's args alone (kubectl run ... -- sh -c '...') are the whole command.
image "$BUSYBOX_IMAGE" "$WORK/rootfs-busybox" "$OUT/busybox.tar" null '["sh"]'

# testapp carries busybox too, so that exec probes and debugging have a shell.
busybox_rootfs "$WORK/rootfs-testapp"
cp "$WORK/testapp" "$WORK/rootfs-testapp/testapp"
image "$TESTAPP_IMAGE" "$WORK/rootfs-testapp" "$OUT/testapp.tar" '["/testapp"]' null

# CoreDNS for the cluster DNS addon, named after the version the binary
# reports. Upstream's image is distroless with the binary alone; this one adds
# the few files that tools and mount points expect. It runs as root, with
# only NET_BIND_SERVICE (the addon's securityContext drops every other
# capability); upstream's runs as nonroot with a file capability instead.
coredns=$("$ROOT/hack/coredns.sh")
COREDNS_IMAGE=kube-lite.local/coredns:$("$coredns" -version | sed -n 's/^CoreDNS-//p')
grep -q "image: $COREDNS_IMAGE\$" "$ROOT/deploy/addons/coredns.yaml" ||
	{ echo "images.sh: deploy/addons/coredns.yaml does not name $COREDNS_IMAGE: bump it with COREDNS_VERSION in hack/coredns.sh" >&2; exit 1; }
mkdir -p "$WORK/rootfs-coredns/etc" "$WORK/rootfs-coredns/tmp"
chmod 1777 "$WORK/rootfs-coredns/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$WORK/rootfs-coredns/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$WORK/rootfs-coredns/etc/group"
cp "$coredns" "$WORK/rootfs-coredns/coredns"
image "$COREDNS_IMAGE" "$WORK/rootfs-coredns" "$OUT/coredns.tar" '["/coredns"]' '["-conf","/etc/coredns/Corefile"]'
