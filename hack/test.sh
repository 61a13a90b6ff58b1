#!/usr/bin/env bash
# Runs every test tier and prints one summary line per tier and a total.
# A tier that fails does not stop the others; the exit code is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

declare -a names results
run_tier() {
  local name=$1; shift
  echo "==> $name: $*"
  if "$@"; then results+=("ok"); else results+=("FAILED"); fi
  names+=("$name")
}

run_tier lint make --no-print-directory lint
run_tier unit make --no-print-directory test-unit
run_tier integration make --no-print-directory test-integration
run_tier e2e make --no-print-directory test-e2e
run_tier compose make --no-print-directory test-compose

passed=0; failed=0
echo
for i in "${!names[@]}"; do
  printf '%-12s %s\n' "${names[$i]}" "${results[$i]}"
  if [ "${results[$i]}" = ok ]; then passed=$((passed+1)); else failed=$((failed+1)); fi
done
echo "tiers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
