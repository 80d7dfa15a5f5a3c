#!/usr/bin/env bash
# Runs the pi oracle (oracle.mjs COMMAND ...), installing pi 0.73.1 first when it is not there yet.
#   tests/oracle/run.sh inspect SESSION.jsonl --leaf ID --keep 2000 --serialize
#   tests/oracle/run.sh fixtures tests/fixtures/pi       (regenerates the fixtures and goldens)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/install.sh" >/dev/null
exec node "$here/oracle.mjs" "$@"
