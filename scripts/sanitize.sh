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
# --ci is the bounded slice scripts/test.sh runs with CI=true (unless
# COMPACTOR_CI_SANITIZE=0; docs/reliability.md): every test of the subset, the reliability tests
# with 30 instead of 100 iterations (the whole subset took 741 s at 100 on a
# loaded machine; docs/reliability.md has the figures).
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
# handle_sigbus=0: SIGBUS keeps the default action it has in a plain build,
# which the truncated-mapping handler (src/env/posix_env.cc) chains to and its
# tests expect; ASan's own handler would turn it into an abort.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:handle_sigbus=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# The GoogleTest cases run in one process per core (gtest sharding), not one
# process per case as under ctest: an instrumented start costs ~0.4 s of CPU
# (ASan registers every global), 900 of them a quarter of the run.
shards=$(nproc)
filter="-$(echo "$exclude" | sed 's/[^|]*/*&*/g; s/|/:/g')"
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i GTEST_BRIEF=1 \
    timeout 3600 ./compactor_tests --gtest_filter="$filter" >"shard-$i.log" 2>&1 &
  pids+=($!)
done
failed=0
passed=0
for ((i = 0; i < shards; i++)); do
  if wait "${pids[$i]}"; then
    passed=$((passed + 1))
  else
    failed=1
    echo "sanitize: shard $i of $shards failed; its log (build-asan/shard-$i.log) ends:" >&2
    tail -n 60 "shard-$i.log" >&2
  fi
done
# The other ctest entries (scripts and node drivers of our binaries).
ctest --output-on-failure -j"$(nproc)" --timeout 900 -E "\\.|$exclude" || failed=1
echo "sanitize: tests ran in $((SECONDS - start)) s ($passed of $shards shards passed; excluded: $exclude)" >&2
exit "$failed"
