#!/usr/bin/env bash
# Long runs of the reliability tests (docs/reliability.md): the SIGKILL torture,
# the concurrent unlocked appender, and the hostile-input cases (memory limits,
# truncation by another process while mapped), repeated for DURATION seconds.
# Usage: scripts/torture.sh DURATION [BUILD_DIR]   (default build dir: build)
set -euo pipefail
duration=${1:?usage: scripts/torture.sh DURATION [BUILD_DIR]}
build=${2:-build}
tests="$build/compactor_tests"
[[ -x "$tests" ]] || { echo "torture.sh: $tests not built" >&2; exit 2; }
end=$((SECONDS + duration))
rounds=0
while ((SECONDS < end)); do
  COMPACTOR_TORTURE_KILLS=${COMPACTOR_TORTURE_KILLS:-2000} \
  COMPACTOR_RELIABILITY_ITERATIONS=${COMPACTOR_RELIABILITY_ITERATIONS:-2000} \
    "$tests" --gtest_filter='Reliability.*:HostileInput.*' --gtest_brief=1 | grep -E '^\[(torture|reliability)\]|FAILED'
  rounds=$((rounds + 1))
done
echo "torture.sh: $rounds rounds in $SECONDS s, all passed"
