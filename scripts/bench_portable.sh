#!/usr/bin/env bash
# The portable build against the native one, side by side in one run
# (docs/benchmarks.md, "Portable build"):
#
#   scripts/bench_portable.sh NATIVE_BUILD PORTABLE_BUILD [ROUNDS]
#
# NATIVE_BUILD: configured with -DCOMPACTOR_NATIVE=ON; PORTABLE_BUILD: the
# default. Both with -DCOMPACTOR_BUILD_BENCHMARKS=ON and compactor_cli,
# session_bench and tokenizer_bench built (and scripts/install_vocab.sh run).
# Either may be a build of an older commit (before/after).
#
# 1. whole process: `compactor context FILE --json`, `stats FILE --json`,
#    `plan FILE --json`, `tokens FILE --json` and `tokens FILE --tokenizer
#    o200k --json` on the two 50 MB sessions (FILES), stdout to /dev/null; the
#    two binaries alternate, ROUNDS rounds of hyperfine --runs 3 each; the
#    table gives the median over all runs of wall time, and the median over
#    the rounds of the mean CPU time (user + sys) of a round's runs;
# 2. in process: session_bench (Session::Open, with the context, on one
#    thread; and simdjson's DOM parse_many as a control, which the shared
#    library dispatches at run time in both builds) and tokenizer_bench
#    (count-only throughput and the pre-tokenizer alone), alternating, ROUNDS
#    runs each, medians.
#
# Environment: PARTS (default "whole inprocess": which of 1. and 2. to run), NAMES (default "native portable": the column names, e.g.
# "before after" to compare two native builds), FILES (default /work/bench/big.jsonl /work/bench/bigc.jsonl),
# CORPUS (tokenizer corpus dir, default PORTABLE_BUILD/bench-corpus, written
# when missing), COMPACTOR_FORCE_KERNEL (passed through: pin the portable
# build's kernel, e.g. fallback). Needs hyperfine and node.
set -euo pipefail

