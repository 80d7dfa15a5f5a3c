#!/usr/bin/env bash
# End-to-end tests of the pi extension package integrations/pi (pi-compactor)
# with the real pi 0.73.1 from npm, against the fake model upstream of
# tests/clients, in a new network namespace with only loopback up.
#
#   tests/pi_extension/run.sh [--compactor BIN] [--only a,b] [--work DIR] [--timeout S]
#
# Reuses tests/clients/install.sh (pi into ~/.cache/compactor-clients/pi) and
# the pi oracle (tests/oracle/install.sh) for the context comparison. Exit 77
# with one line when node, npm, pi or unshare is not available; 1 when a
# scenario fails (its directory is kept and named).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
compactor=$root/build/compactor
only=
work=
timeout=180
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --compactor) compactor=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pi_extension: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# pi runs in each scenario's workspace: the binary's path must not be relative.
case $compactor in /*) ;; *) compactor=$PWD/$compactor ;; esac

if [ -z "${PI_EXTENSION_IN_NETNS:-}" ]; then
  clients=$("$root/tests/clients/install.sh" pi 2>"${TMPDIR:-/tmp}/pi_extension_install.$$")
  status=$?
  why=$(grep -m1 'skip' "${TMPDIR:-/tmp}/pi_extension_install.$$")
  rm -f "${TMPDIR:-/tmp}/pi_extension_install.$$"
  if [ $status = 3 ] || [ ! -x "$clients/pi/node_modules/.bin/pi" ]; then
    echo "pi_extension: SKIP: pi 0.73.1 cannot be installed here (${why:-node or npm missing})"
    exit 77
  fi
  if ! "$root/tests/oracle/install.sh" >/dev/null 2>&1; then
    echo "pi_extension: SKIP: the pi oracle (tests/oracle/install.sh) cannot be installed here"
    exit 77
  fi
  if ! command -v unshare >/dev/null || ! command -v ip >/dev/null || ! unshare -n -m true 2>/dev/null; then
    echo "pi_extension: SKIP: unshare -n -m is not available or not permitted here"
    exit 77
  fi
  if [ ! -x "$compactor" ]; then
    echo "pi_extension: $compactor is not built (cmake --build build --target compactor_cli)" >&2
    exit 1
  fi
  export PI_EXTENSION_IN_NETNS=1 PI_EXTENSION_PI=$clients/pi/node_modules/.bin/pi
  # shellcheck disable=SC2016 # expanded by the inner bash
  exec unshare -n -m -- bash -c '
    set -e
    ip link set lo up
    mount --bind /dev/null /etc/resolv.conf
    exec bash "$0" "$@"' "${BASH_SOURCE[0]}" "${args[@]}"
fi

if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/pi-extension.XXXXXX")
  remove_work=1
else
  mkdir -p "$work"
  remove_work=0
fi
node "$here/test.mjs" --pi "$PI_EXTENSION_PI" --compactor "$compactor" --oracle "$root/tests/oracle/oracle.mjs" \
  --work "$work" --timeout "$timeout" ${only:+--only "$only"}
status=$?
[ $status = 0 ] && [ $remove_work = 1 ] && rm -rf "$work"
exit $status
