#!/usr/bin/env bash
# The web viewer in a real browser (ctest BrowserViewer, docs/viewer.md):
# Debian's chromium driven by playwright-core against a real `compactor
# serve` on 127.0.0.1 whose --sessions directory holds the fixture session
# (compactions, a branch summary, labels) and a generated session of 20,000
# entries, and whose --store holds a writable copy of the fixture to compact
# from the page. A second serve on 0.0.0.0 checks the sign-in with the token.
# Screenshots go to OUT (the build directory's viewer-screenshots/).
#
#   tests/viewer/run.sh --compactor PATH --out DIR
#
# Without chromium, node or playwright-core: exit 1 when CI=true (CI
# installs them: scripts/setup.sh, scripts/test.d/viewer.sh), else exit 77
# (ctest: skipped) with the reason.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
compactor="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --compactor) compactor=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 --compactor PATH --out DIR" >&2; exit 2 ;;
  esac
done
[ -x "$compactor" ] || { echo "viewer: no compactor at '$compactor'" >&2; exit 2; }
[ -n "$out" ] || out=$PWD/viewer-screenshots

missing() {
  if [ "${CI:-}" = "true" ]; then
    echo "viewer: FAIL: $1 (CI installs it: scripts/setup.sh, scripts/test.d/viewer.sh)" >&2
    exit 1
  fi
  echo "viewer: skip: $1" >&2
  exit 77
}
chromium=${COMPACTOR_CHROMIUM:-$(command -v chromium || true)}
[ -n "$chromium" ] && [ -x "$chromium" ] || missing "chromium not found (apt-get install chromium)"
command -v node >/dev/null || missing "node not found"
home=$("$here/install.sh") || missing "playwright-core could not be installed (tests/viewer/install.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/compactor-viewer.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/sessions" "$work/store" "$out"

fixture=$root/tests/fixtures/pi/written.jsonl
cp "$fixture" "$work/sessions/written.jsonl"
# The writable copy has an id of its own, so both are listed.
sed '1s/"id":"[^"]*"/"id":"writable-copy-0001"/' "$fixture" > "$work/store/writable.jsonl"
node "$here/gen_session.mjs" 20000 "$work/sessions/big.jsonl" big-session-20000 >/dev/null || exit 1

# Starts serve with the given arguments; sets $url from its first line.
start_serve() {
  local log=$1; shift
  "$compactor" serve --upstream http://127.0.0.1:9 --context-window 200000 "$@" \
    >"$log.out" 2>"$log.err" &
  pids+=($!)
  url=""
  for _ in $(seq 1 200); do
    url=$(sed -n 's/^listening on //p' "$log.out" | head -1)
    [ -n "$url" ] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.05
  done
  echo "viewer: compactor serve did not start:" >&2
  cat "$log.err" >&2
  exit 1
}

start_serve "$work/serve" --listen 127.0.0.1:0 --store "$work/store" --sessions "$work/sessions"
local_url=$url
token=viewer-test-token-$$-$RANDOM
COMPACTOR_SERVE_TOKEN=$token start_serve "$work/serve-token" --listen 0.0.0.0:0 \
  --store "$work/store-token" --sessions "$work/sessions"
# Off loopback the browser still connects through 127.0.0.1.
token_url=http://127.0.0.1:${url##*:}

timeout 900 node "$here/browser_test.mjs" --playwright "$home/node_modules/playwright-core" \
  --url "$local_url" --token-url "$token_url" --token "$token" --chromium "$chromium" \
  --out "$out" --fixture "$fixture" --big-id big-session-20000 --writable-id writable-copy-0001
