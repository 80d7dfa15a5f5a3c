#!/usr/bin/env bash
# Installs playwright-core (pinned) into ${COMPACTOR_VIEWER_HOME:-$HOME/.cache/compactor-viewer}
# for the browser test of the web viewer (tests/viewer/run.sh). It drives
# Debian's chromium (scripts/setup.sh installs it); no browser is downloaded.
# Idempotent: a stamp records the pinned version. Prints the directory.
# Exit status: 0 installed, 3 node or npm missing, 1 the install failed.
set -uo pipefail
PLAYWRIGHT_CORE_VERSION=1.65.1
home=${COMPACTOR_VIEWER_HOME:-$HOME/.cache/compactor-viewer}
want="playwright-core@$PLAYWRIGHT_CORE_VERSION"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "viewer: node or npm not found on PATH" >&2
  exit 3
fi
mkdir -p "$home"
exec 9>"$home/.lock"
flock -w 600 9 || { echo "viewer: timed out waiting for $home/.lock" >&2; exit 1; }
if [ -f "$home/.installed" ] && [ "$(cat "$home/.installed")" = "$want" ] &&
   [ -f "$home/node_modules/playwright-core/package.json" ]; then
  echo "$home"
  exit 0
fi
cd "$home" || exit 1
[ -f package.json ] || echo '{"name":"compactor-viewer-test","private":true}' > package.json
# PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: playwright-core downloads nothing, but
# say so for any future version that would.
if ! PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 600 npm install --no-audit --no-fund \
     --loglevel=error --save-exact "$want" >/dev/null; then
  echo "viewer: npm install $want failed" >&2
  exit 1
fi
echo "$want" > .installed
echo "$home"
