# Shared by hack/install-control-plane.sh and hack/join-node.sh: where things
# go under --root, rendering the unit templates, and starting units either
# through systemd or — with --no-systemd, where no systemd runs (CI,
# containers) — by running their ExecStart the way systemd would.
# shellcheck shell=bash

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TEMPLATES=$REPO/deploy/systemd

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
step() { printf '==> %s\n' "$1"; }

# set_layout ROOT: every path the scripts write, under ROOT ("" is the real
# host). Units live in ROOT/etc/systemd/system like any local unit.
set_layout() {
	R=${1%/}
	BIN_DIR=$R/usr/local/bin
	CONF_DIR=$R/etc/kube-lite
	PKI_DIR=$CONF_DIR/pki
	STATE_DIR=$R/var/lib/kube-lite
	UNIT_DIR=$R/etc/systemd/system
	RUN_DIR=$R/run/kube-lite
	LOG_DIR=$R/var/log/kube-lite
}

systemd_running() { [ -d /run/systemd/system ]; }

# check_mode: --root is for trying things out and for tests; systemd only
# reads units from the real /etc/systemd/system.
check_mode() {
	if [ "$NO_SYSTEMD" = 0 ]; then
		systemd_running || die "systemd is not running on this host; use --no-systemd to run the units' commands directly"
		[ -z "$R" ] || die "--root needs --no-systemd (systemd only reads units from /etc/systemd/system)"
	fi
}

# render TEMPLATE DEST: fills in @NAME@ from the shell variables of the same
# name and refuses to leave any placeholder behind.
render() {
	local src=$1 dst=$2 tmp
	mkdir -p "$(dirname "$dst")"
	tmp=$dst.tmp
	sed -e "s|@BIN_DIR@|${BIN_DIR}|g" \
		-e "s|@CONF_DIR@|${CONF_DIR}|g" \
		-e "s|@STATE_DIR@|${STATE_DIR}|g" \
		-e "s|@ETCD_BIN@|${ETCD_BIN:-}|g" \
		-e "s|@CONTAINERD_BIN@|${CONTAINERD_BIN:-}|g" \
		-e "s|@CONTAINERD_ROOT@|${CONTAINERD_ROOT:-}|g" \
		-e "s|@CONTAINERD_STATE@|${CONTAINERD_STATE:-}|g" \
		-e "s|@CONTAINERD_SOCK@|${CONTAINERD_SOCK:-}|g" \
		-e "s|@SANDBOX_IMAGE@|${SANDBOX_IMAGE:-}|g" \
		-e "s|@CNI_BIN_DIR@|${CNI_BIN_DIR:-}|g" \
		-e "s|@CNI_CONF_DIR@|${CNI_CONF_DIR:-}|g" \
		-e "s|@SYSTEMD_CGROUP@|${SYSTEMD_CGROUP:-}|g" \
		"$src" >"$tmp"
	if grep -n '@[A-Z_]*@' "$tmp" >&2; then
		rm -f "$tmp"
		die "unfilled placeholder in $src"
	fi
	mv "$tmp" "$dst"
}

