#!/usr/bin/env bash
# `tokens -` (stdin: a pipe, and a redirected file) against `tokens FILE --text`,
# for one or two builds side by side in one run (docs/benchmarks.md, "Reading
# stdin"). Usage: scripts/bench_stdin.sh TEXT_FILE ROUNDS BIN [BIN2]
# Prints, per binary and way of reading, the median wall time, the median CPU
# time (user + sys of compactor and, for the pipe, cat) and MB/s of wall time.
set -euo pipefail
text=${1:?usage: scripts/bench_stdin.sh TEXT_FILE ROUNDS BIN [BIN2]}
rounds=${2:?rounds}
shift 2
bytes=$(stat -c %s "$text")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < rounds; r++)); do
  i=0
  for bin in "$@"; do
    i=$((i + 1))
    /usr/bin/time -f "%e %U %S" -a -o "$tmp/$i.file" "$bin" tokens "$text" --text >/dev/null
    /usr/bin/time -f "%e %U %S" -a -o "$tmp/$i.pipe" sh -c "cat '$text' | '$bin' tokens - >/dev/null"
    /usr/bin/time -f "%e %U %S" -a -o "$tmp/$i.redirect" sh -c "'$bin' tokens - <'$text' >/dev/null"
  done
done
i=0
for bin in "$@"; do
  i=$((i + 1))
  for way in file pipe redirect; do
    sort -n "$tmp/$i.$way" | awk -v bin="$bin" -v way="$way" -v bytes="$bytes" '
      { wall[NR] = $1; cpu[NR] = $2 + $3 }
      END {
        n = asort(cpu); m = int((NR + 1) / 2)
        printf "%-40s %-8s wall %6.2f s  cpu %6.2f s  %7.1f MB/s\n", bin, way, wall[m], cpu[m],
               bytes / 1e6 / wall[m]
      }'
  done
done
