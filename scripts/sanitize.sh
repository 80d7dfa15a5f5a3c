#!/usr/bin/env bash
# The test suite under AddressSanitizer + UBSan (docs/reliability.md,
# "Sanitizers"), in a build directory of its own (default build-asan/, through
# ccache like every build). Builds every target the tests run (the test
# binary execs the compactor, compactor-serve and compactor-agent of the same
# build directory, so they are instrumented too) and runs the sanitizer
# subset: every ctest entry but those whose name matches $exclude below, which
# cannot run under ASan or need not:
#   MemoryLimit       `ulimit -v` (ASan reserves terabytes of address space,
#                     so the limited process dies at start)
#   RealClient, real_clients, Browser, Database
#                     third-party programs (agent clients, browsers,
#                     databases) driving ours: their code, not ours
#   install_consumer  builds an outside project against the installed
#                     library with plain flags, which cannot link (static)
#                     or start (shared) an instrumented one; the release
#                     build runs it
# Name new tests of those kinds accordingly.
#   scripts/sanitize.sh [--ci] [BUILD_DIR]
# --ci is the bounded slice scripts/test.sh runs with CI=true and
# COMPACTOR_CI_SANITIZE=1: every test of the subset, the reliability tests
# with fewer iterations (below; a first guess, to be set from the measured
# test time).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ci=0
if [ "${1:-}" = "--ci" ]; then
  ci=1
  shift
fi
build=${1:-$root/build-asan}
exclude='MemoryLimit|RealClient|real_clients|Browser|Database|install_consumer'
# ccache hits for a clean clone at any path, as in scripts/setup.sh.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O1: compiles much faster than -O3 and is the usual level for ASan; -g1:
  # line numbers in the reports.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
    -DCOMPACTOR_SANITIZE=ON -DCOMPACTOR_BUILD_BENCHMARKS=OFF >/dev/null
fi
# The tokenizer tests want the vocabularies next to the binaries (a no-op when
# present); the golden tests' node packages are shared with build/.
"$root/scripts/install_vocab.sh" "$build/vocab" >/dev/null
if [ -d "$root/build/node_deps" ] && [ ! -e "$build/node_deps" ]; then
  ln -s "$root/build/node_deps" "$build/node_deps"
fi
start=$SECONDS
cmake --build "$build" -j"$(nproc)" >/dev/null
echo "sanitize: built in $((SECONDS - start)) s" >&2
start=$SECONDS
cd "$build"
# The reliability tests run a tenth of their release iterations here (ASan
# makes every process start and write several times slower; the release
# build runs the full count), CI fewer still.
if [ "$ci" = 1 ]; then
  export COMPACTOR_TORTURE_KILLS=${COMPACTOR_TORTURE_KILLS:-30}
  export COMPACTOR_RELIABILITY_ITERATIONS=${COMPACTOR_RELIABILITY_ITERATIONS:-30}
else
  export COMPACTOR_TORTURE_KILLS=${COMPACTOR_TORTURE_KILLS:-100}
  export COMPACTOR_RELIABILITY_ITERATIONS=${COMPACTOR_RELIABILITY_ITERATIONS:-100}
fi
# abort_on_error / halt_on_error: every report fails its test instead of
# scrolling by (UBSan otherwise recovers and the test may still pass).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
ctest --output-on-failure -j"$(nproc)" --timeout 900 -E "$exclude"
echo "sanitize: tests ran in $((SECONDS - start)) s (excluded: $exclude)" >&2
