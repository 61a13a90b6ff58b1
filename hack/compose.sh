#!/usr/bin/env bash
# The docker-compose cluster (deploy/compose): three etcd members, two
# apiservers, two schedulers and controller-managers, three nodes (containerd,
# kubelet, kube-lite-proxy), a registry, and the addons of deploy/addons
# (CoreDNS).
#
#   hack/compose.sh up      start dockerd if none runs, build, start, wait for 3 Ready nodes,
#                           apply deploy/addons and wait for CoreDNS
#   hack/compose.sh down    remove containers, volumes and network; stop the dockerd up started
#   hack/compose.sh test    up, the e2e tests of test/e2e/compose, down (KEEP=1 leaves it up)
#   hack/compose.sh image   only build the image
#
# Environment: KUBE_LITE_COMPOSE_PROJECT (default kube-lite-compose),
# KUBE_LITE_COMPOSE_PORT / _PORT2 (host ports of the two apiservers, default
# 26443/26444), KUBE_LITE_CACHE (debootstrap tarball, image tarballs, the
# data root of a dockerd started here; default /var/cache/kube-lite),
# BASE_IMAGE (default kube-lite/base:bookworm, made with debootstrap; set
# debian:bookworm-slim where a registry is reachable), SKIP_BUILD=1 (use bin/
# as it is).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PROJECT=${KUBE_LITE_COMPOSE_PROJECT:-kube-lite-compose}
export KUBE_LITE_COMPOSE_PORT=${KUBE_LITE_COMPOSE_PORT:-26443}
export KUBE_LITE_COMPOSE_PORT2=${KUBE_LITE_COMPOSE_PORT2:-26444}
export KUBE_LITE_IMAGE=${KUBE_LITE_IMAGE:-kube-lite/kube-lite:compose}
CACHE=${KUBE_LITE_CACHE:-/var/cache/kube-lite}
export KUBE_LITE_CACHE=$CACHE
BASE_IMAGE=${BASE_IMAGE:-kube-lite/base:bookworm}
COMPOSE_FILE=$ROOT/deploy/compose/docker-compose.yml
CDIR=$DIR/compose
DOCKERD_PID=$CDIR/dockerd.pid
NODES=3

compose() { docker-compose -p "$PROJECT" -f "$COMPOSE_FILE" "$@"; }

ensure_tools() {
	step "tools: docker, docker-compose, debootstrap"
	if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null || ! command -v debootstrap >/dev/null; then
		"$ROOT/hack/deps.sh" compose || fail "" "install docker.io docker-compose debootstrap (hack/deps.sh compose)"
	fi
}

# ensure_dockerd uses a running Docker engine, or starts one whose data root
# is in the cache (so the base and image layers survive down and up).
ensure_dockerd() {
	step "docker engine"
	if docker info >/dev/null 2>&1; then
		echo "    using the running Docker engine"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || fail "" "no Docker engine answers and starting one needs root: run as root (sudo hack/compose.sh up)"
	mkdir -p "$CDIR" "$CACHE"
	# Host cgroup namespace: the kubelet and runc in the node containers
	# create pod cgroups that must be real ones (compose 1.x has no cgroup: key).
	setsid dockerd --data-root "$CACHE/docker" --default-cgroupns-mode host \
		--pidfile "$CDIR/dockerd.daemon.pid" >"$CDIR/dockerd.log" 2>&1 </dev/null &
	echo $! >"$DOCKERD_PID"
	wait_for 60 docker info || fail "$CDIR/dockerd.log" "is another dockerd holding /var/run/docker.sock or $CACHE/docker?"
	echo "    started dockerd (pid $(cat "$DOCKERD_PID"), log $CDIR/dockerd.log)"
}

