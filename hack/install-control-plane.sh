#!/usr/bin/env bash
# Installs a kube-lite control-plane host from a PKI directory written by
# kube-lite-pki: binaries to /usr/local/bin, certificates and flags to
# /etc/kube-lite, the units of deploy/systemd to /etc/systemd/system, then
# enables and starts etcd, the apiserver, the scheduler and the
# controller-manager and waits until they answer.
#
#   hack/install-control-plane.sh --pki DIR [options]
#   hack/install-control-plane.sh --stop [--root R] [--no-systemd]
#
# Options:
#   --pki DIR                   PKI directory from kube-lite-pki (required to install)
#   --root R                    install under R instead of / (needs --no-systemd)
#   --no-systemd                write the same files, then run the units' ExecStart
#                               commands in the background (no systemd on this host)
#   --bin-dir DIR               where the built binaries are (default: the repo's bin/)
#   --secure-port N             apiserver port (default 6443)
#   --bind-address IP           apiserver listen address (default 0.0.0.0)
#   --etcd-servers URLS         use this external etcd cluster instead of a local kube-lite-etcd
#   --etcd-client-port N        local etcd client port on 127.0.0.1 (default 2379)
#   --etcd-peer-port N          local etcd peer port on 127.0.0.1 (default 2380)
#   --etcd-bin PATH             Debian's etcd-server binary (default /usr/bin/etcd)
#   --scheduler-port N          scheduler /readyz,/metrics on 127.0.0.1 (default 10259)
#   --controller-manager-port N controller-manager /readyz,/metrics on 127.0.0.1 (default 10257)
#   --cluster-cidr CIDR         pod addresses, one /24 per node (default 10.244.0.0/16)
#   --service-cluster-ip-range CIDR
#                               Services' cluster IPs (default 10.96.0.0/16; the nodes'
#                               kube-lite-proxy and --cluster-dns must agree)
#   --stop                      stop and disable what an install started
set -euo pipefail
# shellcheck source=../deploy/systemd/lib.sh
source "$(dirname "$0")/../deploy/systemd/lib.sh"

PKI_SRC="" ROOT_DIR="" NO_SYSTEMD=0 SRC_BIN=$REPO/bin STOP=0
SECURE_PORT=6443 BIND_ADDRESS=0.0.0.0 ETCD_SERVERS="" ETCD_CLIENT_PORT=2379 ETCD_PEER_PORT=2380
ETCD_BIN=/usr/bin/etcd SCHEDULER_PORT=10259 CM_PORT=10257 CLUSTER_CIDR=10.244.0.0/16 SERVICE_CIDR=10.96.0.0/16
while [ $# -gt 0 ]; do
	case $1 in
	--pki) PKI_SRC=$2; shift ;;
	--root) ROOT_DIR=$2; shift ;;
	--no-systemd) NO_SYSTEMD=1 ;;
	--bin-dir) SRC_BIN=$2; shift ;;
	--secure-port) SECURE_PORT=$2; shift ;;
	--bind-address) BIND_ADDRESS=$2; shift ;;
	--etcd-servers) ETCD_SERVERS=$2; shift ;;
	--etcd-client-port) ETCD_CLIENT_PORT=$2; shift ;;
	--etcd-peer-port) ETCD_PEER_PORT=$2; shift ;;
	--etcd-bin) ETCD_BIN=$2; shift ;;
	--scheduler-port) SCHEDULER_PORT=$2; shift ;;
	--controller-manager-port) CM_PORT=$2; shift ;;
	--cluster-cidr) CLUSTER_CIDR=$2; shift ;;
	--service-cluster-ip-range) SERVICE_CIDR=$2; shift ;;
	--stop) STOP=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || die "run as root"
if [ -n "$ROOT_DIR" ]; then
	mkdir -p "$ROOT_DIR"
	ROOT_DIR=$(cd "$ROOT_DIR" && pwd)
fi
set_layout "$ROOT_DIR"
check_mode

