#!/usr/bin/env bash
# Tokenizer benchmark, side by side in one run (docs/benchmarks.md,
# "Tokenizers"): compactor's Count/Encode, gpt-tokenizer 4.0.0 countTokens and
# tiktoken 1.0.22 (WASM) encode_ordinary on the same deterministic corpus
# files: mixed (~10 MB: English, code, JSON, CJK), CJK-only and code-only.
#
#   scripts/bench_tokenizer.sh [BUILD_DIR] [REPEAT]
#
# Prints markdown tables; raw results go to BUILD_DIR/bench_tokenizer.jsonl.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
repeat=${2:-5}

"$root/scripts/install_vocab.sh" "$build/vocab" >&2
"$root/scripts/install_test_deps.sh" "$build/node_deps" >&2
cmake --build "$build" --target tokenizer_bench -j2 >&2

corpus="$build/bench_corpus"
mkdir -p "$corpus"
"$build/tokenizer_bench" --write-corpus "$corpus" --mb 10
results="$build/bench_tokenizer.jsonl"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
{
  COMPACTOR_VOCAB_DIR="$build/vocab" "$build/tokenizer_bench" --corpus "$corpus" --repeat "$repeat"
  node "$root/bench/tokenizer_peers.mjs" "$build/node_deps" "$corpus" "$repeat"
} > "$results"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average before the run: $load_before"
node "$root/bench/tokenizer_report.mjs" "$results"
