#!/usr/bin/env bash
# Session loading and context: Compactor vs pi 0.73.1 on 50 MB sessions.
#
#   scripts/bench_session.sh [BUILD_DIR]
#
# 1. generates two ~50 MB sessions with the oracle's gen-large (tests/oracle) (22,000 entries; with
#    compactions every 25 turns, and without), kept in $BENCH_DIR between runs;
# 2. times whole processes: `compactor context FILE --json >/dev/null` vs
#    `tests/oracle/run.sh inspect FILE --messages full >/dev/null` (median of $RUNS runs);
# 3. peak RSS of both with GNU time (/usr/bin/time -f %M);
# 4. runs BUILD_DIR/session_bench (in-process load + context vs simdjson) when built;
# 5. prints a markdown table (also written to $BENCH_DIR/results.md).
#
# Environment: RUNS (default 5), PI_RUNS (default 3), BENCH_DIR (default BUILD_DIR/bench-data),
# ENTRIES (default 22000).
# Needs: node >= 20 (pi is installed by tests/oracle/run.sh on first use), GNU time (apt-get install -y time).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}

oracle=$repo/tests/oracle/run.sh
bench_dir=${BENCH_DIR:-$build/bench-data}
runs=${RUNS:-5}
pi_runs=${PI_RUNS:-3}
entries=${ENTRIES:-22000}
compactor=$build/compactor

die() { echo "bench_session.sh: $*" >&2; exit 1; }
[ -x "$compactor" ] || die "no $compactor (build first: cmake --build $build -j2)"
[ -x "$oracle" ] || die "pi oracle not found at $oracle "
[ -x /usr/bin/time ] || die "GNU time missing (apt-get install -y time)"
command -v node >/dev/null || die "node not found"
mkdir -p "$bench_dir"

# ---- 1. data
declare -A gen_args=([compactions]="" [no-compactions]="--compact-every 0")
files=()
for kind in compactions no-compactions; do
  f=$bench_dir/session-50mb-$kind.jsonl
  if [ ! -s "$f" ]; then
    echo "generating $f ..." >&2
    # shellcheck disable=SC2086
    "$oracle" gen-large "$f" --entries "$entries" ${gen_args[$kind]} >&2
  fi
  files+=("$f")
done

# ---- 2./3. whole-process time and peak RSS
# measure N CMD...: prints "median_wall_ms median_cpu_ms max_rss_kb"; stdout of CMD is discarded.
# CPU = user + sys from GNU time (10 ms resolution); it is the steadier figure on a busy machine.
measure() {
  local n=$1; shift
  local walls=() cpus=() rss=0 t0 t1 kb u s
  local stat_file
  stat_file=$(mktemp)
  for ((i = 0; i < n; i++)); do
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S %M' -o "$stat_file" "$@" >/dev/null
    t1=$(date +%s%N)
    walls+=($(((t1 - t0) / 1000)))
    read -r u s kb < <(tail -n 1 "$stat_file")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%d", (u + s) * 1e6}')")
    ((kb > rss)) && rss=$kb
  done
  rm -f "$stat_file"
  echo "$(median_ms "${walls[@]}") $(median_ms "${cpus[@]}") $rss"
}
# median_ms MICROSECONDS...
median_ms() {
  printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1000}'
}

# Warm the page cache and pi's module cache once, so the first timed run is not an outlier.
for f in "${files[@]}"; do
  "$compactor" context "$f" --json >/dev/null
  "$oracle" inspect "$f" --messages none >/dev/null
done

table=$(mktemp)
{
  echo "| session | size | compactor wall | pi wall | speedup (wall) | compactor CPU | pi CPU | speedup (CPU) | compactor peak RSS | RSS / file size | pi peak RSS |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$table"
for f in "${files[@]}"; do
  bytes=$(stat -L -c %s "$f")
  read -r c_ms c_cpu c_kb < <(measure "$runs" "$compactor" context "$f" --json)
  read -r p_ms p_cpu p_kb < <(measure "$pi_runs" "$oracle" inspect "$f" --messages full)
  awk -v name="$(basename "$f")" -v bytes="$bytes" -v cms="$c_ms" -v ccpu="$c_cpu" -v ckb="$c_kb" \
      -v pms="$p_ms" -v pcpu="$p_cpu" -v pkb="$p_kb" 'BEGIN {
    printf "| %s | %.1f MB | %.1f ms | %.1f ms | %.1fx | %.0f ms | %.0f ms | %.1fx | %.1f MB | %.2fx | %.1f MB |\n",
      name, bytes / 1e6, cms, pms, pms / cms, ccpu, pcpu, (ccpu > 0 ? pcpu / ccpu : 0),
      ckb * 1024 / 1e6, ckb * 1024 / bytes, pkb * 1024 / 1e6
  }' >>"$table"
done

echo
echo "## Whole process (median of $runs compactor runs, $pi_runs pi runs; $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg) at the end; $(date -u +%Y-%m-%d))"
echo
cat "$table"
echo
echo "Targets (issue 2): speedup >= 20x; compactor peak RSS <= 1.5x the file size."

# ---- 4. in-process
if [ -x "$build/session_bench" ]; then
  for f in "${files[@]}"; do
    echo
    echo "## In process: $(basename "$f")"
    echo
    echo '```'
    "$build/session_bench" --session="$f" --benchmark_min_time=1 2>&1 | sed -n '/^file:/,$p'
    echo '```'
  done
  echo
  echo "Target (issue 2): load + context <= 2x the simdjson load + parse_many time."
else
  echo
  echo "(session_bench not built: configure with -DCOMPACTOR_BUILD_BENCHMARKS=ON for the in-process figures)"
fi
cp "$table" "$bench_dir/results.md"
rm -f "$table"
