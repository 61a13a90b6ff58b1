#!/usr/bin/env bash
# Installs the Debian packages kube-lite needs that are not there yet.
# Idempotent: with everything present it changes nothing and needs no network.
#   hack/deps.sh [group...]   groups: base, node, compose (default: base node)
set -euo pipefail

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(base node)

pkgs=()
for g in "${groups[@]}"; do
  case "$g" in
    base)    pkgs+=(etcd-server etcd-client iproute2 curl ca-certificates) ;;
    node)    pkgs+=(containerd runc containernetworking-plugins iptables iproute2 busybox-static nftables) ;;
    compose) pkgs+=(docker.io docker-compose debootstrap) ;;
    *) echo "hack/deps.sh: unknown group '$g' (base, node, compose)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "==> installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the packaged daemons; kube-lite runs its own instances.
for svc in etcd containerd docker; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
    $SUDO systemctl disable "$svc" >/dev/null 2>&1 || true
  fi
done
