#!/usr/bin/env bash
# Full disk on a real filesystem (docs/reliability.md, "Full disk"): every
# command that writes a file runs against a session on a small tmpfs with no
# room for what it writes. Each must exit 1 with one line on stderr naming
# the file it could not write, leave the session byte for byte as it was (no
# part of an entry appended) and leave no temporary, backup or output file.
# The MemEnv tests inject the same faults; this one asks the kernel.
#
# Needs root (a mount namespace of its own, `unshare -m`, and `mount -t
# tmpfs`); otherwise, or when the container refuses either, it prints one
# line saying why and exits 77 (ctest: skipped).
#   tests/reliability/full_disk_test.sh COMPACTOR_CLI SOURCE_DIR
set -uo pipefail
cli=$1
src=$2

skip() {
  echo "full_disk: skipped: $*"
  exit 77
}

if [ "${COMPACTOR_FULL_DISK_INSIDE:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || skip "not root (needs unshare -m and mount -t tmpfs)"
  command -v unshare >/dev/null || skip "unshare is not installed"
  unshare -m --propagation private true 2>/dev/null ||
    skip "unshare -m is refused here (no CAP_SYS_ADMIN?)"
  COMPACTOR_FULL_DISK_INSIDE=1 exec unshare -m --propagation private "$0" "$@"
fi

# In a mount namespace of our own: the tmpfs disappears with this process.
work=$(mktemp -d)
trap 'umount "$work/disk" 2>/dev/null; rm -rf "$work"' EXIT
mkdir "$work/disk"
mount -t tmpfs -o size=1m,mode=0755 tmpfs "$work/disk" 2>/dev/null ||
  skip "mount -t tmpfs is refused here"
disk=$work/disk
page=$(getconf PAGESIZE)

# The session: the 354 KB fixture, padded with one more message so that it
# ends exactly at a page boundary (an append into the last page's slack would
# need no new block, and the disk would not be full for it).
fixture=$src/tests/fixtures/pi/long.v3.jsonl
v1=$src/tests/fixtures/pi/long.v1.jsonl
python3 - "$fixture" "$work/session.jsonl" "$page" <<'EOF' || exit 1
import json, sys
src, dst, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, 'rb').read()
leaf = json.loads(data.rstrip(b'\n').rsplit(b'\n', 1)[1])['id']
def entry(n):
    return (json.dumps({"type": "message", "id": "pad00001", "parentId": leaf,
                        "timestamp": "2026-01-01T00:00:00.000Z",
                        "message": {"role": "user", "content": "x" * n, "timestamp": 1}},
                       separators=(',', ':')) + '\n').encode()
base = len(data) + len(entry(0))
open(dst, 'wb').write(data + entry((-base) % page + page))
EOF
branch_to=$(sed -n 7p "$fixture" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')

failures=0
fail() {
  echo "FAIL $label: $*"
  failures=$((failures + 1))
}

# Makes the disk hold only FILE (a copy of ORIGINAL) and a filler that takes
# every free block but FREE_KB KiB.
prepare() {
  local original=$1 free_kb=$2
  find "$disk" -mindepth 1 -delete
  cp "$original" "$disk/s.jsonl"
  dd if=/dev/zero of="$disk/fill" bs=4k 2>/dev/null
  if [ "$free_kb" -gt 0 ]; then
    truncate -s "-${free_kb}K" "$disk/fill"
  fi
  (cd "$disk" && ls -A) >"$work/before"
}

# check LABEL ORIGINAL FREE_KB NAMED -- ARGS...: runs the CLI with ARGS (s.jsonl
# stands for the session on the full disk) and checks the outcome. NAMED is
# the file the error must name (a path under the disk, or "stdout"; a
# regular expression).
check() {
  label=$1
  local original=$2 free_kb=$3 named=$4
  shift 5
  prepare "$original" "$free_kb"
  local failed_before=$failures
  local args=() a
  for a in "$@"; do args+=("${a//@/$disk}"); done
  local out=$work/stdout
  [ "$named" = stdout ] && out=$disk/out
  timeout 60 "$cli" "${args[@]}" >"$out" 2>"$work/stderr"
  local code=$?
  named=${named//@/$disk}
  [ "$code" = 1 ] || fail "exit $code, expected 1: $(head -c 500 "$work/stderr")"
  local lines
  lines=$(wc -l <"$work/stderr")
  [ "$lines" = 1 ] || fail "$lines lines on stderr, expected 1: $(head -c 500 "$work/stderr")"
  grep -q "^compactor: $named: .*No space left on device" "$work/stderr" ||
    fail "the error does not name $named and the full disk: $(head -c 500 "$work/stderr")"
  cmp -s "$original" "$disk/s.jsonl" || fail "the session changed"
  local now
  now=$(cd "$disk" && ls -A | grep -vx 's.jsonl.lock' | grep -vx out)
  [ "$now" = "$(grep -vx out "$work/before")" ] ||
    fail "files left behind: $(echo "$now" | tr '\n' ' ')"
  [ "$named" = stdout ] || [ ! -s "$disk/out" ] || fail "wrote to stdout"
  [ "$failures" = "$failed_before" ] && echo "ok $label (free ${free_kb} KiB): $(cat "$work/stderr")"
  return 0
}

s=$work/session.jsonl
# No free block at all, then 8 KiB free: a rewrite starts its temporary file,
# an append (a summary entry, larger than 8 KiB) would start its entry, and
# both must take it back.
for free in 0 8; do
  check "prune in place" "$s" $free @/s.jsonl -- prune @/s.jsonl -q --protect-tokens 500 \
    --minimum-savings 0 --grace-ms 0
  check "prune -o" "$s" $free @/pruned.jsonl -- prune @/s.jsonl -q --protect-tokens 500 \
    --minimum-savings 0 -o @/pruned.jsonl
  check "migrate --in-place" "$v1" $free @/s.jsonl -- migrate @/s.jsonl -q --in-place --grace-ms 0
  check "migrate -o" "$v1" $free @/v3.jsonl -- migrate @/s.jsonl -q -o @/v3.jsonl
  check "compact (offline summary)" "$s" $free @/s.jsonl -- compact @/s.jsonl -q \
    --keep-recent-tokens 2000 --context-window 20000
  check "compact --strategy user-prompts" "$s" $free @/s.jsonl -- compact @/s.jsonl -q \
    --strategy user-prompts --keep-recent-tokens 2000 --context-window 20000
  check "compact --strategy mask" "$s" $free @/s.jsonl -- compact @/s.jsonl -q --strategy mask \
    --context-window 20000 --grace-ms 0
  # The new session's name holds the time and a random id.
  check "compact --strategy handoff" "$s" $free '@/[^:/]*\.jsonl' -- compact @/s.jsonl -q \
    --strategy handoff --keep-recent-tokens 2000 --context-window 20000 --handoff-dir @
  check "branch --summarize" "$s" $free @/s.jsonl -- branch @/s.jsonl -q --summarize \
    --to "$branch_to"
  # A move appends one small entry: 8 KiB is room enough for it.
  [ $free = 0 ] && check "branch" "$s" $free @/s.jsonl -- branch @/s.jsonl -q --to "$branch_to" \
    --label here
  check "context > full disk" "$s" $free stdout -- context @/s.jsonl -q --json
  check "migrate > full disk" "$v1" $free stdout -- migrate @/s.jsonl -q
done

if [ "$failures" -gt 0 ]; then
  echo "full_disk: $failures failures"
  exit 1
fi
echo "full_disk: every writing command refused the full disk cleanly"
