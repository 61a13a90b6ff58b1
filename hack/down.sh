#!/usr/bin/env bash
# make down: stops what make up started and removes the pods' containers,
# network namespaces and mounts. The state in $KUBE_LITE_DIR is kept for the
# next make up; PURGE=1 removes it too.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

step "stopping kubelet"
stop kubelet
step "stopping containerd and removing pod containers, mounts and network namespaces"
"$ROOT/hack/containerd.sh" stop "$DIR/containerd" || true
grep -F " $DIR/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
# The CNI bridge plugin's masquerade rules for our pods carry the network's
# name in a comment and the pod's address; remove those of this cluster's pod
# range and the per-pod chains they jump to.
if command -v iptables-save >/dev/null; then
	range_prefix=$(echo "$CLUSTER_CIDR" | cut -d. -f1-2).
	remove_masquerade "$range_prefix"
	iptables-save -t nat | grep -F -- '--comment "name: \"kube-lite\"' | grep -F -- "-s $range_prefix" | sed -e 's/^-A /-D /' |
		while read -r rule; do eval iptables -t nat "$rule" 2>/dev/null || true; done
	for c in $(iptables-save -t nat | awk '/^:CNI-[0-9a-f]+ /{sub(":", "", $1); print $1}'); do
		if ! iptables-save -t nat | grep -q -- "-j $c\b"; then
			iptables -t nat -F "$c" 2>/dev/null && iptables -t nat -X "$c" 2>/dev/null || true
		fi
	done
fi
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