UNITS=(kube-lite-etcd.service kube-lite-apiserver.service kube-lite-scheduler.service kube-lite-controller-manager.service)
if [ "$STOP" = 1 ]; then
	step "stopping the control plane"
	stop_units "${UNITS[@]}"
	exit 0
fi

[ -n "$PKI_SRC" ] || die "--pki DIR is required (a directory written by kube-lite-pki)"
for f in ca.crt apiserver.crt apiserver.key apiserver-kubelet-client.crt apiserver-kubelet-client.key \
	sa.key sa.pub admin.kubeconfig admin.crt admin.key scheduler.kubeconfig controller-manager.kubeconfig; do
	[ -f "$PKI_SRC/$f" ] || die "$PKI_SRC/$f is missing: write the PKI with kube-lite-pki first (docs/pki.md)"
done
# Pods reach the API as the kubernetes Service, the first address of the
# range (CoreDNS among them): clients that verify the serving certificate
# refuse one that does not name it.
first_service_ip() {
	local a b c d
	IFS=. read -r a b c d <<<"${1%/*}"
	local n=$(((a << 24 | b << 16 | c << 8 | d) + 1))
	echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
}
KUBERNETES_IP=$(first_service_ip "$SERVICE_CIDR")
if command -v openssl >/dev/null &&
	! openssl x509 -in "$PKI_SRC/apiserver.crt" -noout -ext subjectAltName 2>/dev/null | grep -qE "IP Address:${KUBERNETES_IP//./\\.}(,|\$)"; then
	die "$PKI_SRC/apiserver.crt does not name $KUBERNETES_IP, the kubernetes Service's address: run kube-lite-pki again with --apiserver-host $KUBERNETES_IP (docs/deploy-vms.md, step 3)"
fi
if [ -z "$ETCD_SERVERS" ]; then
	[ -x "$ETCD_BIN" ] || die "$ETCD_BIN not found: apt-get install etcd-server (or pass --etcd-servers)"
else
	UNITS=("${UNITS[@]:1}")
fi

step "binaries -> $BIN_DIR"
for b in kube-lite-apiserver kube-lite-scheduler kube-lite-controller-manager kube-lite-pki kubectl-lite; do
	[ -x "$SRC_BIN/$b" ] || die "$SRC_BIN/$b is missing: run 'make build' (or pass --bin-dir)"
	install_file "$SRC_BIN/$b" "$BIN_DIR/$b" 0755
done

step "certificates and kubeconfigs -> $PKI_DIR"
mkdir -p "$PKI_DIR"
chmod 0700 "$PKI_DIR"
for f in ca.crt apiserver.crt apiserver-kubelet-client.crt sa.pub admin.crt; do
	install_file "$PKI_SRC/$f" "$PKI_DIR/$f" 0644
done
for f in apiserver.key apiserver-kubelet-client.key sa.key admin.key admin.kubeconfig \
	scheduler.kubeconfig controller-manager.kubeconfig; do
	install_file "$PKI_SRC/$f" "$PKI_DIR/$f" 0600
done

