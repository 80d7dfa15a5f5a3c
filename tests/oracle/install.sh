#!/usr/bin/env bash
# Installs the test oracle's npm packages (tests/oracle/package.json: pi 0.73.1
# and tiktoken 1.0.22, exact versions) into
#   ${COMPACTOR_ORACLE_HOME:-$HOME/.cache/compactor-oracle}
# once. Idempotent: a stamp records the checksum of package.json, so an edit of
# the pinned versions reinstalls and anything else is a no-op. Callers running
# at the same time (ctest -j) wait on a lock instead of installing twice.
#
#   tests/oracle/install.sh            prints the oracle home on stdout
#
# Exit status: 0 installed, 3 node (>= 20) or npm missing (one line on
# stderr saying which; tests skip on it), anything else: the install failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
home=${COMPACTOR_ORACLE_HOME:-$HOME/.cache/compactor-oracle}
want=$(sha256sum "$here/package.json" | cut -d' ' -f1)

installed() {
  [ -f "$home/.installed" ] && [ "$(cat "$home/.installed")" = "$want" ] &&
    [ -f "$home/node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js" ]
}

if ! command -v node >/dev/null; then
  echo "node not found on PATH (the pi oracle needs node >= 20)" >&2
  exit 3
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "node $(node --version) is too old (the pi oracle needs node >= 20)" >&2
  exit 3
fi
if installed; then
  echo "$home"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "npm not found on PATH (needed once to install the pi oracle into $home)" >&2
  exit 3
fi

mkdir -p "$home"
exec 9>"$home/.lock"
flock 9
if ! installed; then
  echo "oracle: installing pi 0.73.1 (npm) into $home" >&2
  rm -f "$home/.installed"
  cp "$here/package.json" "$home/package.json"
  (cd "$home" && npm install --no-audit --no-fund --no-package-lock --loglevel=error >&2)
  echo "$want" >"$home/.installed"
fi
echo "$home"
