#!/usr/bin/env bash
# Test dependencies of the tokenizer golden test (tests/tokens/golden_test.cc):
# npm tiktoken 1.0.22 and gpt-tokenizer 4.0.0 into build/node_deps.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v npm >/dev/null || { echo "tokenizer: npm absent, golden tests will skip" >&2; exit 0; }
"$root/scripts/install_vocab.sh" "$root/build/vocab"
"$root/scripts/install_test_deps.sh" "$root/build/node_deps"
