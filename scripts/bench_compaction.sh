#!/usr/bin/env bash
# Compaction: plan and compact. Compactor vs pi 0.73.1's preparation on 50 MB sessions.
#
#   scripts/bench_compaction.sh [BUILD_DIR]
#
# 1. uses the two ~50 MB sessions of scripts/bench_session.sh (generated with the oracle's gen-large (tests/oracle),
#    22,000 entries, with compactions every 25 turns and with --compact-every 0; kept in $BENCH_DIR);
# 2. times whole processes, median wall and CPU (user + sys) time of $RUNS runs:
#    a. `compactor plan FILE --json` vs `tests/oracle/run.sh inspect FILE --keep 20000 --reserve 16384 --messages none`
#       (pi: node start-up + module load + SessionManager.open + buildSessionContext + getBranch +
#       prepareCompaction + estimates + findCutPoint, a small JSON report);
#    b. `compactor compact COPY --summarizer offline --json` on a fresh copy of FILE per run (the
#       copy is made before the clock starts), and the same with --dry-run on FILE;
#    c. `compactor compact COPY --strategy user-prompts --json` (fresh copy per run) and
#       `compactor compact FILE --strategy mask --dry-run --json`;
#    stdout goes to /dev/null; peak RSS from GNU time (/usr/bin/time -f %M);
# 3. prints a markdown table with the ratios (also written to $BENCH_DIR/compaction-results.md).
#
# Environment: RUNS (default 7), PI_RUNS (default 5), BENCH_DIR (default BUILD_DIR/bench-data),
# ENTRIES (default 22000),
# FILES (space-separated session files to use instead of generating them).
# Needs: node >= 20 (pi is installed by tests/oracle/run.sh on first use), GNU time (apt-get install -y time).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}

oracle=$repo/tests/oracle/run.sh
bench_dir=${BENCH_DIR:-$build/bench-data}
runs=${RUNS:-7}
pi_runs=${PI_RUNS:-5}
entries=${ENTRIES:-22000}
compactor=$build/compactor

die() { echo "bench_compaction.sh: $*" >&2; exit 1; }
[ -x "$compactor" ] || die "no $compactor (build first: cmake --build $build -j2 --target compactor_cli)"
[ -x "$oracle" ] || die "pi oracle not found at $oracle "
[ -x /usr/bin/time ] || die "GNU time missing (apt-get install -y time)"
command -v node >/dev/null || die "node not found"
mkdir -p "$bench_dir"

# ---- 1. data (same files as bench_session.sh)
files=()
if [ -n "${FILES:-}" ]; then
  read -r -a files <<<"$FILES"
else
  declare -A gen_args=([compactions]="" [no-compactions]="--compact-every 0")
  for kind in compactions no-compactions; do
    f=$bench_dir/session-50mb-$kind.jsonl
    if [ ! -s "$f" ]; then
      echo "generating $f ..." >&2
      # shellcheck disable=SC2086
      "$oracle" gen-large "$f" --entries "$entries" ${gen_args[$kind]} >&2
    fi
    files+=("$f")
  done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- 2. whole-process time and peak RSS
# measure N SRC CMD...: prints "median_wall_ms median_cpu_ms max_rss_kb"; stdout of CMD is discarded.
# When SRC is not "-", every argument "@COPY@" is replaced by a fresh copy of SRC made (and synced to
# the page cache) before the clock starts, so commands that write to the session start from the same file.
# CPU = user + sys from GNU time (10 ms resolution); it is the steadier figure on a busy machine.
measure() {
  local n=$1 src=$2; shift 2
  local walls=() cpus=() rss=0 t0 t1 kb u s a
  local stat_file=$work/time.out copy=$work/copy.jsonl
  for ((i = 0; i < n; i++)); do
    local cmd=()
    if [ "$src" != - ]; then
      rm -f "$copy"
      cp "$src" "$copy"
      for a in "$@"; do [ "$a" = @COPY@ ] && cmd+=("$copy") || cmd+=("$a"); done
    else
      cmd=("$@")
    fi
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S %M' -o "$stat_file" "${cmd[@]}" >/dev/null
    t1=$(date +%s%N)
    walls+=($(((t1 - t0) / 1000)))
    read -r u s kb < <(tail -n 1 "$stat_file")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%d", (u + s) * 1e6}')")
    ((kb > rss)) && rss=$kb
  done
  echo "$(median_ms "${walls[@]}") $(median_ms "${cpus[@]}") $rss"
}
# median_ms MICROSECONDS...
median_ms() {
  printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1000}'
}

