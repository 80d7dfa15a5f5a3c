#!/usr/bin/env bash
# The real agent clients that the real_clients test drives (tests/clients/):
# Codex CLI, Claude Code, pi and the two official SDKs from npm, installed
# once into ~/.cache/compactor-clients so that the test's time goes to the
# clients, not to npm. A client that cannot be installed is skipped by the
# test with one line; without node or npm the whole test skips.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/tests/clients/install.sh" >/dev/null || echo "clients: the real_clients test will skip (see above)" >&2
exit 0