# write_env FILE VAR ARGS...: an EnvironmentFile with one variable holding the
# command-line flags. Both systemd and the --no-systemd runner read it, so
# arguments must not contain spaces or quotes.
write_env() {
	local file=$1 var=$2 a
	shift 2
	for a in "$@"; do
		case $a in *[[:space:]\"\'\\\$]*) die "argument with spaces or quotes is not supported in $file: $a" ;; esac
	done
	mkdir -p "$(dirname "$file")"
	{
		echo "# Written by $(basename "$0"); edit and restart the unit to change flags."
		echo "$var=\"$*\""
	} >"$file.tmp"
	mv "$file.tmp" "$file"
}

# install_file SRC DST MODE
install_file() {
	mkdir -p "$(dirname "$2")"
	install -m "$3" "$1" "$2.tmp"
	mv "$2.tmp" "$2"
}

unit_pid() { [ -f "$RUN_DIR/$1.pid" ] && kill -0 "$(cat "$RUN_DIR/$1.pid")" 2>/dev/null && cat "$RUN_DIR/$1.pid"; }

# unit_exec UNIT: prints the unit's files in the order systemd reads them
# (the unit, then its drop-ins); an empty ExecStart= resets, as in systemd.
unit_files() {
	local unit=$1 f
	[ -f "$UNIT_DIR/$unit" ] && echo "$UNIT_DIR/$unit"
	for f in "$UNIT_DIR/$unit.d"/*.conf; do [ -f "$f" ] && echo "$f"; done
	return 0
}

# run_unit UNIT: the --no-systemd start. Reads EnvironmentFile= and
# ExecStart= from the installed unit and its drop-ins, then runs the command
# in its own session with the environment files loaded, output to
# LOG_DIR/UNIT.log, like systemd would (without restarts).
run_unit() {
	local unit=$1 name=${1%.service} line exec="" envfiles=() files f
	mapfile -t files < <(unit_files "$unit")
	[ ${#files[@]} -gt 0 ] || die "no unit $UNIT_DIR/$unit"
	if pid=$(unit_pid "$name"); then
		echo "    $unit already running (pid $pid)"
		return 0
	fi
	for f in "${files[@]}"; do
		while IFS= read -r line || [ -n "$line" ]; do
			case $line in
			EnvironmentFile=*) envfiles+=("${line#EnvironmentFile=}") ;;
			ExecStart=*) exec=${line#ExecStart=} ;;
			esac
		done <"$f"
	done
	[ -n "$exec" ] || die "$unit has no ExecStart"
	mkdir -p "$RUN_DIR" "$LOG_DIR"
	(
		set -a
		for f in "${envfiles[@]}"; do
			case $f in
			-*) f=${f#-}; [ -f "$f" ] || continue ;;
			esac
			# shellcheck disable=SC1090
			. "$f"
		done
		set +a
		# Unquoted $VAR splits on whitespace, as systemd's $VAR does.
		eval "exec setsid $exec"
	) >>"$LOG_DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$RUN_DIR/$name.pid"
	echo "    $unit: pid $!, log $LOG_DIR/$name.log"
}

# stop_unit UNIT: SIGTERM, a grace period, then SIGKILL (systemd's default
# stop for these units).
stop_unit() {
	local name=${1%.service} pid
	[ -f "$RUN_DIR/$name.pid" ] || return 0
	pid=$(cat "$RUN_DIR/$name.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN_DIR/$name.pid"
}

# start_units UNIT...: enable and start through systemd, or run directly.
start_units() {
	local u
	if [ "$NO_SYSTEMD" = 1 ]; then
		for u in "$@"; do run_unit "$u"; done
	else
		systemctl daemon-reload
		systemctl enable "$@"
		systemctl restart "$@"
	fi
}

# stop_units UNIT...: in reverse order of start.
stop_units() {
	local i
	for ((i = $#; i >= 1; i--)); do
		if [ "$NO_SYSTEMD" = 1 ]; then
			stop_unit "${!i}"
		else
			systemctl disable --now "${!i}" || true
		fi
	done
}

# wait_for SECONDS CMD...: polls CMD every 0.2 s.
wait_for() {
	local secs=$1 end
	shift
	end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

# fail_with_log UNIT MESSAGE: the last lines of what the unit logged.
fail_with_log() {
	local name=${1%.service}
	echo "FAILED: $2" >&2
	if [ "$NO_SYSTEMD" = 1 ]; then
		[ -f "$LOG_DIR/$name.log" ] && tail -n 20 "$LOG_DIR/$name.log" >&2
		echo "log: $LOG_DIR/$name.log" >&2
	else
		journalctl -u "$1" -n 20 --no-pager >&2 || true
		echo "log: journalctl -u $1" >&2
	fi
	exit 1
}

default_ip() { ip -4 -o addr show scope global 2>/dev/null | awk '{sub(/\/.*/, "", $4); print $4; exit}'; }