step "flags -> $CONF_DIR/*.env"
mkdir -p "$STATE_DIR/etcd" "$STATE_DIR/apiserver"
chmod 0700 "$STATE_DIR/etcd"
ETCD_URL=${ETCD_SERVERS:-http://127.0.0.1:$ETCD_CLIENT_PORT}
# etcd listens on loopback only: the apiserver is its one client, so it
# needs neither TLS nor a firewall rule. No auto-compaction: the apiserver
# compacts (--etcd-compaction-interval).
write_env "$CONF_DIR/etcd.env" KUBE_LITE_ETCD_ARGS \
	--name "$(hostname -s)" --data-dir "$STATE_DIR/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "$(hostname -s)=http://127.0.0.1:$ETCD_PEER_PORT" \
	--quota-backend-bytes 2147483648
write_env "$CONF_DIR/apiserver.env" KUBE_LITE_APISERVER_ARGS \
	--secure-port "$SECURE_PORT" --bind-address "$BIND_ADDRESS" --etcd-servers "$ETCD_URL" \
	--cert-dir "$STATE_DIR/apiserver" \
	--tls-cert-file "$PKI_DIR/apiserver.crt" --tls-private-key-file "$PKI_DIR/apiserver.key" \
	--client-ca-file "$PKI_DIR/ca.crt" \
	--service-account-key-file "$PKI_DIR/sa.pub" --service-account-signing-key-file "$PKI_DIR/sa.key" \
	--kubelet-client-certificate "$PKI_DIR/apiserver-kubelet-client.crt" \
	--kubelet-client-key "$PKI_DIR/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority "$PKI_DIR/ca.crt" \
	--service-cluster-ip-range "$SERVICE_CIDR"
write_env "$CONF_DIR/scheduler.env" KUBE_LITE_SCHEDULER_ARGS \
	--kubeconfig "$PKI_DIR/scheduler.kubeconfig" --bind-address "127.0.0.1:$SCHEDULER_PORT"
write_env "$CONF_DIR/controller-manager.env" KUBE_LITE_CONTROLLER_MANAGER_ARGS \
	--kubeconfig "$PKI_DIR/controller-manager.kubeconfig" --bind-address "127.0.0.1:$CM_PORT" \
	--allocate-node-cidrs --cluster-cidr "$CLUSTER_CIDR" --root-ca-file "$PKI_DIR/ca.crt"

step "units -> $UNIT_DIR"
for u in kube-lite-etcd.service kube-lite-apiserver.service kube-lite-scheduler.service kube-lite-controller-manager.service; do
	render "$TEMPLATES/$u" "$UNIT_DIR/$u"
done

if [ -z "$ETCD_SERVERS" ] && [ "$NO_SYSTEMD" = 0 ] && systemctl is-enabled --quiet etcd.service 2>/dev/null; then
	step "disabling Debian's etcd.service (kube-lite-etcd.service takes its ports)"
	systemctl disable --now etcd.service
fi

api_ready() {
	curl -fsS --max-time 5 --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/admin.crt" --key "$PKI_DIR/admin.key" \
		"https://127.0.0.1:$SECURE_PORT/readyz"
}
if [ -z "$ETCD_SERVERS" ]; then
	step "starting kube-lite-etcd (127.0.0.1:$ETCD_CLIENT_PORT)"
	start_units kube-lite-etcd.service
	wait_for 60 curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" ||
		fail_with_log kube-lite-etcd.service "etcd did not become healthy (is port $ETCD_CLIENT_PORT free?)"
fi
step "starting kube-lite-apiserver (https://$BIND_ADDRESS:$SECURE_PORT)"
start_units kube-lite-apiserver.service
wait_for 60 api_ready || fail_with_log kube-lite-apiserver.service "the apiserver did not become ready (is port $SECURE_PORT free?)"
step "starting kube-lite-scheduler and kube-lite-controller-manager"
start_units kube-lite-scheduler.service kube-lite-controller-manager.service
wait_for 60 curl -fsS --max-time 2 "http://127.0.0.1:$SCHEDULER_PORT/readyz" ||
	fail_with_log kube-lite-scheduler.service "the scheduler did not become ready (is port $SCHEDULER_PORT free?)"
wait_for 60 curl -fsS --max-time 2 "http://127.0.0.1:$CM_PORT/readyz" ||
	fail_with_log kube-lite-controller-manager.service "the controller-manager did not become ready (is port $CM_PORT free?)"

cat <<MSG

The kube-lite control plane is up: https://127.0.0.1:$SECURE_PORT

  export KUBECONFIG=$PKI_DIR/admin.kubeconfig
  $BIN_DIR/kubectl-lite get nodes

Join nodes with hack/join-node.sh --pki <ca.crt and the node's files> --node <name> (docs/deploy-vms.md, step 5).
Once a node is Ready, deploy cluster DNS (CoreDNS; its image is side-loaded by join-node.sh):
  $BIN_DIR/kubectl-lite apply -f $REPO/deploy/addons/
MSG
