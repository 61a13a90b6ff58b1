# Shared by hack/up.sh and hack/down.sh: paths and process bookkeeping.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
DIR=${KUBE_LITE_DIR:-$ROOT/.kube-lite}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
PKI=$DIR/pki
LOGS=$DIR/logs
RUN=$DIR/run
PORT=${KUBE_LITE_PORT:-6443}
NODE=${KUBE_LITE_NODE:-$(hostname -s | tr '[:upper:]' '[:lower:]')}
CLUSTER_CIDR=${KUBE_LITE_CLUSTER_CIDR:-10.244.0.0/16}
# Override these to run a second cluster on the same host.
SCHEDULER_PORT=${KUBE_LITE_SCHEDULER_PORT:-10259}
CM_PORT=${KUBE_LITE_CM_PORT:-10257}
KUBELET_PORT=${KUBE_LITE_KUBELET_PORT:-10250}
KUBELET_HEALTHZ_PORT=${KUBE_LITE_KUBELET_HEALTHZ_PORT:-10248}
BRIDGE=${KUBE_LITE_BRIDGE:-kube-lite0}
PROXY_HEALTHZ_PORT=${KUBE_LITE_PROXY_HEALTHZ_PORT:-10256}
PROXY_METRICS_PORT=${KUBE_LITE_PROXY_METRICS_PORT:-10249}
# The nftables table kube-lite-proxy owns: one per cluster on a host.
PROXY_TABLE=${KUBE_LITE_PROXY_TABLE:-kube-lite}
# Services' cluster IPs; the cluster DNS (the kube-dns Service, the kubelet's
# --cluster-dns) takes the tenth address of the range, as upstream's default.
SERVICE_CIDR=${KUBE_LITE_SERVICE_CIDR:-10.96.0.0/16}
CLUSTER_DOMAIN=cluster.local

# nth_ip CIDR N: the Nth address of an IPv4 range (10.96.0.0/16 10 -> 10.96.0.10).
nth_ip() {
	local a b c d
	IFS=. read -r a b c d <<<"${1%/*}"
	local n=$(((a << 24 | b << 16 | c << 8 | d) + $2))
	echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
}
CLUSTER_DNS=$(nth_ip "$SERVICE_CIDR" 10)

STEP=""
step() { STEP=$1; printf '==> %s\n' "$1"; }

# fail LOG FIX: names the step, the log and the likely fix, then exits.
fail() {
	local log=$1 fix=$2
	echo "FAILED: $STEP" >&2
	if [ -n "$log" ] && [ -f "$log" ]; then
		echo "--- last lines of $log:" >&2
		tail -n 15 "$log" >&2
		echo "---" >&2
	fi
	echo "log: ${log:-none}" >&2
	echo "likely fix: $fix" >&2
	exit 1
}

running() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# start NAME CMD...: runs CMD in the background unless NAME already runs.
start() {
	local name=$1; shift
	mkdir -p "$LOGS" "$RUN"
	if running "$name"; then
		echo "    $name already running (pid $(cat "$RUN/$name.pid"))"
		return 0
	fi
	setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	echo $! >"$RUN/$name.pid"
}

# stop NAME: SIGTERM, a grace period, then SIGKILL.
stop() {
	local name=$1 pid
	[ -f "$RUN/$name.pid" ] || return 0
	pid=$(cat "$RUN/$name.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN/$name.pid"
}

# wait_for SECONDS CMD...: polls CMD every 0.2 s.
wait_for() {
	local secs=$1; shift
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

admin_curl() {
	curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$PORT$1"
}

# remove_masquerade PREFIX: deletes the kubelets' masquerade rules (one per
# node, see pkg/kubelet/cni) for pod ranges starting with PREFIX ("10.244.").
remove_masquerade() {
	command -v iptables-save >/dev/null || return 0
	iptables-save -t nat | grep -F -- '"kube-lite masquerade"' | grep -F -- "-s $1" | sed -e 's/^-A /-D /' |
		while read -r rule; do eval iptables -t nat "$rule" 2>/dev/null || true; done
}

# apply_addons KUBECONFIG DNS_IP LOG: applies every manifest in deploy/addons
# (cluster DNS), the kube-dns Service moved from upstream's 10.96.0.10 to
# DNS_IP when the cluster's service range is another.
apply_addons() {
	local kubeconfig=$1 dns=$2 log=$3 f
	for f in "$ROOT"/deploy/addons/*.yaml; do
		sed -e "s/^\( *clusterIP:\) 10\.96\.0\.10\$/\1 $dns/" "$f" |
			"$BIN/kubectl-lite" --kubeconfig "$kubeconfig" apply -f - >>"$log" 2>&1 || return 1
	done
}

# wait_dns_ready KUBECONFIG LOG: waits for CoreDNS's rollout. Not wait
# --for=condition=Available: with the addon's maxUnavailable of 1, its one
# replica counts as Available before it is Ready.
wait_dns_ready() {
	"$BIN/kubectl-lite" --kubeconfig "$1" -n kube-system rollout status deployment/coredns --timeout=180s >>"$2" 2>&1
}
