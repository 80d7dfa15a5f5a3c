#!/usr/bin/env bash
# The README's second command: builds (installing what is missing) and runs the
# whole test suite. The tests that compare with the reference pi implementation
# use tests/oracle, which installs pi 0.73.1 from the npm registry once
# (${COMPACTOR_ORACLE_HOME:-~/.cache/compactor-oracle}); without node or npm
# they skip, saying so in one line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# ccache hits for a clean clone at any path (CI clones afresh; the cache in
# the home directory outlives it): paths inside the clone are hashed relative
# to it.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
"$root/scripts/setup.sh" "$root/build"
status=0
"$root/tests/oracle/install.sh" >/dev/null || status=$?
if [ "$status" = 3 ]; then
  echo "test: the pi oracle tests will skip (node or npm missing, see above)" >&2
elif [ "$status" != 0 ]; then
  exit "$status"
fi
for hook in "$root"/scripts/test.d/*.sh; do
  [ -e "$hook" ] && bash "$hook"
done
if [ "${CI:-}" = "true" ]; then
  "$root/scripts/check_format.sh"
  # clang-tidy on the sources the commit under test changed (.clang-tidy).
  "$root/scripts/tidy.sh" "$root/build"
fi
(cd "$root/build" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
# The sanitizer subset (docs/reliability.md, "Sanitizers"; ASan + UBSan, in
# build-asan/ through ccache), its bounded CI slice (COMPACTOR_CI_SANITIZE=0 leaves it out).
if [ "${CI:-}" = "true" ] && [ "${COMPACTOR_CI_SANITIZE:-1}" = 1 ]; then
  "$root/scripts/sanitize.sh" --ci
fi
if [ "${CI:-}" = "true" ]; then
  # A bounded slice of every fuzz target (docs/reliability.md; clang, in
  # build-fuzz/). Longer runs: scripts/fuzz.sh DURATION.
  "$root/scripts/fuzz.sh" "${COMPACTOR_CI_FUZZ_SECONDS:-20}"
fi
