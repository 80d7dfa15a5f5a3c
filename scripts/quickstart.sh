#!/usr/bin/env bash
# The README's first command: install, build, then run the main job on the
# bundled example session with the embedded defaults (no network, no API key).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
bin="$root/build/compactor"
example="$root/examples/session.jsonl"
echo
echo "== compactor stats examples/session.jsonl"
"$bin" stats "$example"
echo
echo "== compactor context examples/session.jsonl (first lines of the rebuilt transcript)"
"$bin" context "$example" | head -n 40
