#!/bin/bash
# Entrypoint of every kube-lite compose service; the first argument names the
# role. Configuration comes from the environment set in docker-compose.yml.
#
#   entrypoint.sh pki | etcd | apiserver | scheduler | controller-manager | node | registry
set -euo pipefail

PKI=${PKI_DIR:-/pki}
IMAGES=/opt/kube-lite/images
# The cluster's Services and DNS, as in make up (hack/lib.sh): kube-dns is the
# tenth address of the range.
SERVICE_CIDR=10.96.0.0/16
CLUSTER_DNS=10.96.0.10
CLUSTER_CIDR=10.244.0.0/16
# The Dockerfile copies hack/containerd.sh beside this script.
LIB=$(dirname "$(readlink -f "$0")")

log() { printf '%s [%s] %s\n' "$(date -u +%H:%M:%S)" "${ROLE:-entrypoint}" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds.
wait_for() {
	local secs=$1 what=$2
	shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || die "timed out after ${secs}s waiting for $what"
		sleep 0.5
	done
}

# Every role but pki needs the certificates written by the pki service;
# compose orders the start, but a restarted container must not race it.
wait_pki() { wait_for 120 "the PKI in $PKI" test -s "$PKI/admin.kubeconfig"; }

run_pki() {
	local args=(--dir "$PKI" --apiserver-url "${APISERVER_URL:?}")
	local h n
	for h in ${APISERVER_HOSTS:-}; do args+=(--apiserver-host "$h"); done
	for n in ${NODES:?}; do args+=(--node "$n"); done
	exec kube-lite-pki "${args[@]}"
}

run_etcd() {
	# Not ETCD_NAME and friends: etcd reads ETCD_* variables itself and
	# refuses them next to the same flags.
	local name=${MEMBER_NAME:?}
	# The data directory lives on a volume: a killed member that restarts
	# rejoins with its own data instead of trying to bootstrap again.
	exec etcd --name "$name" --data-dir "/var/lib/etcd/$name" \
		--listen-client-urls http://0.0.0.0:2379 --advertise-client-urls "http://$name:2379" \
		--listen-peer-urls http://0.0.0.0:2380 --initial-advertise-peer-urls "http://$name:2380" \
		--initial-cluster "${CLUSTER_MEMBERS:?}" --initial-cluster-state new \
		--initial-cluster-token kube-lite-compose
}

run_apiserver() {
	wait_pki
	exec kube-lite-apiserver --secure-port 6443 --bind-address 0.0.0.0 \
		--etcd-servers "${ETCD_SERVERS:?}" --cert-dir /var/lib/kube-lite/apiserver \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--client-ca-file "$PKI/ca.crt" \
		--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
		--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$PKI/ca.crt" \
		--service-cluster-ip-range "$SERVICE_CIDR" "$@"
}

run_scheduler() {
	wait_pki
	exec kube-lite-scheduler --kubeconfig "$PKI/scheduler.kubeconfig" --bind-address 0.0.0.0:10259 "$@"
}

run_controller_manager() {
	wait_pki
	exec kube-lite-controller-manager --kubeconfig "$PKI/controller-manager.kubeconfig" \
		--bind-address 0.0.0.0:10257 --root-ca-file "$PKI/ca.crt" "$@"
}

# containerd_config writes containerd's config with hack/containerd.sh (copied
# beside this script), the one place that knows how kube-lite changes the
# daemon's defaults, at the system paths; the per-registry host file here
# sends pulls from the compose registry over plain HTTP.
containerd_config() {
	local registry=${REGISTRY:-registry:5000}
	mkdir -p /etc/containerd "/etc/containerd/certs.d/$registry" /etc/cni/net.d
	REGISTRY_CONFIG_PATH=/etc/containerd/certs.d CNI_BIN_DIR=/usr/lib/cni CNI_CONF_DIR=/etc/cni/net.d \
		"$LIB/containerd.sh" config >/etc/containerd/config.toml ||
		die "could not write /etc/containerd/config.toml"
	cat >"/etc/containerd/certs.d/$registry/hosts.toml" <<EOF
server = "http://$registry"

[host."http://$registry"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
EOF
}

run_node() {
	local name=${NODE_NAME:?} ip
	command -v kube-lite-proxy >/dev/null || die "kube-lite-proxy is not in the image: build bin/ with 'make build' and the image again"
	ip=${NODE_IP:-$(ip -4 -o addr show scope global | awk '{sub(/\/.*/, "", $4); print $4; exit}')}
	wait_pki
	# Docker mounts /proc/sys read-only (compose 1.x cannot ask for
	# systempaths=unconfined); the CNI plugins set sysctls of the pods'
	# network namespaces through it.
	mount -o remount,rw /proc/sys 2>/dev/null || mount -t proc -o rw proc /proc 2>/dev/null || log "warning: /proc/sys stays read-only"
	containerd_config
	# A container that restarted keeps its containerd volume but none of
	# the old processes: start from an empty task state.
	rm -rf /run/containerd
	containerd --config /etc/containerd/config.toml >/var/log/containerd.log 2>&1 &
	local cpid=$!
	wait_for 60 "containerd" ctr version
	log "containerd up; kubelet for $name ($ip)"

	# Only the sandbox image and CoreDNS's (deploy/addons, named
	# kube-lite.local/coredns as in make up) are side-loaded; workloads pull
	# from the registry.
	mkdir -p /var/lib/kube-lite/images
	cp "$IMAGES/pause.tar" "$IMAGES/coredns.tar" /var/lib/kube-lite/images/
	kube-lite-kubelet --kubeconfig "$PKI/node-$name.kubeconfig" --node-name "$name" --node-ip "$ip" \
		--container-runtime-endpoint unix:///run/containerd/containerd.sock \
		--root-dir /var/lib/kube-lite/kubelet --image-dir /var/lib/kube-lite/images \
		--cni-conf-dir /etc/cni/net.d --cni-bin-dir /usr/lib/cni \
		--cgroup-root "/kube-lite-compose/$name" \
		--cluster-dns "$CLUSTER_DNS" --cluster-domain cluster.local \
		--tls-cert-file "$PKI/kubelet-$name.crt" --tls-private-key-file "$PKI/kubelet-$name.key" \
		--client-ca-file "$PKI/ca.crt" "$@" &
	local kpid=$!
	local pids=("$cpid" "$kpid")
	# Its rules live in this container's network namespace: they go with
	# the container, no --cleanup needed.
	kube-lite-proxy --kubeconfig "$PKI/proxy.kubeconfig" --hostname-override "$name" \
		--cluster-cidr "$CLUSTER_CIDR" --service-cluster-ip-range "$SERVICE_CIDR" \
		--healthz-bind-address 0.0.0.0:10256 --metrics-bind-address 127.0.0.1:10249 &
	pids+=("$!")
	wait_for 60 "kube-lite-proxy" curl -fsS http://127.0.0.1:10256/healthz
	log "kube-lite-proxy up"
	# Any daemon dying takes the node down, so that docker's restart
	# policy (or the operator) sees it.
	wait -n "${pids[@]}" || true
	die "containerd, kubelet or kube-lite-proxy exited"
}

# run_registry serves Debian's docker-registry and pushes the test images
# into it from the OCI tarballs, so that nodes pull them for real.
run_registry() {
	# Debian's default config asks for htpasswd credentials; the nodes pull
	# anonymously over the compose network.
	mkdir -p /var/lib/docker-registry
	cat >/etc/docker/registry/config.yml <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: /var/lib/docker-registry
  delete:
    enabled: true
http:
  addr: :5000
EOF
	docker-registry serve /etc/docker/registry/config.yml &
	local rpid=$!
	wait_for 60 "the registry" curl -fsS http://127.0.0.1:5000/v2/
	local img ref
	for img in busybox:1.35 testapp:1.0; do
		ref=${img%%:*}
		skopeo --insecure-policy copy --dest-tls-verify=false \
			"oci-archive:$IMAGES/$ref.tar" "docker://127.0.0.1:5000/kube-lite/$img" >&2
		log "pushed kube-lite/$img"
	done
	touch /tmp/registry-seeded
	wait "$rpid"
}

ROLE=${1:?usage: entrypoint.sh ROLE [ARGS...]}
shift
case "$ROLE" in
pki) run_pki ;;
etcd) run_etcd ;;
apiserver) run_apiserver "$@" ;;
scheduler) run_scheduler "$@" ;;
controller-manager) run_controller_manager "$@" ;;
node) run_node "$@" ;;
registry) run_registry ;;
*) die "unknown role $ROLE" ;;
esac
