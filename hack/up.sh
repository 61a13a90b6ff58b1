#!/usr/bin/env bash
# make up: a one-node kube-lite cluster on this machine — PKI, the apiserver on
# an embedded etcd, scheduler, controller-manager, a private containerd, a
# kubelet, kube-lite-proxy and the addons of deploy/addons (CoreDNS). Safe to
# run again: what runs is left running.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { STEP="check privileges"; fail "" "the kubelet drives containerd, mounts and networks: run as root (sudo make up)"; }
for b in kube-lite-apiserver kube-lite-scheduler kube-lite-controller-manager kube-lite-kubelet kube-lite-proxy kube-lite-pki kubectl-lite; do
	[ -x "$BIN/$b" ] || { STEP="check binaries"; fail "" "run 'make build' (missing $BIN/$b)"; }
done
NODE_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub(/\/.*/, "", $4); print $4; exit}')
NODE_IP=${NODE_IP:-127.0.0.1}

mkdir -p "$LOGS"
step "images: the pause, busybox, testapp and coredns OCI tarballs in $DIR/images"
if [ ! -f "$DIR/images/testapp.tar" ] || [ "$ROOT/cmd/testapp" -nt "$DIR/images/testapp.tar" ] ||
	[ ! -f "$DIR/images/coredns.tar" ] || [ "$ROOT/hack/coredns.sh" -nt "$DIR/images/coredns.tar" ]; then
	echo "    building them (CoreDNS from its Go module: minutes the first time, then cached; see hack/coredns.sh)"
	"$ROOT/hack/images.sh" "$DIR/images" >"$LOGS/images.log" 2>&1 || fail "$LOGS/images.log" "is busybox-static installed? (make deps)"
fi

step "pki: CA, certificates and kubeconfigs in $PKI"
mkdir -p "$LOGS"
# Pods reach the apiserver at the kubernetes Service's address, the first of
# the service range: its certificate must name it.
"$BIN/kube-lite-pki" --dir "$PKI" --apiserver-url "https://127.0.0.1:$PORT" --apiserver-host 127.0.0.1 \
	--apiserver-host "$NODE_IP" --apiserver-host "$NODE" --apiserver-host "$(nth_ip "$SERVICE_CIDR" 1)" \
	--node "$NODE=$NODE_IP" >"$LOGS/pki.log" 2>&1 ||
	fail "$LOGS/pki.log" "remove $PKI if it was written by another tool"

step "apiserver: https://127.0.0.1:$PORT (embedded etcd in $DIR/etcd)"
start apiserver "$BIN/kube-lite-apiserver" --secure-port "$PORT" --bind-address 0.0.0.0 \
	--data-dir "$DIR/etcd" --cert-dir "$DIR/apiserver" \
	--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
	--client-ca-file "$PKI/ca.crt" \
	--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
	--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority "$PKI/ca.crt" \
	--service-cluster-ip-range "$SERVICE_CIDR"
wait_for 60 admin_curl /readyz || fail "$LOGS/apiserver.log" "is port $PORT free? (ss -ltnp | grep :$PORT); set KUBE_LITE_PORT to use another"

step "scheduler and controller-manager"
start scheduler "$BIN/kube-lite-scheduler" --kubeconfig "$PKI/scheduler.kubeconfig" --bind-address "127.0.0.1:$SCHEDULER_PORT"
start controller-manager "$BIN/kube-lite-controller-manager" --kubeconfig "$PKI/controller-manager.kubeconfig" \
	--allocate-node-cidrs --cluster-cidr "$CLUSTER_CIDR" --bind-address "127.0.0.1:$CM_PORT" --root-ca-file "$PKI/ca.crt"
wait_for 30 curl -fsS "http://127.0.0.1:$SCHEDULER_PORT/readyz" || fail "$LOGS/scheduler.log" "is port $SCHEDULER_PORT free? (KUBE_LITE_SCHEDULER_PORT picks another)"
wait_for 30 curl -fsS "http://127.0.0.1:$CM_PORT/readyz" || fail "$LOGS/controller-manager.log" "is port $CM_PORT free? (KUBE_LITE_CM_PORT picks another)"

step "containerd: private instance in $DIR/containerd"
SOCK=$("$ROOT/hack/containerd.sh" start "$DIR/containerd" 2>"$LOGS/containerd-start.log") ||
	fail "$DIR/containerd/containerd.log" "another containerd may hold the same state; run 'make down' first"

