#!/usr/bin/env bash
# Builds upstream's kube-apiserver, etcd and kube-proxy — the versions
# kube-lite's go.mod pins — for the benchmarks to measure beside kube-lite
# (test/bench/apiserver -upstream DIR, test/bench/proxy -upstream DIR;
# make bench picks DIR up by itself).
# They come from the Go module proxy, in a throwaway module outside this one:
# kube-lite never imports k8s.io/kubernetes, it only measures against it.
#   hack/upstream-apiserver.sh [DIR]      default DIR: .upstream/bin
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-.upstream/bin}")

k8s=$(go list -m -f '{{.Version}}' k8s.io/api | sed 's/^v0\./v1./')
etcd=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# VERSIONS also names the binaries, so that a directory built before one was
# added is built again rather than taken as complete.
versions="$k8s $etcd kube-apiserver etcd kube-proxy"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ -x "$out/kube-proxy" ] && [ "$(cat "$out/VERSIONS" 2>/dev/null)" = "$versions" ]; then
  echo "upstream kube-apiserver $k8s, kube-proxy $k8s and etcd $etcd already in $out"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
# with its own directories; as a dependency it needs them replaced by their
# published versions instead. go fetches its go.mod as it fetches any module
# (GOPROXY, GOPRIVATE, the checksum database).
k8smod=$(go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$k8s")
{
  echo "module upstreambuild"
  echo "go $(go env GOVERSION | sed 's/^go//')"
  echo "require k8s.io/kubernetes $k8s"
  echo "require go.etcd.io/etcd/server/v3 $etcd"
  grep -E '^\s*k8s.io/[a-z-]+ => ./staging' "$k8smod" | awk -v v="${k8s/v1./v0.}" '{print "replace " $1 " => " $1 " " v}'
} > go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
GO
echo "building upstream kube-apiserver and kube-proxy $k8s and etcd $etcd into $out (several minutes the first time)"
go mod tidy
mkdir -p "$out"
# /version says which release it is, as a release build's does.
CGO_ENABLED=0 go build -ldflags "-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$k8s" | cut -d. -f2)" \
  -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-proxy go.etcd.io/etcd/server/v3
mv "$out/server" "$out/etcd" # go names the binary after the path before /v3
echo "$versions" > "$out/VERSIONS"
echo "done: $out/kube-apiserver, $out/kube-proxy, $out/etcd"