# Warm the page cache and pi's module cache once, so the first timed run is not an outlier; check
# that every command succeeds on these files before timing it.
for f in "${files[@]}"; do
  "$compactor" plan "$f" --json >/dev/null
  "$compactor" compact "$f" --summarizer offline --dry-run --json >/dev/null
  "$oracle" inspect "$f" --keep 20000 --reserve 16384 --messages none >/dev/null
done
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

table=$(mktemp)
{
  echo "| session | size | command | wall | CPU | peak RSS | pi prep wall | pi prep CPU | pi peak RSS | speedup (wall) | speedup (CPU) |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$table"
# row NAME BYTES LABEL WALL CPU KB PWALL PCPU PKB
row() {
  awk -v name="$1" -v bytes="$2" -v label="$3" -v cms="$4" -v ccpu="$5" -v ckb="$6" \
      -v pms="$7" -v pcpu="$8" -v pkb="$9" 'BEGIN {
    printf "| %s | %.1f MB | %s | %.1f ms | %.0f ms | %.1f MB | %.1f ms | %.0f ms | %.1f MB | %.1fx | %s |\n",
      name, bytes / 1e6, label, cms, ccpu, ckb * 1024 / 1e6, pms, pcpu, pkb * 1024 / 1e6,
      pms / cms, (ccpu > 0 ? sprintf("%.1fx", pcpu / ccpu) : "n/a (CPU < 10 ms)")
  }'
}
for f in "${files[@]}"; do
  name=$(basename "$f" .jsonl)
  bytes=$(stat -L -c %s "$f")
  echo "timing $name ..." >&2
  read -r p_ms p_cpu p_kb < <(measure "$pi_runs" - "$oracle" inspect "$f" --keep 20000 --reserve 16384 --messages none)
  while IFS='|' read -r label src args; do
    # A command that fails (e.g. a strategy missing from this build) gets a row saying so.
    try=${args//@COPY@/$work/try.jsonl}
    [ "$src" = - ] || cp "$src" "$work/try.jsonl"
    # shellcheck disable=SC2086
    if ! "$compactor" $try >/dev/null 2>"$work/err"; then
      echo "| $name | - | $label | failed: $(head -n 1 "$work/err" | tr '|' '/') | | | | | | | |" >>"$table"
      continue
    fi
    # shellcheck disable=SC2086
    read -r c_ms c_cpu c_kb < <(measure "$runs" "$src" "$compactor" $args)
    row "$name" "$bytes" "$label" "$c_ms" "$c_cpu" "$c_kb" "$p_ms" "$p_cpu" "$p_kb" >>"$table"
  done <<EOF
\`plan --json\`|-|plan $f --json
\`compact --summarizer offline\` (writes)|$f|compact @COPY@ --summarizer offline --json
\`compact --summarizer offline --dry-run\`|-|compact $f --summarizer offline --dry-run --json
\`compact --strategy user-prompts\` (writes)|$f|compact @COPY@ --strategy user-prompts --json
\`compact --strategy mask --dry-run\`|-|compact $f --strategy mask --dry-run --json
EOF
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

echo
echo "## Whole process (median of $runs compactor runs, $pi_runs pi runs; $(nproc) CPUs; load average $load_start at the start, $load_end at the end; $(date -u +%Y-%m-%d))"
echo
echo "pi prep = \`tests/oracle/run.sh inspect FILE --keep 20000 --reserve 16384 --messages none\` (node start-up, module load, SessionManager.open,"
echo "buildSessionContext, prepareCompaction, estimates); the speedup columns compare each compactor command with it."
echo
cat "$table"
echo
echo "Targets: plan >= 20x faster than pi's preparation; offline compaction of a 50 MB session < 0.5 s (whole process)."
cp "$table" "$bench_dir/compaction-results.md"
rm -f "$table"
