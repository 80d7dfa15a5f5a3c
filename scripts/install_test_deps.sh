#!/usr/bin/env bash
# Installs the npm packages that the tokenizer golden test and benchmark compare
# against, into <repo>/build/node_deps (or DIR): tiktoken (OpenAI's Rust core
# compiled to WASM, the golden reference) and gpt-tokenizer (the fastest pure-JS
# peer). Nothing is committed; tests skip with a message when this is absent.
#
#   scripts/install_test_deps.sh [DIR]
set -euo pipefail

TIKTOKEN_VERSION=1.0.22
GPT_TOKENIZER_VERSION=4.0.0

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$repo/build/node_deps}"
mkdir -p "$dir"

want="tiktoken@$TIKTOKEN_VERSION gpt-tokenizer@$GPT_TOKENIZER_VERSION"
if [[ -f "$dir/.installed" ]] && [[ "$(cat "$dir/.installed")" == "$want" ]]; then
  echo "install_test_deps: $dir already has $want"
  exit 0
fi
command -v npm >/dev/null || { echo "install_test_deps: npm is required" >&2; exit 1; }
cd "$dir"
[[ -f package.json ]] || npm init -y >/dev/null 2>&1
# shellcheck disable=SC2086
npm install --no-audit --no-fund --loglevel=error --save-exact $want >/dev/null
echo "$want" > .installed
echo "install_test_deps: installed $want into $dir"
