#!/usr/bin/env bash
# Joins this host to a kube-lite cluster as a node, from the PKI directory
# written by kube-lite-pki (run with --node NAME for this host): installs the
# kubelet and kube-lite-proxy to /usr/local/bin, their certificates and flags
# to /etc/kube-lite, containerd's kube-lite config (a drop-in for Debian's
# containerd.service), the images (CoreDNS's among them, for the cluster DNS
# addon), and the kubelet and proxy units; enables and starts containerd and
# the kubelet, waits until the Node is Ready, then starts the proxy.
#
#   hack/join-node.sh --pki DIR --node NAME [options]
#   hack/join-node.sh --stop [--root R] [--no-systemd]
#
# Options:
#   --pki DIR            PKI directory from kube-lite-pki, with this node's files
#   --node NAME          Node name (default: short hostname); its files must be in --pki
#   --node-ip IP         this node's address (default: first global IPv4 address)
#   --root R             install under R instead of / (needs --no-systemd)
#   --no-systemd         write the same files, then run the units' ExecStart commands
#                        in the background (no systemd on this host)
#   --bin-dir DIR        where the built binaries are (default: the repo's bin/)
#   --images DIR         OCI image tarballs to side-load (default: built with hack/images.sh)
#   --kubelet-port N     kubelet HTTPS API (default 10250)
#   --healthz-port N     kubelet /healthz on localhost (default 10248)
#   --cni-bridge NAME    host bridge of the pod network (default cni0)
#   --cluster-cidr CIDR  pod addresses of the cluster (default 10.244.0.0/16)
#   --service-cluster-ip-range CIDR
#                        Services' cluster IPs, as the apiserver's (default 10.96.0.0/16)
#   --cluster-dns IP     the kube-dns Service pods resolve through (default 10.96.0.10,
#                        the tenth address of the service range)
#   --proxy-healthz-port N  kube-lite-proxy /healthz (default 10256)
#   --proxy-metrics-port N  kube-lite-proxy /metrics on localhost (default 10249)
#   --containerd-bin P   containerd binary (default /usr/bin/containerd)
#   --stop               stop the kubelet and kube-lite-proxy and remove the proxy's
#                        rules; with --no-systemd also containerd and every pod
#                        container, mount, bridge and masquerade rule
set -euo pipefail
# shellcheck source=../deploy/systemd/lib.sh
source "$(dirname "$0")/../deploy/systemd/lib.sh"

PKI_SRC="" NODE=$(hostname -s | tr '[:upper:]' '[:lower:]') NODE_IP="" ROOT_DIR="" NO_SYSTEMD=0
SRC_BIN=$REPO/bin IMAGES="" KUBELET_PORT=10250 HEALTHZ_PORT=10248 CNI_BRIDGE=cni0
CONTAINERD_BIN=/usr/bin/containerd STOP=0
CLUSTER_CIDR=10.244.0.0/16 SERVICE_CIDR=10.96.0.0/16 CLUSTER_DNS=10.96.0.10
PROXY_HEALTHZ_PORT=10256 PROXY_METRICS_PORT=10249
while [ $# -gt 0 ]; do
	case $1 in
	--pki) PKI_SRC=$2; shift ;;
	--node) NODE=$2; shift ;;
	--node-ip) NODE_IP=$2; shift ;;
	--root) ROOT_DIR=$2; shift ;;
	--no-systemd) NO_SYSTEMD=1 ;;
	--bin-dir) SRC_BIN=$2; shift ;;
	--images) IMAGES=$2; shift ;;
	--kubelet-port) KUBELET_PORT=$2; shift ;;
	--healthz-port) HEALTHZ_PORT=$2; shift ;;
	--cni-bridge) CNI_BRIDGE=$2; shift ;;
	--containerd-bin) CONTAINERD_BIN=$2; shift ;;
	--cluster-cidr) CLUSTER_CIDR=$2; shift ;;
	--service-cluster-ip-range) SERVICE_CIDR=$2; shift ;;
	--cluster-dns) CLUSTER_DNS=$2; shift ;;
	--proxy-healthz-port) PROXY_HEALTHZ_PORT=$2; shift ;;
	--proxy-metrics-port) PROXY_METRICS_PORT=$2; shift ;;
	--stop) STOP=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || die "run as root: the kubelet drives containerd, mounts and networks"
