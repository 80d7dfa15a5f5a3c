#!/usr/bin/env bash
# Start-up of the exact tokenizers, whole process (docs/benchmarks.md,
# "Tokenizer start-up"): `compactor tokens FILE --text --tokenizer o200k` (and
# cl100k, and the default estimate as the process's floor) on a 6-byte file,
# this build's binary side by side with another one (e.g. main's) in one
# hyperfine run.
#
#   scripts/bench_vocab_startup.sh BEFORE_COMPACTOR [BUILD_DIR] [RUNS]
#
# Each binary finds its vocabulary the way it normally does (BEFORE: its own
# build tree; this build: <BUILD_DIR>/vocab next to the binary), so
# COMPACTOR_VOCAB_DIR is unset for the run. Needs hyperfine
# (apt-get install hyperfine) and node. Prints a markdown table; the raw
# results go to BUILD_DIR/bench_vocab_startup.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?usage: bench_vocab_startup.sh BEFORE_COMPACTOR [BUILD_DIR] [RUNS]}
build=$(cd "${2:-$root/build}" && pwd)
runs=${3:-100}
after="$build/compactor"
command -v hyperfine >/dev/null || { echo "bench_vocab_startup: needs hyperfine" >&2; exit 1; }
unset COMPACTOR_VOCAB_DIR
for bin in "$before" "$after"; do
  [ -x "$bin" ] || { echo "bench_vocab_startup: $bin is not an executable" >&2; exit 1; }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf 'hello!' > "$scratch/six.txt"
# Both must answer (a missing vocabulary would time an error path).
for bin in "$before" "$after"; do
  for enc in o200k cl100k; do
    "$bin" tokens "$scratch/six.txt" --text --tokenizer "$enc" >/dev/null
  done
done
# /bin/true: what any process start costs on this machine right now.
cmds=(-n "/bin/true" "/bin/true")
for enc in o200k cl100k estimate; do
  cmds+=(-n "before $enc" "$before tokens $scratch/six.txt --text --tokenizer $enc")
  cmds+=(-n "after $enc" "$after tokens $scratch/six.txt --text --tokenizer $enc")
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
json="$build/bench_vocab_startup.json"
hyperfine -N --warmup 5 --runs "$runs" --export-json "$json" "${cmds[@]}" >&2
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
# Wall clock and CPU time (user + system): on a loaded machine the wall clock
# mostly measures the scheduler.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).results;
  const ms = (s) => (s * 1000).toFixed(1);
  console.log("| command | wall mean [ms] | wall median [ms] | wall min [ms] | CPU mean (user+sys) [ms] |");
  console.log("|---|---:|---:|---:|---:|");
  for (const x of r) {
    console.log(`| ${x.command} | ${ms(x.mean)} ± ${ms(x.stddev)} | ${ms(x.median)} | ${ms(x.min)} | ` +
                `${ms(x.user + x.system)} |`);
  }' "$json"