build_image() {
	if [ -z "${SKIP_BUILD:-}" ]; then
		step "build: bin/ (make build)"
		# make build, not go build: it carries the build flags (GO_BUILD_FLAGS).
		make -C "$ROOT" --no-print-directory build BIN="$BIN" || fail "" "fix the build ('make build')"
	fi
	# The nodes run every daemon of a worker; a binary missing here would
	# only show as a node container that exits.
	local b
	for b in kube-lite-apiserver kube-lite-scheduler kube-lite-controller-manager kube-lite-kubelet kube-lite-proxy kube-lite-pki kubectl-lite; do
		[ -x "$BIN/$b" ] || { echo "hack/compose.sh: $BIN/$b is missing: run 'make build'" >&2; exit 1; }
	done
	step "images: pause, busybox, testapp and coredns OCI tarballs"
	local images=$CACHE/images
	if [ ! -s "$images/testapp.tar" ] || [ ! -s "$images/coredns.tar" ] ||
		[ -n "$(find "$ROOT/cmd/testapp" "$ROOT/cmd/pause" "$ROOT/hack/images.sh" "$ROOT/hack/coredns.sh" -newer "$images/testapp.tar" 2>/dev/null | head -1)" ]; then
		mkdir -p "$CDIR"
		"$ROOT/hack/images.sh" "$images" >"$CDIR/images.log" 2>&1 || fail "$CDIR/images.log" "is busybox-static installed? (make deps)"
	fi
	if [ "$BASE_IMAGE" = kube-lite/base:bookworm ]; then
		step "base image: $BASE_IMAGE (debootstrap, cached in $CACHE)"
		BASE_IMAGE=$BASE_IMAGE "$ROOT/hack/compose-base.sh" || fail "$CACHE/debootstrap.log" "is the Debian mirror reachable?"
	fi
	step "image: $KUBE_LITE_IMAGE"
	# A small staged context instead of the repository: only what the
	# Dockerfile copies. Hard links keep it cheap.
	local ctx=$CACHE/context
	rm -rf "$ctx"
	mkdir -p "$ctx/deploy/compose" "$ctx/hack"
	cp -al "$BIN" "$ctx/bin" 2>/dev/null || cp -a "$BIN" "$ctx/bin"
	cp -a "$images" "$ctx/images"
	cp -a "$ROOT/deploy/compose/entrypoint.sh" "$ROOT/deploy/compose/packages" "$ctx/deploy/compose/"
	# The node entrypoint writes containerd's config with it.
	cp -a "$ROOT/hack/containerd.sh" "$ctx/hack/"
	mkdir -p "$CDIR"
	DOCKER_BUILDKIT=0 docker build -t "$KUBE_LITE_IMAGE" --build-arg "BASE_IMAGE=$BASE_IMAGE" -f "$ROOT/Dockerfile" "$ctx" >"$CDIR/build.log" 2>&1 ||
		fail "$CDIR/build.log" "see the build log"
	rm -rf "$ctx"
}

# host_kubeconfig copies the PKI out of its volume and points a kubeconfig at
# the published port of apiserver-1.
host_kubeconfig() {
	local pki
	pki=$(compose ps -q pki)
	[ -n "$pki" ] || fail "" "the pki service did not run ('docker-compose -p $PROJECT logs pki')"
	rm -rf "$CDIR/pki"
	docker cp "$pki:/pki" "$CDIR/pki" >/dev/null
	sed -e "s|server: https://apiserver:6443|server: https://127.0.0.1:$KUBE_LITE_COMPOSE_PORT|" \
		"$CDIR/pki/admin.kubeconfig" >"$CDIR/admin.kubeconfig"
	chmod 600 "$CDIR/admin.kubeconfig"
}

compose_curl() {
	curl -fsS --max-time 5 --cacert "$CDIR/pki/ca.crt" --cert "$CDIR/pki/admin.crt" --key "$CDIR/pki/admin.key" \
		"https://127.0.0.1:$KUBE_LITE_COMPOSE_PORT$1"
}

# nodes_ready: every node Ready and none tainted any more, so that the first
# workload can go to any of them (the controller-manager lifts the
# not-ready taints a moment after the Ready condition turns True).
nodes_ready() {
	local nodes n
	nodes=$(compose_curl /api/v1/nodes) || return 1
	n=$(grep -o '"type":"Ready","status":"True"' <<<"$nodes" | wc -l)
	[ "$n" -ge "$NODES" ] && ! grep -q '"taints"' <<<"$nodes"
}

