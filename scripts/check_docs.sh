#!/usr/bin/env bash
# Fails when the docs, comments or scripts cite something outside the
# repository: the team's private notes (by file name, by section number such as
# "A7", "B3" or "§10.1", or as ../shared/...). Every page and comment must
# explain itself or point to a page of docs/ (issue 11). Run by ctest
# (check_docs) and by hand: scripts/check_docs.sh [ROOT].
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
patterns=(
  -e '§'
  -e '\.md (§|[A-J][0-9])'
  -e '\((A|B|C|D|E|G|H|J)[0-9]+(\.[0-9]+)?[,)]'
  -e '\b(omp|oh-my-pi|pi) [A-J][0-9]+\b'
  -e '\bPart [A-J] ?#?[0-9]'
  -e 'compaction-algorithms|pi-session-format|overflow-detection|cpp-dependencies'
  -e 'quality-evaluation|feature-matrix|real-clients\.md|style-anchors|architecture-target'
  -e '(\.\./|\b)shared/(fixtures|reference|tools|seeds|hooks)'
)
dirs=()
for d in docs README.md include src cli tests bench examples tools scripts integrations CMakeLists.txt; do
  [ -e "$d" ] && dirs+=("$d")
done
# Fixture data is what pi wrote; this script names the patterns it looks for.
if grep -rnE "${patterns[@]}" --exclude-dir=fixtures --exclude=check_docs.sh \
  --exclude-dir=node_modules "${dirs[@]}" >&2; then
  echo "check_docs: the lines above cite notes outside the repository;" \
    "explain the rule in place or point to a page of docs/" >&2
  exit 1
fi
