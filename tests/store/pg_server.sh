#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests: its own data directory, a unix
# socket in DIR (no TCP port), trust authentication, fsync off. Never the
# machine's own cluster. Run as root, the server runs as the `postgres`
# system user (else `nobody`): PostgreSQL refuses to run as root.
#   pg_server.sh start DIR     creates DIR, starts the server, prints its URI
#   pg_server.sh stop DIR      stops it (fast shutdown) and removes DIR
#   pg_server.sh run CMD...    the same in a new directory under /tmp: start,
#                              run CMD with COMPACTOR_TEST_PG_URI set, stop
#                              whatever happens; CMD's exit code
# Exit 77 when the PostgreSQL binaries are missing (apt-get install postgresql).
# PG_FSYNC=on: sync commits like a production server (benchmarks); default off.
set -euo pipefail

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && bindir=$d; done
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "pg_server.sh: PostgreSQL's initdb not found (install Debian's postgresql)" >&2
  exit 77
fi

as_user=()
if [ "$(id -u)" = 0 ]; then
  user=postgres
  getent passwd postgres >/dev/null || user=nobody
  as_user=(runuser -u "$user" --)
fi

uri_of() { echo "postgresql:///postgres?host=$1&user=compactor"; }

start() {
  local dir=$1
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ "$(id -u)" = 0 ] && chown "$user" "$dir"
  chmod 0700 "$dir"
  "${as_user[@]}" "$bindir/initdb" -D "$dir/data" -U compactor -A trust -E UTF8 \
    --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  # Bounded: pg_ctl waits at most 30 s for the server to accept connections.
  "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=${PG_FSYNC:-off} -c synchronous_commit=${PG_FSYNC:-off} \
        -c max_connections=200 -c shared_buffers=32MB" start >/dev/null ||
    { cat "$dir/server.log" >&2; return 1; }
  uri_of "$dir"
}

stop() {
  local dir=$1
  [ -d "$dir/data" ] && "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 \
    stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case ${1:-} in
  start) start "$2" ;;
  stop) stop "$2" ;;
  run)
    shift
    # Under /tmp: the server's user must reach it (a build tree under a
    # private home may not be), and a socket path stays short.
    dir=$(mktemp -d /tmp/compactor-pg.XXXXXX)
    trap 'stop "$dir"' EXIT INT TERM
    COMPACTOR_TEST_PG_URI=$(start "$dir")
    export COMPACTOR_TEST_PG_URI
    "$@"
    ;;
  *) echo "usage: $0 start|stop|run DIR [CMD...]" >&2; exit 2 ;;
esac
