#!/usr/bin/env bash
# Builds CoreDNS — the real one, from its Go module at the version pinned
# below — for the cluster DNS addon (deploy/addons/coredns.yaml); hack/images.sh
# packs it into kube-lite.local/coredns:<version>.
#
#   hack/coredns.sh [OUTDIR]
#
# prints the path of the binary on stdout (everything else goes to stderr) and,
# with OUTDIR, copies it to OUTDIR/coredns too.
#
# The binary is CoreDNS's own coremain with only the plugins kube-lite's
# Corefile can use, in CoreDNS's execution order: the standard way to build
# CoreDNS with a trimmed plugin list (a main of one's own instead of the
# generated core/plugin bundle). It builds in a throwaway module outside this
# one, as hack/upstream-apiserver.sh builds upstream: kube-lite never imports
# CoreDNS, and CoreDNS's k8s.io/* versions need not be kube-lite's.
#
# The binary is cached per version in $COREDNS_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/kube-lite/coredns-<version>), beside Go's own
# build cache and outside $KUBE_LITE_DIR, so that 'make down' (PURGE=1 too)
# keeps it and only a version change builds again. A cold build (empty module
# and build caches) costs about 2.5 CPU-minutes: 4 min 53 s on a 2-core
# machine busy with other builds (load average 20), which makes about 1.5 to
# 2 minutes on an idle one; a cached run takes well under a second.
set -euo pipefail

# The one place the CoreDNS version is pinned. Bump the image tag in
# deploy/addons/coredns.yaml with it (hack/images.sh refuses a mismatch).
COREDNS_VERSION=v1.15.0

# Plugins for kube-lite's Corefile (deploy/addons/coredns.yaml), listed in the
# order of CoreDNS's core/dnsserver/zdirectives.go (generated from its
# plugin.cfg): a request passes through them in this order, whatever order the
# Corefile names them in. forward and hosts are there for users who opt in.
# Directive name, then the package that registers it.
PLUGINS=(
	reload plugin/reload
	ready plugin/ready
	health plugin/health
	prometheus plugin/metrics
	errors plugin/errors
	log plugin/log
	loadbalance plugin/loadbalance
	cache plugin/cache
	hosts plugin/hosts
	kubernetes plugin/kubernetes
	loop plugin/loop
	forward plugin/forward
)

cache=${COREDNS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-lite/coredns-$COREDNS_VERSION}
out=${1:-}
if [ -n "$out" ]; then
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
fi

# A cached binary counts only if it says it is this version and has every
# plugin above: adding one builds again. (-plugins also lists the few that
# those import themselves, such as transfer; they are not in the directives,
# so a Corefile cannot use them.)
cached() {
	[ -x "$cache/coredns" ] || return 1
	# Output read whole: grep -q quitting early would be a SIGPIPE to a
	# pipefail pipeline.
	local have i
	have=$("$cache/coredns" -version 2>/dev/null) || return 1
	grep -qx "CoreDNS-${COREDNS_VERSION#v}" <<<"$have" || return 1
	have=$("$cache/coredns" -plugins 2>/dev/null) || return 1
	for ((i = 0; i < ${#PLUGINS[@]}; i += 2)); do
		grep -qx "${PLUGINS[i]}" <<<"$have" || return 1
	done
}

if cached; then
	echo "CoreDNS $COREDNS_VERSION: cached in $cache" >&2
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cd "$work"
	{
		echo "module corednsbuild"
		echo "go $(go env GOVERSION | sed 's/^go//')"
		echo "require github.com/coredns/coredns $COREDNS_VERSION"
	} >go.mod
	{
		echo "// Command coredns is CoreDNS $COREDNS_VERSION with the plugins kube-lite's Corefile uses."
		echo "package main"
		echo
		echo "import ("
		echo "	\"log\""
		echo
		echo "	\"github.com/coredns/coredns/core/dnsserver\""
		echo "	\"github.com/coredns/coredns/coremain\""
		for ((i = 1; i < ${#PLUGINS[@]}; i += 2)); do echo "	_ \"github.com/coredns/coredns/${PLUGINS[i]}\""; done | sort
		echo ")"
		echo
		echo "func main() {"
		echo "	if err := dnsserver.SetDirectives([]string{"
		for ((i = 0; i < ${#PLUGINS[@]}; i += 2)); do echo "		\"${PLUGINS[i]}\","; done
		echo "	}); err != nil {"
		echo "		log.Fatal(err)"
		echo "	}"
		echo "	coremain.Run()"
		echo "}"
	} >main.go
	echo "CoreDNS $COREDNS_VERSION: building into $cache (a few minutes the first time)" >&2
	start=$SECONDS
	# go mod tidy picks the k8s.io/* and every other version CoreDNS requires.
	go mod tidy >&2
	# The list above must keep CoreDNS's order: check it against this
	# version's generated directives, so that a version bump that moves a
	# plugin fails here rather than changing behaviour quietly.
	canonical=$(sed -n 's/^\t"\([a-z0-9_]*\)",$/\1/p' "$(go list -m -f '{{.Dir}}' github.com/coredns/coredns)/core/dnsserver/zdirectives.go")
	last=0
	for ((i = 0; i < ${#PLUGINS[@]}; i += 2)); do
		n=$(grep -nx "${PLUGINS[i]}" <<<"$canonical" | cut -d: -f1)
		if [ -z "$n" ] || [ "$n" -le "$last" ]; then
			echo "coredns.sh: ${PLUGINS[i]} is not in CoreDNS $COREDNS_VERSION's core/dnsserver/zdirectives.go or out of its order" >&2
			exit 1
		fi
		last=$n
	done
	mkdir -p "$cache"
	# As CoreDNS's own Makefile: static, stripped, without gRPC's x/net/trace.
	CGO_ENABLED=0 go build -trimpath -tags grpcnotrace \
		-ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION-kube-lite" \
		-o "$cache/coredns.tmp.$$" . >&2
	mv "$cache/coredns.tmp.$$" "$cache/coredns"
	cached || { echo "coredns.sh: the built binary does not report CoreDNS $COREDNS_VERSION with the expected plugins" >&2; exit 1; }
	echo "CoreDNS $COREDNS_VERSION: built in $((SECONDS - start)) s" >&2
fi

if [ -n "$out" ]; then
	cp "$cache/coredns" "$out/coredns.tmp"
	mv "$out/coredns.tmp" "$out/coredns"
fi
echo "$cache/coredns"
