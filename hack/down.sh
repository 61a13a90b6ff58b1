#!/usr/bin/env bash
# make down: stops what make up started and removes the pods' containers,
# network namespaces and mounts. The state in $KUBE_LITE_DIR is kept for the
# next make up; PURGE=1 removes it too.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

step "stopping kube-lite-proxy and removing its rules"
stop proxy
# Its nftables table and the unreachable route for the service range.
if [ -x "$BIN/kube-lite-proxy" ]; then
	mkdir -p "$LOGS"
	"$BIN/kube-lite-proxy" --cleanup --nftables-table "$PROXY_TABLE" --service-cluster-ip-range "$SERVICE_CIDR" >>"$LOGS/proxy.log" 2>&1 ||
		echo "    kube-lite-proxy --cleanup failed; see $LOGS/proxy.log" >&2
fi
step "stopping kubelet"
stop kubelet
step "stopping containerd and removing pod containers, mounts and network namespaces"
"$ROOT/hack/containerd.sh" stop "$DIR/containerd" || true
grep -F " $DIR/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
# The kubelet's masquerade rule for this cluster's pod range (one per node;
# the CNI bridge plugin adds none of its own, see pkg/kubelet/cni).
remove_masquerade "$(echo "$CLUSTER_CIDR" | cut -d. -f1-2)."
if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE" || true; fi
step "stopping controller-manager, scheduler and apiserver"
stop controller-manager
stop scheduler
stop apiserver
if [ "${PURGE:-0}" = 1 ]; then
	step "removing $DIR"
	rm -rf "$DIR"
fi
echo "kube-lite is down."
