#!/usr/bin/env bash
# `compactor serve` figures (docs/benchmarks.md, "compactor serve"), one command:
#
#   scripts/bench_serve.sh [BUILD_DIR] [--quick] [serve_bench flags...]
#
# BUILD_DIR (default build) is a Release build configured with
# -DCOMPACTOR_BUILD_BENCHMARKS=ON; the targets compactor_cli, serve_bench and
# serve_plan_bench are built first. Runs, in this order: the in-process
# decision and rewrite of a ~1 MB request whose summary is cached
# (serve_plan_bench, 5 repetitions), then serve_bench: added latency against
# nginx (5 rounds by default, interleaved, 1 and 64 streams, SSE and JSON)
# and memory per idle conversation. --quick: one short round of each (a smoke
# run; the figures mean nothing). Prints the load average before and after.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="build"
if [[ $# -gt 0 && $1 != --* ]]; then
  build=$1
  shift
fi
quick=0
for a in "$@"; do [[ $a == --quick ]] && quick=1; done
cd "$repo"
cmake --build "$build" -j2 --target compactor_cli serve_bench serve_plan_bench >/dev/null
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)"
if [[ $quick == 1 ]]; then
  "$build/serve_plan_bench" --benchmark_min_time=0.05
else
  "$build/serve_plan_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
fi
"$build/serve_bench" --compactor "$build/compactor" "$@"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