[ ${#CNI_BRIDGE} -le 15 ] || die "--cni-bridge $CNI_BRIDGE: interface names have at most 15 characters"
if [ -n "$ROOT_DIR" ]; then
	mkdir -p "$ROOT_DIR"
	ROOT_DIR=$(cd "$ROOT_DIR" && pwd)
fi
set_layout "$ROOT_DIR"
check_mode

CONTAINERD_ROOT=$R/var/lib/containerd
CONTAINERD_STATE=$R/run/containerd
CONTAINERD_SOCK=$R/run/containerd/containerd.sock
SANDBOX_IMAGE=kube-lite.local/pause:3.10
CNI_BIN_DIR=/usr/lib/cni
CNI_CONF_DIR=$CONF_DIR/cni/net.d
# The kubelet names pod cgroups cgroupfs-style (/kubepods/<qos>/pod<uid>) and
# writes them under /sys/fs/cgroup itself, so runc must use the cgroupfs
# driver on every host, systemd or not; SystemdCgroup = true would make runc
# reject those paths.
SYSTEMD_CGROUP=false

# stop_node: the --no-systemd teardown — the kubelet, every pod container,
# containerd and its shims, mounts under the root, the sandboxes' network
# namespaces, masquerade rules and the bridge.
stop_node() {
	local pid ns t cidr
	# This node's pod range, read while its bridge still has it; without a
	# bridge (no pod ran yet) from the CNI config the kubelet wrote for it,
	# as the kubelet's masquerade rule may be there already.
	cidr=$(ip route show dev "$CNI_BRIDGE" proto kernel 2>/dev/null | awk '{print $1; exit}' || true)
	if [ -z "$cidr" ]; then
		cidr=$(sed -n 's/.*"subnet": *"\([0-9./]*\)".*/\1/p' "$CNI_CONF_DIR"/*.conflist 2>/dev/null | head -1 || true)
	fi
	stop_unit kube-lite-proxy.service
	proxy_cleanup
	stop_unit kube-lite-kubelet.service
	if [ -S "$CONTAINERD_SOCK" ]; then
		for ns in $(ctr --address "$CONTAINERD_SOCK" namespaces ls -q 2>/dev/null); do
			for t in $(ctr --address "$CONTAINERD_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
				ctr --address "$CONTAINERD_SOCK" -n "$ns" tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true
			done
		done
		sleep 0.5
	fi
	stop_unit containerd.service
	# The shims outlive containerd; they carry its socket in their arguments.
	for p in /proc/[0-9]*; do
		if tr '\0' '\n' 2>/dev/null <"$p/cmdline" | grep -qxF -- "$CONTAINERD_SOCK"; then
			pid=${p#/proc/}
			kill -9 "$pid" 2>/dev/null || true
		fi
	done
	if [ -n "$R" ]; then
		{ grep -F " $R/" /proc/self/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
	fi
	for n in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do
		[ -n "$(ip netns pids "$n" 2>/dev/null)" ] || ip netns delete "$n" 2>/dev/null || true
	done
	# The kubelet's one masquerade rule for this node's pod range.
	if [ -n "$cidr" ] && command -v iptables-save >/dev/null; then
		{ iptables-save -t nat | grep -F -- '"kube-lite masquerade"' | grep -F -- "-s $cidr " || true; } | sed -e 's/^-A /-D /' |
			while read -r rule; do eval iptables -t nat "$rule" 2>/dev/null || true; done
	fi
	if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then ip link delete "$CNI_BRIDGE" || true; fi
	[ -z "$R" ] || rm -rf "$CONTAINERD_ROOT" "$CONTAINERD_STATE"
}

# proxy_cleanup removes kube-lite-proxy's nftables rules and its route for
# the service range (read from the flags it ran with).
proxy_cleanup() {
	[ -x "$BIN_DIR/kube-lite-proxy" ] || return 0
	local range=""
	[ -f "$CONF_DIR/proxy.env" ] && range=$(sed -n 's/.*--service-cluster-ip-range \([^ "]*\).*/\1/p' "$CONF_DIR/proxy.env")
	"$BIN_DIR/kube-lite-proxy" --cleanup --service-cluster-ip-range "${range:-$SERVICE_CIDR}" ||
		echo "$(basename "$0"): kube-lite-proxy --cleanup failed" >&2
}

if [ "$STOP" = 1 ]; then
	step "stopping the node"
	if [ "$NO_SYSTEMD" = 1 ]; then
		# The bridge this node used is in its kubelet flags.
		if [ -f "$CONF_DIR/kubelet.env" ]; then
			b=$(sed -n 's/.*--cni-bridge \([^ "]*\).*/\1/p' "$CONF_DIR/kubelet.env")
			CNI_BRIDGE=${b:-$CNI_BRIDGE}
		fi
		stop_node
	else
		# containerd is the host's service: it keeps running, with the pods
		# the kubelet no longer manages; 'systemctl stop containerd' ends them.
		stop_units kube-lite-kubelet.service kube-lite-proxy.service
		proxy_cleanup
	fi
	exit 0
fi

[ -n "$PKI_SRC" ] || die "--pki DIR is required (a directory written by kube-lite-pki)"
for f in ca.crt "node-$NODE.kubeconfig" "node-$NODE.crt" "node-$NODE.key" "kubelet-$NODE.crt" "kubelet-$NODE.key"; do
	[ -f "$PKI_SRC/$f" ] || die "$PKI_SRC/$f is missing: run kube-lite-pki with --node $NODE=<address> (docs/pki.md)"
done
[ -x "$CONTAINERD_BIN" ] || die "$CONTAINERD_BIN not found: apt-get install containerd runc containernetworking-plugins iptables"
[ -x "$CNI_BIN_DIR/bridge" ] || die "$CNI_BIN_DIR/bridge not found: apt-get install containernetworking-plugins"
[ -f "$PKI_SRC/proxy.kubeconfig" ] || die "$PKI_SRC/proxy.kubeconfig is missing: write the PKI again with this kube-lite-pki (it writes kube-lite-proxy's credential)"
command -v nft >/dev/null || die "nft not found: apt-get install nftables"
NODE_IP=${NODE_IP:-$(default_ip)}
NODE_IP=${NODE_IP:-127.0.0.1}

step "binaries -> $BIN_DIR"
for b in kube-lite-kubelet kube-lite-proxy kubectl-lite; do
	[ -x "$SRC_BIN/$b" ] || die "$SRC_BIN/$b is missing: run 'make build' (or pass --bin-dir)"
	install_file "$SRC_BIN/$b" "$BIN_DIR/$b" 0755
done

step "certificates and kubeconfig of node $NODE -> $PKI_DIR"
mkdir -p "$PKI_DIR"
chmod 0700 "$PKI_DIR"
install_file "$PKI_SRC/ca.crt" "$PKI_DIR/ca.crt" 0644
install_file "$PKI_SRC/kubelet-$NODE.crt" "$PKI_DIR/kubelet.crt" 0644
install_file "$PKI_SRC/kubelet-$NODE.key" "$PKI_DIR/kubelet.key" 0600
install_file "$PKI_SRC/node-$NODE.crt" "$PKI_DIR/node.crt" 0644
install_file "$PKI_SRC/node-$NODE.key" "$PKI_DIR/node.key" 0600
install_file "$PKI_SRC/node-$NODE.kubeconfig" "$PKI_DIR/kubelet.kubeconfig" 0600
install_file "$PKI_SRC/proxy.kubeconfig" "$PKI_DIR/proxy.kubeconfig" 0600

step "images -> $STATE_DIR/images"
mkdir -p "$STATE_DIR/images"
if [ -n "$IMAGES" ]; then
	compgen -G "$IMAGES/*.tar" >/dev/null || die "no *.tar in $IMAGES"
	for i in "$IMAGES"/*.tar; do install_file "$i" "$STATE_DIR/images/$(basename "$i")" 0644; done
else
	"$REPO/hack/images.sh" "$STATE_DIR/images" >/dev/null || die "building the images failed (is busybox-static installed? is Go?); or pass --images DIR"
fi

step "containerd config -> $CONF_DIR/containerd/config.toml"
mkdir -p "$CNI_CONF_DIR" "$CONTAINERD_ROOT" "$CONTAINERD_STATE"
render "$TEMPLATES/containerd-config.toml" "$CONF_DIR/containerd/config.toml"
render "$TEMPLATES/containerd.service.d/10-kube-lite.conf" "$UNIT_DIR/containerd.service.d/10-kube-lite.conf"

step "kubelet flags and unit"
write_env "$CONF_DIR/kubelet.env" KUBE_LITE_KUBELET_ARGS \
	--kubeconfig "$PKI_DIR/kubelet.kubeconfig" --node-name "$NODE" --node-ip "$NODE_IP" \
	--container-runtime-endpoint "unix://$CONTAINERD_SOCK" --pod-infra-container-image "$SANDBOX_IMAGE" \
	--root-dir "$STATE_DIR/kubelet" --image-dir "$STATE_DIR/images" \
	--cni-bin-dir "$CNI_BIN_DIR" --cni-conf-dir "$CNI_CONF_DIR" --cni-bridge "$CNI_BRIDGE" \
	--port "$KUBELET_PORT" --healthz-port "$HEALTHZ_PORT" \
	--cluster-dns "$CLUSTER_DNS" --cluster-domain cluster.local \
	--tls-cert-file "$PKI_DIR/kubelet.crt" --tls-private-key-file "$PKI_DIR/kubelet.key" \
	--client-ca-file "$PKI_DIR/ca.crt"
render "$TEMPLATES/kube-lite-kubelet.service" "$UNIT_DIR/kube-lite-kubelet.service"
step "kube-lite-proxy flags and unit"
write_env "$CONF_DIR/proxy.env" KUBE_LITE_PROXY_ARGS \
	--kubeconfig "$PKI_DIR/proxy.kubeconfig" --hostname-override "$NODE" \
	--cluster-cidr "$CLUSTER_CIDR" --service-cluster-ip-range "$SERVICE_CIDR" \
	--healthz-bind-address "0.0.0.0:$PROXY_HEALTHZ_PORT" --metrics-bind-address "127.0.0.1:$PROXY_METRICS_PORT"
render "$TEMPLATES/kube-lite-proxy.service" "$UNIT_DIR/kube-lite-proxy.service"

step "starting containerd ($CONTAINERD_SOCK)"
start_units containerd.service
wait_for 60 ctr --address "$CONTAINERD_SOCK" version || fail_with_log containerd.service "containerd did not answer on $CONTAINERD_SOCK"

step "starting kube-lite-kubelet (node $NODE, $NODE_IP)"
start_units kube-lite-kubelet.service
SERVER=$(awk '$1 == "server:" {print $2; exit}' "$PKI_DIR/kubelet.kubeconfig")
node_ready() {
	curl -fsS --max-time 5 --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/node.crt" --key "$PKI_DIR/node.key" \
		"$SERVER/api/v1/nodes/$NODE" | grep -q '"type":"Ready","status":"True"'
}
wait_for 120 node_ready || fail_with_log kube-lite-kubelet.service "node $NODE did not become Ready at $SERVER"

step "starting kube-lite-proxy (Services of $SERVICE_CIDR)"
start_units kube-lite-proxy.service
wait_for 60 curl -fsS --max-time 2 "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz" ||
	fail_with_log kube-lite-proxy.service "kube-lite-proxy did not answer on port $PROXY_HEALTHZ_PORT"

echo
echo "Node $NODE joined $SERVER and is Ready."
