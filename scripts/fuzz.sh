#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (docs/reliability.md, "Fuzzing") for
# DURATION seconds each, one after the other, starting from the seed corpora in
# fuzz/corpus/<target>/. Builds them first in BUILD_DIR with clang
# (-fsanitize=fuzzer,address,undefined), installing clang and its runtime
# (libclang-rt-14-dev) with apt-get when missing.
#   scripts/fuzz.sh DURATION [TARGET...]     (default: every target)
# Environment: COMPACTOR_FUZZ_BUILD (default build-fuzz), COMPACTOR_FUZZ_JOBS
# (build parallelism, default nproc). New inputs found go to BUILD_DIR/corpus/,
# never into the repository; a crash leaves BUILD_DIR/crashes/<target>-crash-*
# and makes the script exit 1 (turn it into a regression test, see the docs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
duration=${1:?usage: scripts/fuzz.sh DURATION [TARGET...]}
shift
build=${COMPACTOR_FUZZ_BUILD:-$root/build-fuzz}
all=(session_reader message_parser context_builder settings_parser sse_parser
  provider_response provider_stream http1_response http1_request)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

packages=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "fuzz: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCOMPACTOR_FUZZ=ON -DCOMPACTOR_BUILD_TESTS=OFF -DCOMPACTOR_BUILD_BENCHMARKS=OFF >/dev/null
fi
cmake --build "$build" -j"${COMPACTOR_FUZZ_JOBS:-$(nproc)}" --target compactor_fuzzers >/dev/null

mkdir -p "$build/crashes"
failed=0
total=0
printf '%-18s %12s %10s %8s %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  log="$build/fuzz-$t.log"
  status=0
  # The first directory receives what the run finds; the seeds are read only.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/fuzz/${t}_fuzzer" "$corpus" "$root/fuzz/corpus/$t" -max_total_time="$duration" \
    -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t-" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  units=$(find "$corpus" -type f | wc -l)
  result=ok
  if [ "$status" != 0 ]; then
    result="FAILED (exit $status, see $log)"
    failed=1
    grep -E 'ERROR|runtime error|FUZZ_CHECK|Test unit written' "$log" | head -5 >&2 || true
  fi
  total=$((total + ${execs:-0}))
  printf '%-18s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$units" "$result"
done
echo "fuzz: ${#targets[@]} targets x ${duration} s, $total executions" \
  "$([ "$failed" = 0 ] && echo "no failure" || echo "FAILED (crash, leak, timeout or setup: see the logs)")"
exit "$failed"
