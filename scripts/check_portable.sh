#!/usr/bin/env bash
# Checks that a portable build (COMPACTOR_NATIVE=OFF) runs on baseline x86-64
# (docs/kernels.md):
#
#   scripts/check_portable.sh [BUILD_DIR]
#
# 1. no AVX register (ymm/zmm) in the code of the library's, the CLI's or the
#    tests' own objects: only the kernel objects (compactor_kernel_*.o) may
#    have any;
# 2. each kernel object exports nothing but its compactor_kernel_* entry
#    points (and shared unique data objects) and has no COMDAT groups left (its copies cannot stand in for the
#    baseline's) and no start-up code (.init_array), which would run on any CPU;
# 3. when qemu-x86_64 is installed (Debian: qemu-user), runs the CLI and the
#    kernel, session and UTF-8 tests under emulated CPUs: qemu64 (baseline
#    x86-64, no SSE4 or AVX: the fallback kernel), Haswell (AVX2: the haswell
#    kernel) and Nehalem (SSE4.2, no AVX).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
fail=0
die() { echo "check_portable.sh: $*" >&2; exit 1; }
[ -x "$build/compactor" ] || die "no $build/compactor (build compactor_cli first)"
grep -q 'COMPACTOR_NATIVE:BOOL=OFF' "$build/CMakeCache.txt" || die "$build is not a portable build"

# ---- 1. AVX registers outside the kernels
objects=$(find "$build/CMakeFiles/compactor.dir" "$build/CMakeFiles/compactor_cli.dir" \
  "$build/CMakeFiles/compactor_tests.dir" -name '*.o' 2>/dev/null || true)
[ -n "$objects" ] || die "no object files under $build/CMakeFiles"
count=0
for o in $objects; do
  count=$((count + 1))
  if objdump -d --no-show-raw-insn "$o" | grep -qE '%[yz]mm[0-9]'; then
    echo "FAIL: AVX registers in $o (outside the kernels)"
    fail=1
  fi
done
echo "ok: no ymm/zmm in $count library, CLI and test objects"

# ---- 2. the kernel objects
kernels=$(find "$build" -maxdepth 1 -name 'compactor_kernel_*.o')
[ -n "$kernels" ] || die "no kernel objects in $build"
for k in $kernels; do
  # Weak data objects (GNU unique ones: function-local statics of inline
  # functions, such as libstdc++'s table of digit pairs, which objcopy cannot
  # make local) stay one object shared with the rest of the program, as the
  # language asks; they hold no code. Anything else must be an entry point.
  exported=$(nm --defined-only --extern-only "$k" | awk '$2 != "V" {print $3}' |
    grep -v '^compactor_kernel_' || true)
  if [ -n "$exported" ]; then
    echo "FAIL: $k exports more than its entry points:"; echo "$exported" | head
    fail=1
  fi
  if readelf -g "$k" | grep -q 'COMDAT group'; then echo "FAIL: COMDAT groups left in $k"; fail=1; fi
  if readelf -S "$k" | grep -qE '\.init_array|\.ctors'; then
    echo "FAIL: start-up code in $k"
    fail=1
  fi
  echo "ok: $(basename "$k"): exports $(nm --defined-only --extern-only "$k" | grep -c " T compactor_kernel_") entry points," \
    "$(objdump -d --no-show-raw-insn "$k" | grep -cE '%[yz]mm[0-9]') instructions on ymm/zmm"
done

# ---- 3. under emulated CPUs
if command -v qemu-x86_64 >/dev/null; then
  fixtures=$repo/tests/fixtures/pi
  for cpu in qemu64 Nehalem Haswell; do
    run() { qemu-x86_64 -cpu "$cpu" "$@" 2> >(grep -v "TCG doesn.t support requested feature" >&2); }
    version=$(run "$build/compactor" --version | tail -n 1)
    echo "qemu -cpu $cpu: $version"
    for cmd in "context $fixtures/long.v3.jsonl --json" "stats $fixtures/compacted.v3.jsonl --json" \
      "plan $fixtures/long.v3.jsonl --json" "tokens $fixtures/long.v3.jsonl --json"; do
      # shellcheck disable=SC2086
      want=$("$build/compactor" $cmd | md5sum)
      # shellcheck disable=SC2086
      got=$(run "$build/compactor" $cmd | md5sum) || { echo "FAIL: qemu -cpu $cpu compactor $cmd"; fail=1; }
      if [ "$want" != "$got" ]; then
        echo "FAIL: qemu -cpu $cpu compactor $cmd: output differs from the host's"
        fail=1
      fi
    done
    echo "ok: qemu -cpu $cpu: context, stats, plan, tokens as on the host"
    if [ -x "$build/compactor_tests" ]; then
      if run "$build/compactor_tests" --gtest_brief=1 \
        --gtest_filter='KernelTest.*:Utf8Js.*:Utf8Scan*:Session*:EstimateFast.*' >/tmp/check_portable.$$ 2>&1; then
        echo "ok: qemu -cpu $cpu: $(grep -E '^\[  PASSED' /tmp/check_portable.$$)"
      else
        echo "FAIL: qemu -cpu $cpu: tests"; tail -20 /tmp/check_portable.$$
        fail=1
      fi
      rm -f /tmp/check_portable.$$
    fi
  done
else
  echo "skip: qemu-x86_64 not installed (apt-get install -y qemu-user): nothing run under emulation"
fi
exit $fail
