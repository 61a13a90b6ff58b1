#!/usr/bin/env bash
# Runs a private containerd for kube-lite's kubelet: its own config, root,
# state and socket under one directory, so that tests never touch (or depend
# on) a system containerd.
#
#   hack/containerd.sh install       apt-get install what is missing (idempotent)
#   hack/containerd.sh config [DIR]  print the config.toml that start writes: root, state and
#                                    runc's state under DIR, or without DIR the daemon's default
#                                    paths (the compose node image's /etc/containerd/config.toml)
#   hack/containerd.sh start DIR     write DIR/config.toml, start containerd, print the socket
#   hack/containerd.sh stop DIR      kill it and remove its containers, mounts and network namespaces
#
# Environment: SANDBOX_IMAGE (default kube-lite.local/pause:3.10), CNI_BIN_DIR
# (default /usr/lib/cni), CNI_CONF_DIR (default DIR/cni/net.d, without DIR
# /etc/cni/net.d), REGISTRY_CONFIG_PATH (the registry hosts directory, such as
# /etc/containerd/certs.d, with a HOST/hosts.toml per registry; default unset).
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables iproute2 busybox-static)

die() { echo "containerd.sh: $*" >&2; exit 1; }

install() {
	local missing=()
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		return 0
	fi
	[ "$(id -u)" = 0 ] || die "need root to install ${missing[*]}"
	# The package lists may be absent on a fresh machine.
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
		apt-get update >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
	fi
}