[ $# -ge 2 ] || { sed -n 2,25p "$0"; exit 2; }
native=$1
portable=$2
read -r name_a name_b <<<"${NAMES:-native portable}"
rounds=${3:-5}
files=${FILES:-/work/bench/big.jsonl /work/bench/bigc.jsonl}
corpus=${CORPUS:-$portable/bench-corpus}
command -v hyperfine >/dev/null || { echo "bench_portable.sh: needs hyperfine" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "load average: $(cut -d" " -f1-3 /proc/loadavg); $name_a: $("$native/compactor" --version | tail -n 1); $name_b: $("$portable/compactor" --version | tail -n 1)"

parts=${PARTS:-whole inprocess}

# ---- 1. whole process
if [[ $parts == *whole* ]]; then
commands=()
for f in $files; do
  for c in "context $f --json" "stats $f --json" "plan $f --json" "tokens $f --json" \
    "tokens $f --tokenizer o200k --json"; do
    commands+=("$c")
  done
done
for ((r = 0; r < rounds; r++)); do
  for i in "${!commands[@]}"; do
    hyperfine -N --warmup 1 --runs 3 --style none --export-json "$out/w.$i.$r.json" \
      -n a "$native/compactor ${commands[$i]}" -n b "$portable/compactor ${commands[$i]}" >/dev/null 2>&1
  done
done
node - "$out" "$name_a" "$name_b" "${#commands[@]}" "$rounds" "${commands[@]}" <<'JS'
const fs = require('fs');
const [dir, A, B, n, rounds, ...cmds] = process.argv.slice(2);
const med = (a) => { a = [...a].sort((x, y) => x - y); const m = a.length >> 1; return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
console.log(`\n| command | ${A} wall | ${B} wall | ${B} / ${A} | ${A} CPU | ${B} CPU | ${B} / ${A} |`);
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (let i = 0; i < +n; i++) {
  const t = { a: { wall: [], cpu: [] }, b: { wall: [], cpu: [] } };
  for (let r = 0; r < +rounds; r++) {
    for (const res of JSON.parse(fs.readFileSync(`${dir}/w.${i}.${r}.json`)).results) {
      // hyperfine gives wall time per run, CPU time (user + sys) per command as a mean.
      res.times.forEach((w) => t[res.command].wall.push(w * 1e3));
      t[res.command].cpu.push((res.user + res.system) * 1e3);
    }
  }
  const f = (x) => x.toFixed(1) + ' ms';
  const nw = med(t.a.wall), pw = med(t.b.wall), nc = med(t.a.cpu), pc = med(t.b.cpu);
  console.log(`| \`${cmds[i].replace(/\/\S*\//, '')}\` | ${f(nw)} | ${f(pw)} | ${(pw / nw).toFixed(3)} | ${f(nc)} | ${f(pc)} | ${(pc / nc).toFixed(3)} |`);
}
JS
fi

# ---- 2. in process
[[ $parts == *inprocess* ]] || exit 0
[ -d "$corpus" ] || { mkdir -p "$corpus" && "$portable/tokenizer_bench" --write-corpus "$corpus" >/dev/null; }
for ((r = 0; r < rounds; r++)); do
  for b in native portable; do
    dir=$native
    [ $b = portable ] && dir=$portable
    for f in $files; do
      "$dir/session_bench" --session="$f" \
        --benchmark_filter='BM_SimdjsonParseManyInMemory|BM_SessionOpen/|BM_SessionOpenAndContext/|OneThread' \
        --benchmark_out="$out/s.$b.$(basename "$f").$r.json" --benchmark_out_format=json >/dev/null 2>&1
    done
    "$dir/tokenizer_bench" --corpus "$corpus" --repeat 3 >"$out/t.$b.$r.jsonl" 2>/dev/null || true
  done
done
node - "$out" "$name_a" "$name_b" "$rounds" $files <<'JS'
const fs = require('fs');
const [dir, A, B, rounds, ...files] = process.argv.slice(2);
const med = (a) => { a = [...a].sort((x, y) => x - y); const m = a.length >> 1; return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
console.log(`\n| in process (session_bench, real time) | session | ${A} | ${B} | ${B} / ${A} |`);
console.log('|---|---|---:|---:|---:|');
for (const f of files) {
  const base = f.split('/').pop();
  const v = {};
  for (const b of ['native', 'portable']) for (let r = 0; r < +rounds; r++) {
    for (const x of JSON.parse(fs.readFileSync(`${dir}/s.${b}.${base}.${r}.json`)).benchmarks) {
      ((v[x.name] ??= { native: [], portable: [] })[b]).push(x.real_time);
    }
  }
  for (const [name, t] of Object.entries(v)) {
    const a = med(t.native), p = med(t.portable);
    console.log(`| ${name} | ${base} | ${a.toFixed(2)} ms | ${p.toFixed(2)} ms | ${(p / a).toFixed(3)} |`);
  }
}
const rows = {};
for (const b of ['native', 'portable']) for (let r = 0; r < +rounds; r++) {
  for (const line of fs.readFileSync(`${dir}/t.${b}.${r}.jsonl`, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const x = JSON.parse(line);
    const keep = (x.impl === 'compactor' && x.mode === 'count-warm') || x.impl === 'fast-split-only';
    if (!keep) continue;
    ((rows[`${x.encoding} ${x.corpus} ${x.impl === 'compactor' ? 'count' : 'pre-tokenizer only'}`] ??= { native: [], portable: [] })[b]).push(x.cpu_mb_per_s);
  }
}
if (Object.keys(rows).length) {
  console.log(`\n| tokenizer_bench, warm, MB per CPU-second | ${A} | ${B} | ${B} / ${A} |`);
  console.log('|---|---:|---:|---:|');
  for (const [k, t] of Object.entries(rows)) {
    const a = med(t.native), p = med(t.portable);
    console.log(`| ${k} | ${a.toFixed(1)} | ${p.toFixed(1)} | ${(p / a).toFixed(3)} |`);
  }
}
JS