up() {
	local started=$SECONDS
	ensure_tools
	ensure_dockerd
	build_image
	step "compose up: project $PROJECT"
	compose up -d --remove-orphans >"$CDIR/up.log" 2>&1 || fail "$CDIR/up.log" "'docker-compose -p $PROJECT logs' shows why a service failed"
	host_kubeconfig
	step "waiting for the apiserver on 127.0.0.1:$KUBE_LITE_COMPOSE_PORT"
	wait_for 90 compose_curl /readyz || { compose logs --tail 20 apiserver-1 >"$CDIR/apiserver-1.log" 2>&1; fail "$CDIR/apiserver-1.log" "is port $KUBE_LITE_COMPOSE_PORT free? set KUBE_LITE_COMPOSE_PORT"; }
	step "waiting for $NODES Ready, untainted nodes"
	wait_for 180 nodes_ready || { compose logs --tail 30 node-1 node-2 node-3 >"$CDIR/nodes.log" 2>&1; fail "$CDIR/nodes.log" "check the node logs: docker-compose -p $PROJECT logs node-1"; }
	# CoreDNS reaches the API through the kubernetes Service, which the
	# nodes' kube-lite-proxy programs.
	step "addons: CoreDNS (kube-dns at 10.96.0.10)"
	: >"$CDIR/addons.log"
	apply_addons "$CDIR/admin.kubeconfig" 10.96.0.10 "$CDIR/addons.log" ||
		fail "$CDIR/addons.log" "see why the apiserver refused the manifests of $ROOT/deploy/addons"
	wait_dns_ready "$CDIR/admin.kubeconfig" "$CDIR/addons.log" ||
		fail "$CDIR/addons.log" "kubectl-lite -n kube-system describe pods -l k8s-app=kube-dns; docker-compose -p $PROJECT logs node-1"
	cat <<MSG

kube-lite compose cluster is up after $((SECONDS - started)) s (project $PROJECT): 3 nodes, 2 apiservers
(https://127.0.0.1:$KUBE_LITE_COMPOSE_PORT and :$KUBE_LITE_COMPOSE_PORT2), registry:5000 inside.

  export KUBECONFIG=$CDIR/admin.kubeconfig
  export PATH=$BIN:\$PATH
  kubectl-lite get nodes -o wide
  kubectl-lite get pods -A -o wide

Workload images come from the registry service: registry:5000/kube-lite/testapp:1.0
and registry:5000/kube-lite/busybox:1.35.

Every node runs kube-lite-proxy, and CoreDNS answers for cluster.local at 10.96.0.10
(kube-dns in kube-system): pods resolve <service>.<namespace>.svc.cluster.local.

Logs: docker-compose -p $PROJECT -f $COMPOSE_FILE logs <service>
Stop everything with 'hack/compose.sh down' (make compose-down).
MSG
}

# remove_docker_host_network removes what a stopped dockerd leaves on the
# host: its iptables chains and the rules jumping to them, and docker0. Only
# called for a dockerd this script started, so no other engine's rules go.
remove_docker_host_network() {
	local t rule c
	if command -v iptables-save >/dev/null; then
		for t in filter nat; do
			iptables-save -t "$t" | grep -E '^-A (FORWARD|PREROUTING|OUTPUT|POSTROUTING) .*(DOCKER|docker0)' | sed -e 's/^-A /-D /' |
				while read -r rule; do eval iptables -t "$t" "$rule" 2>/dev/null || true; done
			for c in $(iptables-save -t "$t" | awk '/^:DOCKER/{sub(":", "", $1); print $1}'); do
				iptables -t "$t" -F "$c" 2>/dev/null || true
			done
			for c in $(iptables-save -t "$t" | awk '/^:DOCKER/{sub(":", "", $1); print $1}'); do
				iptables -t "$t" -X "$c" 2>/dev/null || true
			done
		done
	fi
	if ip link show docker0 >/dev/null 2>&1; then ip link delete docker0 || true; fi
}

down() {
	step "compose down: project $PROJECT"
	if docker info >/dev/null 2>&1; then
		compose down -v --remove-orphans --timeout 5 || true
	fi
	# Pod cgroups of the node containers live in the host's hierarchy
	# (--cgroup-root /kube-lite-compose/<node>); remove the empty leftovers.
	local d
	for d in /sys/fs/cgroup/*/kube-lite-compose; do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	if [ -f "$DOCKERD_PID" ]; then
		step "stopping the dockerd that 'up' started"
		local pid
		pid=$(cat "$DOCKERD_PID")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid"
			for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$DOCKERD_PID"
		remove_docker_host_network
	fi
	rm -rf "$CDIR/pki" "$CDIR/admin.kubeconfig"
	echo "compose cluster is down."
}

run_tests() {
	local rc=0 start=$SECONDS
	# up in a subshell: its failure (fail exits) still takes the cluster and
	# the dockerd it started down again, unless KEEP asks to look at them.
	# Not "if (up)": errexit would be off inside it.
	set +e
	(set -e; up)
	rc=$?
	set -e
	if [ "$rc" -eq 0 ]; then
		step "e2e: test/e2e/compose"
		(cd "$ROOT" && KUBE_LITE_COMPOSE_KUBECONFIG=$CDIR/admin.kubeconfig KUBE_LITE_COMPOSE_PROJECT=$PROJECT \
			KUBE_LITE_COMPOSE_FILE=$COMPOSE_FILE go test -count=1 -tags e2e -timeout 25m -v ./test/e2e/compose/) || rc=$?
	fi
	if [ -z "${KEEP:-}" ]; then down; fi
	echo "compose suite: $((SECONDS - start)) s including up and down (exit $rc)"
	return $rc
}

case "${1:-}" in
up) up ;;
down) down ;;
test) run_tests ;;
image) ensure_tools; ensure_dockerd; build_image ;;
*) echo "usage: $0 up | down | test | image" >&2; exit 2 ;;
esac
