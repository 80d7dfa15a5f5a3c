#!/usr/bin/env bash
# The README's second command: builds (installing what is missing) and runs the
# whole test suite. Tests that compare with the reference pi implementation
# install it from the npm registry once (~/.cache/pi-oracle).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
shared="${COMPACTOR_SHARED_DIR:-$root/../shared}"
if [ -x "$shared/tools/pi-oracle/run.sh" ] && command -v node >/dev/null; then
  home=${PI_ORACLE_HOME:-$HOME/.cache/pi-oracle}
  if [ ! -d "$home/node_modules/@mariozechner/pi-coding-agent/dist" ]; then
    echo "test: installing the pi oracle (npm) into $home" >&2
    mkdir -p "$home" && cp "$shared/tools/pi-oracle/package.json" "$home/"
    (cd "$home" && npm install --no-audit --no-fund --loglevel=error >&2)
  fi
fi
for hook in "$root"/scripts/test.d/*.sh; do
  [ -e "$hook" ] && bash "$hook"
done
if [ "${CI:-}" = "true" ]; then
  "$root/scripts/check_format.sh"
  # clang-tidy on the sources the commit under test changed (.clang-tidy).
  "$root/scripts/tidy.sh" "$root/build"
fi
cd "$root/build"
ctest --output-on-failure -j"$(nproc)" --timeout 900
