#!/usr/bin/env bash
# Runs every benchmark harness under test/bench/ (each a `main` package) and
# prints its figures; docs/benchmarks.md says how to read them. Each harness
# is bounded by BENCH_TIMEOUT (default 15m); one that fails or times out does
# not stop the others, and the exit code is non-zero if any did.
#   hack/bench.sh [name...]     e.g. hack/bench.sh apiserver scheduler
# Expects `make build` to have filled bin/ (make bench does). When
# .upstream/bin holds upstream's kube-apiserver, etcd and kube-proxy
# (hack/upstream-apiserver.sh), the apiserver and proxy harnesses measure
# them too.
set -uo pipefail
cd "$(dirname "$0")/.."

timeout_for=${BENCH_TIMEOUT:-15m}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in test/bench/*/; do
    [ -f "$d/main.go" ] && names+=("$(basename "$d")")
  done
fi

# Arguments per harness: each is pointed at the binaries make build made.
args_for() {
  case "$1" in
    apiserver)
      if [ -x .upstream/bin/kube-apiserver ] && [ -x .upstream/bin/etcd ]; then
        echo "-apiserver bin/kube-lite-apiserver -upstream .upstream/bin"
      else
        echo "-apiserver bin/kube-lite-apiserver"
      fi ;;
    scheduler) echo "-apiserver bin/kube-lite-apiserver" ;;
    podstart)  echo "-bin bin" ;;
    proxy)
      local a="-apiserver bin/kube-lite-apiserver"
      if [ -x bin/kube-lite-proxy ]; then a="$a -proxy bin/kube-lite-proxy"; else a="$a -proxy="; fi
      if [ -x .upstream/bin/kube-proxy ]; then a="$a -upstream .upstream/bin"; fi
      echo "$a -rounds 2 -changes 50" ;;
    *)         echo "" ;;
  esac
}

declare -a results
for name in "${names[@]}"; do
  if [ ! -f "test/bench/$name/main.go" ]; then
    echo "hack/bench.sh: no harness test/bench/$name" >&2
    results+=("$name: missing")
    continue
  fi
  if { [ "$name" = podstart ] || [ "$name" = idle ] || [ "$name" = proxy ]; } && [ "$(id -u)" -ne 0 ]; then
    echo "==> $name: skipped (runs containerd or network namespaces; needs root)"
    results+=("$name: skipped (not root)")
    continue
  fi
  # shellcheck disable=SC2046 # the arguments are words on purpose
  echo "==> $name: go run ./test/bench/$name $(args_for "$name")"
  start=$(date +%s)
  timeout --kill-after=30s "$timeout_for" go run "./test/bench/$name" $(args_for "$name")
  rc=$?
  took=$(( $(date +%s) - start ))
  case $rc in
    0)   results+=("$name: ok (${took}s)") ;;
    124) results+=("$name: TIMED OUT after $timeout_for") ;;
    *)   results+=("$name: FAILED (exit $rc, ${took}s)") ;;
  esac
  echo
done

echo "==> load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
failed=0
for r in "${results[@]}"; do
  echo "$r"
  case "$r" in *": ok"*|*skipped*) ;; *) failed=1 ;; esac
done
exit $failed