step "kubelet: node $NODE ($NODE_IP)"
KUBELET_STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start kubelet "$BIN/kube-lite-kubelet" --kubeconfig "$PKI/node-$NODE.kubeconfig" --node-name "$NODE" --node-ip "$NODE_IP" \
	--container-runtime-endpoint "unix://$SOCK" --root-dir "$DIR/kubelet" --image-dir "$DIR/images" \
	--cni-conf-dir "$DIR/containerd/cni/net.d" --cni-bridge "$BRIDGE" \
	--port "$KUBELET_PORT" --healthz-port "$KUBELET_HEALTHZ_PORT" \
	--cluster-dns "$CLUSTER_DNS" --cluster-domain "$CLUSTER_DOMAIN" \
	--tls-cert-file "$PKI/kubelet-$NODE.crt" --tls-private-key-file "$PKI/kubelet-$NODE.key" --client-ca-file "$PKI/ca.crt"

step "waiting for node $NODE to be Ready"
# Ready as reported by this kubelet: a Node object kept from an earlier run
# may still say Ready with an old heartbeat.
node_ready() {
	local hb
	hb=$(admin_curl "/api/v1/nodes/$NODE" | grep -o '"type":"Ready","status":"True","lastHeartbeatTime":"[^"]*"' | sed 's/.*"lastHeartbeatTime":"\([^"]*\)"/\1/')
	[ -n "$hb" ] && ! [[ "$hb" < "$KUBELET_STARTED" ]]
}
wait_for 90 node_ready || fail "$LOGS/kubelet.log" "check the kubelet log; 'make down && make up' starts afresh"

# Services need the proxy's rules, and CoreDNS reaches the API through the
# kubernetes Service: the addons come after it.
step "kube-lite-proxy: Services of $SERVICE_CIDR on node $NODE"
start proxy "$BIN/kube-lite-proxy" --kubeconfig "$PKI/proxy.kubeconfig" --hostname-override "$NODE" \
	--cluster-cidr "$CLUSTER_CIDR" --service-cluster-ip-range "$SERVICE_CIDR" --nftables-table "$PROXY_TABLE" \
	--healthz-bind-address "127.0.0.1:$PROXY_HEALTHZ_PORT" --metrics-bind-address "127.0.0.1:$PROXY_METRICS_PORT"
wait_for 60 curl -fsS "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz" ||
	fail "$LOGS/proxy.log" "is port $PROXY_HEALTHZ_PORT free? (KUBE_LITE_PROXY_HEALTHZ_PORT picks another); is nftables installed? (make deps)"

step "addons: CoreDNS (kube-dns at $CLUSTER_DNS)"
: >"$LOGS/addons.log"
apply_addons "$PKI/admin.kubeconfig" "$CLUSTER_DNS" "$LOGS/addons.log" ||
	fail "$LOGS/addons.log" "see why the apiserver refused the manifests of $ROOT/deploy/addons"
wait_dns_ready "$PKI/admin.kubeconfig" "$LOGS/addons.log" ||
	fail "$LOGS/addons.log" "kubectl-lite -n kube-system describe pods -l k8s-app=kube-dns; kubectl-lite -n kube-system logs deployment/coredns"
DNS_MSG="
Services work on this node (kube-lite-proxy, log $LOGS/proxy.log) and cluster DNS is
ready: CoreDNS answers for $CLUSTER_DOMAIN at $CLUSTER_DNS (kube-dns in kube-system), and pods
resolve <service>.<namespace>.svc.$CLUSTER_DOMAIN. It forwards nothing outside the
cluster domain unless you opt in (see $ROOT/deploy/addons/coredns.yaml).
"

cat <<MSG

kube-lite is up: one node ($NODE), API at https://127.0.0.1:$PORT. Logs: $LOGS

  export KUBECONFIG=$PKI/admin.kubeconfig
  export PATH=$BIN:\$PATH
  kubectl-lite get nodes
  kubectl-lite apply -f $ROOT/examples/pod.yaml
  kubectl-lite wait --for=condition=Ready pod/testapp && kubectl-lite get pods -o wide
$DNS_MSG
The admin kubeconfig is readable by root only. Stop everything with 'make down'
(with the same KUBE_LITE_* variables, if you set any).
MSG
