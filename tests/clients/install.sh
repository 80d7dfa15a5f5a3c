#!/usr/bin/env bash
# Installs the real agent clients and the official SDKs that tests/clients/run.sh
# drives against the fake upstream (and `compactor serve`), each into its own
# npm prefix under ${COMPACTOR_CLIENTS_HOME:-$HOME/.cache/compactor-clients}:
#
#   codex   @openai/codex 0.169.0                  (bin: codex)
#   claude  @anthropic-ai/claude-code 2.1.197      (bin: claude)
#   pi      @mariozechner/pi-coding-agent 0.73.1   (bin: pi)
#   sdk     openai 7.57.0 + @anthropic-ai/sdk 1.14.0
#
# Separate prefixes so that one client the registry refuses does not take the
# others down with it. Idempotent: a stamp per prefix records the pinned spec,
# so a version edit here reinstalls and anything else is a no-op. Concurrent
# callers (ctest -j) wait on a lock.
#
#   tests/clients/install.sh [NAME...]     prints the clients home on stdout
#
# For each client that cannot be installed, one line "clients: skip NAME: WHY"
# on stderr. Exit status: 0 (even when some clients were skipped: the runner
# skips them one by one), 3 when node (>= 20) or npm is missing altogether.
set -uo pipefail
home=${COMPACTOR_CLIENTS_HOME:-$HOME/.cache/compactor-clients}

declare -A spec=(
  [codex]="@openai/codex@0.169.0"
  [claude]="@anthropic-ai/claude-code@2.1.197"
  [pi]="@mariozechner/pi-coding-agent@0.73.1"
  [sdk]="openai@7.57.0 @anthropic-ai/sdk@1.14.0"
)
# What must exist after a good install (the runner checks the same paths).
declare -A probe=(
  [codex]="node_modules/.bin/codex"
  [claude]="node_modules/.bin/claude"
  [pi]="node_modules/.bin/pi"
  [sdk]="node_modules/@anthropic-ai/sdk/package.json"
)

if ! command -v node >/dev/null; then
  echo "clients: skip all: node not found on PATH (the clients need node >= 20)" >&2
  exit 3
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "clients: skip all: node $(node --version) is too old (the clients need node >= 20)" >&2
  exit 3
fi

# The prefix's package.json before the install adds the dependencies. pi's
# own packages are pinned to 0.73.1 too (its dependency ranges are ^0.73.1).
template() { # NAME
  if [ "$1" = pi ]; then
    echo '{"name":"compactor-clients-pi","private":true,"overrides":{"@mariozechner/pi-agent-core":"0.73.1","@mariozechner/pi-ai":"0.73.1","@mariozechner/pi-tui":"0.73.1"}}'
  else
    echo '{"name":"compactor-clients-'"$1"'","private":true}'
  fi
}

stamp() { # NAME
  echo "${spec[$1]} $(template "$1" | sha256sum | cut -c1-16)"
}

installed() { # NAME
  local dir=$home/$1
  [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$(stamp "$1")" ] && [ -e "$dir/${probe[$1]}" ]
}

names=("$@")
[ ${#names[@]} -eq 0 ] && names=(codex claude pi sdk)
mkdir -p "$home"
for name in "${names[@]}"; do
  if [ -z "${spec[$name]:-}" ]; then
    echo "clients: unknown client '$name' (codex, claude, pi, sdk)" >&2
    exit 2
  fi
  installed "$name" && continue
  if ! command -v npm >/dev/null; then
    echo "clients: skip all: npm not found on PATH (needed once to install the clients into $home)" >&2
    exit 3
  fi
  dir=$home/$name
  mkdir -p "$dir"
  (
    flock 9
    installed "$name" && exit 0
    echo "clients: installing ${spec[$name]} (npm) into $dir" >&2
    rm -f "$dir/.installed"
    rm -rf "$dir/node_modules" "$dir/package-lock.json"
    template "$name" >"$dir/package.json"
    # shellcheck disable=SC2086
    if ! out=$(cd "$dir" && timeout 600 npm install --no-audit --no-fund --save-exact --loglevel=error ${spec[$name]} 2>&1); then
      echo "clients: skip $name: npm install ${spec[$name]} failed: $(printf '%s' "$out" | grep -m1 -i 'err' || printf '%s' "$out" | tail -n1)" >&2
      exit 0
    fi
    if [ ! -e "$dir/${probe[$name]}" ]; then
      echo "clients: skip $name: npm installed ${spec[$name]} but $dir/${probe[$name]} is missing" >&2
      exit 0
    fi
    stamp "$name" >"$dir/.installed"
  ) 9>"$dir/.lock"
done
echo "$home"
