#!/usr/bin/env bash
# clang-tidy (.clang-tidy at the root) on changed C++ sources of the library,
# CLI, examples, benchmarks and build tools. Needs a configured build (compile_commands.json).
# Warning options only g++ knows (-Wno-restrict on the benchmarks) are not
# clang's errors: -Wno-unknown-warning-option.
#   scripts/tidy.sh [BUILD_DIR] [BASE]   files changed since BASE (default: the
#                                         last commit's parent, i.e. what CI tests)
#   scripts/tidy.sh [BUILD_DIR] --all    every source file
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
base=${2:-HEAD^1}
cd "$root"
if ! command -v clang-tidy >/dev/null; then
  echo "tidy: clang-tidy is not installed (apt-get install clang-tidy)" >&2
  exit 1
fi
if [ "$base" = "--all" ]; then
  mapfile -t files < <(git ls-files 'src/*.cc' 'cli/*.cc' 'examples/*.cc' 'bench/*.cc' 'tools/*.cc')
else
  # A first commit has no parent: check everything.
  if ! git rev-parse -q --verify "$base" >/dev/null; then base=$(git hash-object -t tree /dev/null); fi
  mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- 'src/*.cc' 'cli/*.cc' \
    'examples/*.cc' 'bench/*.cc' 'tools/*.cc')
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "tidy: no changed sources"
  exit 0
fi
echo "tidy: ${#files[@]} file(s)" >&2
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option 2> >(grep -v 'warnings generated' >&2)