# config prints containerd's config.toml. It starts from the daemon's own
# defaults so that every key this version knows keeps its default, then sets
# what these machines need: restrict_oom_score_adj because there is no
# CAP_SYS_RESOURCE, cgroupfs because no systemd runs, our sandbox image
# because no registry is reachable, and with DIR containerd's root and state
# and runc's state under DIR so that instances never share them. With
# REGISTRY_CONFIG_PATH containerd reads per-registry hosts.toml files there
# (the compose cluster's registry speaks plain HTTP).
config() {
	local dir=${1:-}
	# containerd wants absolute paths; start passes one already.
	case $dir in '' | /*) ;; *) dir=$PWD/$dir ;; esac
	local sandbox=${SANDBOX_IMAGE:-kube-lite.local/pause:3.10}
	local bindir=${CNI_BIN_DIR:-/usr/lib/cni}
	local confdir=${CNI_CONF_DIR:-${dir:+$dir/cni/net.d}}
	confdir=${confdir:-/etc/cni/net.d}
	local hosts=${REGISTRY_CONFIG_PATH:-}
	command -v containerd >/dev/null || die "containerd is not installed (run: $0 install)"
	local edits=(
		-e "s|^\(\s*\)sandbox_image = .*|\1sandbox_image = \"${sandbox}\"|"
		-e "s|^\(\s*\)restrict_oom_score_adj = .*|\1restrict_oom_score_adj = true|"
		-e "s|^\(\s*\)SystemdCgroup = .*|\1SystemdCgroup = false|"
		-e "s|^\(\s*\)bin_dir = \"/opt/cni/bin\"|\1bin_dir = \"${bindir}\"|"
		-e "s|^\(\s*\)conf_dir = \"/etc/cni/net.d\"|\1conf_dir = \"${confdir}\"|"
	)
	# Checked after the edits: a default that changed its spelling in
	# another containerd version must fail here, not in a test later.
	local checks=('restrict_oom_score_adj = true')
	if [ -n "$dir" ]; then
		edits+=(
			-e "s|^root = .*|root = \"${dir}/root\"|"
			-e "s|^state = .*|state = \"${dir}/state\"|"
			-e "s|^\(\s*\)Root = \"\"|\1Root = \"${dir}/state/runc\"|"
		)
		checks+=("root = \"${dir}/root\"" "state = \"${dir}/state\"" "Root = \"${dir}/state/runc\"")
	fi
	if [ -n "$hosts" ]; then
		edits+=(-e "s|^\(\s*\)config_path = \"\"|\1config_path = \"${hosts}\"|")
		checks+=("config_path = \"${hosts}\"")
	fi
	local out w
	out=$(containerd config default | sed "${edits[@]}") || die "containerd config default failed"
	for w in "${checks[@]}"; do
		grep -qF -- "$w" <<<"$out" || die "could not set '$w' in containerd's config"
	done
	printf '%s\n' "$out"
}

start() {
	local dir=${1:?usage: containerd.sh start DIR}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local sock=$dir/containerd.sock
	local confdir=${CNI_CONF_DIR:-$dir/cni/net.d}
	command -v containerd >/dev/null || die "containerd is not installed (run: $0 install)"
	if [ -f "$dir/containerd.pid" ] && kill -0 "$(cat "$dir/containerd.pid")" 2>/dev/null; then
		echo "$sock"
		return 0
	fi
	mkdir -p "$dir/root" "$dir/state" "$confdir"
	# containerd's state (shim bundles, runc's state, fifos) is runtime
	# state: /run, a tmpfs, on a normal host. Every container creates and
	# deletes files there, so keep it off disk here too.
	if [ "$(stat -f -c %T "$dir/state")" != tmpfs ]; then
		mount -t tmpfs -o mode=0711 kube-lite-containerd-state "$dir/state" || die "could not mount a tmpfs on $dir/state"
	fi
	CNI_CONF_DIR=$confdir config "$dir" >"$dir/config.toml"
	containerd --config "$dir/config.toml" --address "$sock" >"$dir/containerd.log" 2>&1 &
	echo $! >"$dir/containerd.pid"
	for _ in $(seq 1 200); do
		if ctr --address "$sock" version >/dev/null 2>&1; then
			echo "$sock"
			return 0
		fi
		kill -0 "$(cat "$dir/containerd.pid")" 2>/dev/null || { tail -20 "$dir/containerd.log" >&2; die "containerd exited"; }
		sleep 0.1
	done
	tail -20 "$dir/containerd.log" >&2
	die "containerd did not answer on $sock"
}

# pids_with_arg prints the pids of processes whose command line holds $1 as
# one argument: the shims of this instance carry its socket path.
pids_with_arg() {
	local want=$1 p
	for p in /proc/[0-9]*; do
		[ -r "$p/cmdline" ] || continue
		if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$want"; then
			echo "${p#/proc/}"
		fi
	done
}

stop() {
	local dir=${1:?usage: containerd.sh stop DIR}
	[ -d "$dir" ] || return 0
	dir=$(cd "$dir" && pwd)
	local sock=$dir/containerd.sock
	if [ -S "$sock" ]; then
		for ns in $(ctr --address "$sock" namespaces ls -q 2>/dev/null); do
			for t in $(ctr --address "$sock" -n "$ns" tasks ls -q 2>/dev/null); do
				ctr --address "$sock" -n "$ns" tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true
			done
		done
		sleep 0.5
	fi
	if [ -f "$dir/containerd.pid" ]; then
		local pid
		pid=$(cat "$dir/containerd.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$dir/containerd.pid"
	fi
	for pid in $(pids_with_arg "$sock"); do kill -9 "$pid" 2>/dev/null || true; done
	# Unmount deepest first: rootfs mounts, shm, then anything else left under DIR.
	grep -F " $dir/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
	# Sandbox network namespaces that no process uses any more are leftovers
	# of this (or an earlier, crashed) instance.
	if command -v ip >/dev/null; then
		for n in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do
			if [ -z "$(ip netns pids "$n" 2>/dev/null)" ]; then
				ip netns delete "$n" 2>/dev/null || true
			fi
		done
	fi
	rm -rf "$dir/root" "$dir/state" "$sock" "$sock.ttrpc"
}

case "${1:-}" in
install) install ;;
config) shift; config "$@" ;;
start) shift; start "$@" ;;
stop) shift; stop "$@" ;;
*) die "usage: $0 install | config [DIR] | start DIR | stop DIR" ;;
esac
