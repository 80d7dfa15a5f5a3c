#!/usr/bin/env bash
# Real agent clients against the fake upstream and `compactor serve`: the
# runner is tests/clients/run.sh (options there, --help); this is its short name.
#   scripts/clients.sh --duration 1800         long run, every client, both modes
#   scripts/clients.sh --clients codex --mode proxy --work /tmp/c
exec "$(cd "$(dirname "$0")/.." && pwd)/tests/clients/run.sh" "$@"
