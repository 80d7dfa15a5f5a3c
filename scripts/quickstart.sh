#!/usr/bin/env bash
# The README's first command: install, build, then run the main job on the
# bundled example session with the embedded defaults (offline summarizer: no
# network, no API key). The example is copied first; the repository copy is
# never modified.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
bin="$root/build/compactor"
work="$root/build/quickstart"
mkdir -p "$work"
cp "$root/examples/session.jsonl" "$work/session.jsonl"
echo
echo "== compactor stats (before)"
"$bin" stats "$work/session.jsonl"
echo
echo "== compactor compact --summarizer offline"
"$bin" compact "$work/session.jsonl" --summarizer offline
echo
echo "== the rebuilt context"
"$bin" tokens "$work/session.jsonl"
# Written to a file first: piping into head would end the command with SIGPIPE,
# which pipefail turns into a failed quick start.
"$bin" context "$work/session.jsonl" > "$work/context.txt"
head -n 30 "$work/context.txt"
echo "(compacted copy: $work/session.jsonl)"
