#!/usr/bin/env bash
# The test suite under AddressSanitizer + UBSan (docs/reliability.md,
# "Sanitizers"), in a build directory of its own (default build-asan/, through
# ccache like every build). Runs the sanitizer subset: every test but those
# whose name matches $exclude below, which cannot run under ASan (memory
# limits: ASan reserves terabytes of address space, so `ulimit -v` fails at
# start) or need not (real clients, browsers, databases: third-party code).
# Name such tests accordingly: a suite or test name containing MemoryLimit,
# RealClient, Browser or Database.
#   scripts/sanitize.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-asan}
exclude='MemoryLimit|RealClient|Browser|Database'

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
cmake --build "$build" -j"$(nproc)" --target compactor_tests >/dev/null
echo "sanitize: built in $((SECONDS - start)) s" >&2
start=$SECONDS
cd "$build"
# halt_on_error: a UBSan report fails the test instead of scrolling by. The
# reliability tests run a tenth of their CI iterations (ASan makes every
# process start and write several times slower; the release build runs the
# full count).
export COMPACTOR_TORTURE_KILLS=${COMPACTOR_TORTURE_KILLS:-100}
export COMPACTOR_RELIABILITY_ITERATIONS=${COMPACTOR_RELIABILITY_ITERATIONS:-100}
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure -j"$(nproc)" --timeout 900 -E "$exclude"
echo "sanitize: tests ran in $((SECONDS - start)) s (excluded: $exclude)" >&2
