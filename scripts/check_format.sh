#!/usr/bin/env bash
# Fails when a C++ file differs from clang-format's output (.clang-format at the root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "format: $f needs clang-format -i" >&2
    bad=1
  fi
done < <(git ls-files '*.cc' '*.h')
exit $bad
