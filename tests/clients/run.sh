#!/usr/bin/env bash
# Runs the real agent clients (Codex CLI, Claude Code, pi on three APIs) and
# the official openai / @anthropic-ai/sdk clients end to end against the fake
# model upstream (tests/clients/fake_upstream.mjs), directly and through
# `compactor serve`, inside a network namespace that has only loopback.
#
#   tests/clients/run.sh [options]
#     --mode LIST                comma list of direct (client -> fake
#                                upstream), passthrough (client -> compactor
#                                serve -> fake upstream, nothing to compact:
#                                the same checks as direct) and proxy (the
#                                same, with a window that makes serve compact:
#                                the history must shrink); default
#                                direct,proxy ("both"); passthrough and proxy
#                                skip, one line, while the compactor binary
#                                has no `serve` command
#     --clients LIST             comma list of scenarios (default: all), of
#                                codex, codex-overflow, codex-overflow-stream,
#                                codex-remote, claude, claude-overflow,
#                                pi-anthropic, pi-overflow,
#                                pi-responses, pi-chat, sdk-openai,
#                                sdk-anthropic
#     --steps N --pad CHARS      task length: N tool steps, padding files of
#                                CHARS characters (default 12, 16000)
#     --duration SECONDS         repeat the whole round until SECONDS have
#                                passed (at least one round; long runs)
#     --compactor PATH           the compactor binary (default build/compactor)
#     --strategy NAME            the strategy serve applies (--strategy of
#                                compactor serve): summary (default),
#                                user-prompts, notes (a notes file named by
#                                serve.notesFile in serve's settings) or mask;
#                                the proxy checks look for its own evidence
#     --serve-arg ARG            extra argument for compactor serve (repeatable)
#     --work DIR                 keep every run's files in DIR (default: a temp
#                                dir, removed at the end unless a check failed)
#     --ci                       the bounded CI slice: steps 10, pad 16000, one
#                                round, a 240 s timeout per client
#     --no-netns                 run on the host's loopback (no unshare; only
#                                for machines without it, never in CI)
#
# Exit status: 0 every scenario passed or skipped, 1 a check failed, 77 the
# whole run skipped (node/npm/unshare unavailable: one line says which).
# Checks per scenario (tests/clients/check.mjs): the client finishes with the
# right answer (the random value in its workspace's secret.txt, read back by
# the last tool call); every tool call reached the upstream as the fake emitted
# it and every newest tool result carried what the step produced; direct: the
# client sent its whole history every time; proxy: later upstream requests are
# smaller than the client's full history (summary, user-prompts, notes:
# earlier calls cut; user-prompts: the prompt kept ahead of the summary;
# notes: the notes file's text in the request, no summary request by serve;
# mask: tool results masked in place, no call ever cut); codex-overflow: an
# overflow injected by the upstream fails Codex alone and is recovered through
# the proxy.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

mode=both
clients=codex,codex-overflow,codex-overflow-stream,codex-remote,claude,claude-overflow,pi-anthropic,pi-overflow,pi-responses,pi-chat,sdk-openai,sdk-anthropic
steps=12
pad=16000
duration=0
compactor=$root/build/compactor
serve_args=()
strategy=summary
work=
netns=1
client_timeout=600
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --mode) mode=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --pad) pad=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --compactor) compactor=$2; shift 2 ;;
    --strategy) strategy=$2; shift 2 ;;
    --serve-arg) serve_args+=("$2"); shift 2 ;;
    --work) work=$2; shift 2 ;;
    --ci) steps=10; pad=16000; client_timeout=240; shift ;;
    --no-netns) netns=0; shift ;;
    -h | --help) sed -n '2,39p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "clients: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$mode" = both ] && mode=direct,proxy
IFS=, read -r -a wanted_modes <<<"$mode"
case $strategy in summary | user-prompts | notes | mask) ;; *) echo "clients: --strategy takes summary, user-prompts, notes or mask" >&2; exit 2 ;; esac
for m in "${wanted_modes[@]}"; do
  case $m in direct | passthrough | proxy) ;; *) echo "clients: --mode takes direct, passthrough, proxy (comma list) or both" >&2; exit 2 ;; esac
done

# --- node, the clients, the namespace -------------------------------------

if [ -z "${COMPACTOR_CLIENTS_IN_NETNS:-}" ]; then
  home=$("$here/install.sh")
  status=$?
  if [ $status = 3 ]; then
    echo "clients: SKIP all: node or npm unavailable (see the line above)"
    exit 77
  elif [ $status != 0 ]; then
    echo "clients: the client install failed (status $status)" >&2
    exit 1
  fi
  if [ $netns = 1 ]; then
    # Everything (fake upstream, compactor serve, the clients) runs in one
    # new network namespace with only loopback up, and a private mount
    # namespace whose resolv.conf names no resolver: nothing can leave.
    if ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
      echo "clients: SKIP all: unshare or ip not found (util-linux, iproute2)"
      exit 77
    fi
    if ! unshare -n -m true 2>/dev/null; then
      echo "clients: SKIP all: unshare -n -m is not permitted here (needs root or user namespaces)"
      exit 77
    fi
    export COMPACTOR_CLIENTS_HOME=$home COMPACTOR_CLIENTS_IN_NETNS=1
    # shellcheck disable=SC2016 # expanded by the inner bash
    exec unshare -n -m -- bash -c '
      set -e
      ip link set lo up
      mount --bind /dev/null /etc/resolv.conf
      exec bash "$0" "$@"' "${BASH_SOURCE[0]}" "${args[@]}"
  fi
  export COMPACTOR_CLIENTS_HOME=$home
fi
home=$COMPACTOR_CLIENTS_HOME

if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/compactor-clients.XXXXXX")
  remove_work=1
else
  mkdir -p "$work"
  remove_work=0
fi

# Processes this runner started, stopped on every exit path.
pids=()
# shellcheck disable=SC2317 # called from the traps
cleanup() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
  pids=()
}
trap 'cleanup' EXIT
trap 'cleanup; exit 130' INT TERM

# Starts a server (command line in "$@") that prints "listening on URL" on
# stdout; sets $started_pid and $started_url, or fails after 20 s.
start_server() { # OUTFILE ERRFILE CMD...
  local out=$1 err=$2
  shift 2
  "$@" >"$out" 2>"$err" &
  started_pid=$!
  pids+=("$started_pid")
  started_url=
  for _ in $(seq 200); do
    started_url=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$out" | head -n1)
    [ -n "$started_url" ] && return 0
    kill -0 "$started_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "clients: $1 did not print 'listening on' within 20 s: $(tail -n3 "$err" | tr '\n' ' ')" >&2
  return 1
}

stop_server() { # PID
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
}

# `compactor serve --help` of a binary without serve prints the top-level
# help and exits 0, so look for serve's own option.
has_serve() {
  [ -x "$compactor" ] && "$compactor" serve --help 2>/dev/null | grep -q -- '--upstream'
}

bin() { echo "$home/$1/node_modules/.bin/$2"; }

client_installed() { # NAME
  case $1 in
    codex*) [ -x "$(bin codex codex)" ] ;;
    claude) [ -x "$(bin claude claude)" ] ;;
    pi-*) [ -x "$(bin pi pi)" ] ;;
    sdk-*) [ -f "$home/sdk/node_modules/openai/package.json" ] && [ -f "$home/sdk/node_modules/@anthropic-ai/sdk/package.json" ] ;;
  esac
}

# --- the clients ----------------------------------------------------------

prompt="Work through the numbered workspace steps with your tools, one tool call at a time, until you can report the value stored in secret.txt."

# Each run_* gets DIR (the run's directory: ws/ is the workspace, home/ the
# client's HOME) and BASE (http://127.0.0.1:PORT of the server it talks to),
# writes DIR/answer.txt and returns the client's exit status.

run_codex() { # DIR BASE custom|openai
  local dir=$1 base=$2 provider=$3
  mkdir -p "$dir/codex_home"
  if [ "$provider" = openai ]; then
    # The built-in OpenAI provider pointed at BASE: the one with which Codex
    # compacts remotely (a compaction_trigger item answered by exactly one
    # compaction item). It first tries a Responses WebSocket (GET
    # /v1/responses, refused with 404, then HTTP); a small auto-compaction
    # limit makes it compact within the task.
    cat >"$dir/codex_home/config.toml" <<EOF
model = "fake-model"
model_provider = "openai"
openai_base_url = "$base/v1"
model_auto_compact_token_limit = ${COMPACTOR_CLIENTS_CODEX_COMPACT_LIMIT:-25000}
model_context_window = 60000
EOF
  else
    cat >"$dir/codex_home/config.toml" <<EOF
model = "fake-model"
model_provider = "fake"
EOF
  fi
  cat >>"$dir/codex_home/config.toml" <<EOF
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
[model_providers.fake]
name = "local"
base_url = "$base/v1"
env_key = "FAKE_CODEX_KEY"
wire_api = "responses"
[analytics]
enabled = false
[feedback]
enabled = false
[features]
plugins = false
EOF
  (cd "$dir/ws" && HOME=$dir/home CODEX_HOME=$dir/codex_home FAKE_CODEX_KEY=dummy OPENAI_API_KEY=dummy \
    timeout "$client_timeout" "$(bin codex codex)" exec --skip-git-repo-check --ephemeral --json \
    -C "$dir/ws" -o "$dir/answer.txt" "$prompt" </dev/null >"$dir/client.out" 2>"$dir/client.err")
}

run_claude() { # DIR BASE
  local dir=$1 base=$2 status
  mkdir -p "$dir/claude_config"
  (cd "$dir/ws" && HOME=$dir/home ANTHROPIC_BASE_URL=$base ANTHROPIC_API_KEY=dummy \
    CLAUDE_CONFIG_DIR=$dir/claude_config CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
    DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 DISABLE_UPDATES=1 \
    CLAUDE_CODE_ENABLE_TELEMETRY=0 \
    timeout "$client_timeout" "$(bin claude claude)" -p --output-format json --model claude-sonnet-4-5 \
    --allowedTools Bash Read Write --no-session-persistence "$prompt" </dev/null >"$dir/client.out" 2>"$dir/client.err")
  status=$?
  node -e 'const fs=require("fs");try{const j=JSON.parse(fs.readFileSync(process.argv[1],"utf8"));fs.writeFileSync(process.argv[2],String(j.result??""))}catch(e){}' \
    "$dir/client.out" "$dir/answer.txt"
  return $status
}

run_pi() { # DIR BASE API
  local dir=$1 base=$2 api=$3 url=$2 status
  [ "$api" != anthropic-messages ] && url=$base/v1
  mkdir -p "$dir/pi_agent"
  cat >"$dir/pi_agent/models.json" <<EOF
{ "providers": { "local": { "baseUrl": "$url", "api": "$api", "apiKey": "dummy",
    "models": [ { "id": "fake-model", "name": "Fake", "contextWindow": 200000, "maxTokens": 8192 } ] } } }
EOF
  (cd "$dir/ws" && HOME=$dir/home PI_CODING_AGENT_DIR=$dir/pi_agent PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
    timeout "$client_timeout" "$(bin pi pi)" -p --provider local --model fake-model --session-dir "$dir/sessions" \
    --no-extensions --no-skills --no-prompt-templates --no-themes "$prompt" </dev/null >"$dir/client.out" 2>"$dir/client.err")
  status=$?
  cp "$dir/client.out" "$dir/answer.txt"
  # pi 0.73.1 prints nothing in -p mode after it compacted by itself; the
  # answer is then the last assistant text in its session file.
  if [ $status = 0 ] && ! grep -q '[^[:space:]]' "$dir/answer.txt"; then
    node "$here/check.mjs" pi-answer "$dir/sessions" >"$dir/answer.txt"
    echo "pi printed nothing (it compacted by itself); answer read from its session file" >>"$dir/notes.txt"
  fi
  return $status
}

run_sdk() { # DIR BASE openai|anthropic
  local dir=$1 base=$2 which=$3
  (cd "$dir/ws" && HOME=$dir/home NODE_PATH=$home/sdk/node_modules timeout "$client_timeout" \
    node "$here/sdk_$which.mjs" --base "$base" --prompt "$prompt" >"$dir/client.out" 2>"$dir/client.err")
  local status=$?
  cp "$dir/client.out" "$dir/answer.txt"
  return $status
}

# --- one scenario ---------------------------------------------------------

passed=0
failed=0
skipped=0
failures=()

report() { # VERDICT NAME MODE DETAIL
  printf 'clients: %-4s %-15s %-6s %s\n' "$1" "$2" "$3" "$4"
  case $1 in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)); failures+=("$2/$3") ;;
    SKIP) skipped=$((skipped + 1)) ;;
  esac
}

# Window sizes for the proxy: small enough that the task crosses pi's
# threshold (window - 16384 reserve) and large enough that the kept recent
# part (20000 tokens, at most half the threshold) plus the client's fixed
# system prompt and tools fit under it after compaction. Measured where it
# can be: when the same scenario ran direct or passthrough earlier in this
# round, its upstream log gives the task's largest request E and its first
# request F (bytes / 4, which over-counts pi's estimate by ~20%); the
# threshold is then max(0.6 E, 2 F + 2000): crossed about two thirds into
# the task, with room for F plus half the threshold after compaction. Else
# (or when that threshold would not be crossed) a table from earlier
# measurements: Claude Code's fixed part is ~28k tokens, Codex's ~8k, pi's
# ~1.5k. (codex-remote compacts by itself, below 48000: see run_codex.)
proxy_window() { # SCENARIO ROUND
  local m f measured=
  case $1 in *-overflow*) echo 1000000; return ;; esac
  # The agents' own task (the SDK scenarios run several conversations).
  case $1 in codex | claude | pi-*) ;; *) echo 48000; return ;; esac
  for m in direct passthrough; do
    f=$work/r$2-$1-$m/upstream.jsonl
    [ -s "$f" ] || continue
    measured=$(node -e '
      const fs = require("fs");
      const task = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse)
        .filter((r) => r.kind === "call" || r.kind === "final");
      if (!task.length) process.exit(0);
      const e = Math.max(...task.map((r) => r.est_tokens)), f = task[0].est_tokens;
      const t = Math.max(Math.round(0.6 * e), 2 * f + 2000);
      if (t <= 0.85 * e) console.log(t + 16384);' "$f")
    [ -n "$measured" ] && break
  done
  if [ -n "$measured" ]; then
    echo "$measured"
    return
  fi
  case $1 in
    claude) echo 72000 ;;
    codex) echo 40000 ;;
    *) echo 48000 ;;
  esac
}

run_scenario() { # NAME MODE ROUND
  local name=$1 mode=$2 dir=$work/r$3-$1-$2 fake_args=() base status expect=success
  mkdir -p "$dir/ws" "$dir/home"
  fake_args=(--log "$dir/upstream.jsonl" --workspace "$dir/ws" --steps "$steps" --pad "$pad" --prompt "$prompt")
  # The notes of --strategy notes: a text the fake looks for in every request
  # (no step marker, no secret-like value, so it cannot steer the task).
  local notes="Harness notes for r$3-$1-$2: the workspace steps are worked through one tool call at a time."
  [ "$strategy" = notes ] && fake_args+=(--find "$notes")
  case $name in
    codex-overflow*)
      # Codex's fixed part is ~10k tokens; the overflow limit sits well above
      # what the proxy keeps after compacting (fixed + 20k recent + summary).
      fake_args+=(--overflow-tokens "${COMPACTOR_CLIENTS_OVERFLOW_TOKENS:-36000}")
      [ "$name" = codex-overflow-stream ] && fake_args+=(--overflow-mode stream)
      # Through serve (passthrough too) the proxy's overflow recovery applies.
      [ "$mode" = direct ] && expect=overflow-failure
      ;;
    claude-overflow)
      # Claude Code's fixed part is ~29k tokens: it overflows late in the
      # task, summarizes by itself (directly) and goes on; through the proxy
      # the proxy recovers first.
      fake_args+=(--overflow-tokens "${COMPACTOR_CLIENTS_CLAUDE_OVERFLOW_TOKENS:-52000}")
      ;;
    pi-overflow)
      # pi compacts by itself on an overflow (directly), then prints nothing
      # (read from its session file); through the proxy the proxy recovers.
      fake_args+=(--overflow-tokens "${COMPACTOR_CLIENTS_PI_OVERFLOW_TOKENS:-28000}")
      ;;
    codex-remote)
      # Direct, the fake offers remote compaction the way the service does;
      # through the proxy it does not (a local server): the proxy must answer
      # Codex's compaction_trigger itself.
      [ "$mode" != proxy ] && fake_args+=(--remote-compaction)
      ;;
  esac
  start_server "$dir/upstream.out" "$dir/upstream.err" node "$here/fake_upstream.mjs" "${fake_args[@]}" || {
    report FAIL "$name" "$mode" "the fake upstream did not start"; return; }
  local fake_pid=$started_pid
  base=$started_url
  local serve_pid=
  if [ "$mode" != direct ]; then
    local window=()
    # Passthrough: no window, so serve knows none for the fake's model names and compacts nothing proactively.
    [ "$mode" = proxy ] && window=(--context-window "$(proxy_window "$name" "$3")")
    # markSummaryRequests: serve's own summary requests carry
    # x-compactor-request: summary, so the fake tells them from a client
    # compacting by itself (real upstreams never get that header).
    local remote=
    if [ "$name" = codex-remote ] && [ "$mode" = passthrough ]; then
      # The fake offers remote compaction here: serve passes Codex's
      # compaction_trigger on instead of answering it (its default for
      # upstreams other than OpenAI's).
      remote=', "remoteCompaction": "upstream"'
    fi
    local notes_file=
    if [ "$strategy" = notes ]; then
      printf '%s\n' "$notes" >"$dir/notes.md"
      notes_file=", \"notesFile\": \"$dir/notes.md\""
    fi
    echo "{\"serve\": {\"markSummaryRequests\": true$remote$notes_file}}" >"$dir/serve-settings.json"
    window+=(--settings "$dir/serve-settings.json")
    # --json: check.mjs reads serve's request log (which requests it rewrote).
    start_server "$dir/serve.out" "$dir/serve.err" "$compactor" serve --listen 127.0.0.1:0 --upstream "$base" \
      "${window[@]}" --store "$dir/store" --json --strategy "$strategy" "${serve_args[@]}" || {
      stop_server "$fake_pid"
      report FAIL "$name" "$mode" "compactor serve did not start: $(tail -n2 "$dir/serve.err" | tr '\n' ' ')"
      return
    }
    serve_pid=$started_pid
    base=$started_url
  fi
  local t0=$SECONDS
  case $name in
    codex | codex-overflow*) run_codex "$dir" "$base" custom ;;
    codex-remote) run_codex "$dir" "$base" openai ;;
    claude*) run_claude "$dir" "$base" ;;
    pi-anthropic | pi-overflow) run_pi "$dir" "$base" anthropic-messages ;;
    pi-responses) run_pi "$dir" "$base" openai-responses ;;
    pi-chat) run_pi "$dir" "$base" openai-completions ;;
    sdk-openai) run_sdk "$dir" "$base" openai ;;
    sdk-anthropic) run_sdk "$dir" "$base" anthropic ;;
  esac
  status=$?
  local secs=$((SECONDS - t0))
  [ -n "$serve_pid" ] && stop_server "$serve_pid"
  stop_server "$fake_pid"
  local verdict
  verdict=$(node "$here/check.mjs" verdict --dir "$dir" --scenario "$name" --mode "$mode" --expect "$expect" \
    --status "$status" --steps "$steps" --strategy "$strategy")
  local first=${verdict%%$'\n'*}
  report "${first%% *}" "$name" "$mode" "${first#* } (${secs}s)"
  [ "$first" != "${verdict}" ] && printf '%s\n' "${verdict#*$'\n'}" | sed 's/^/clients:        /'
}

# --- the rounds -----------------------------------------------------------

modes=()
for m in "${wanted_modes[@]}"; do
  if [ "$m" = direct ] || has_serve; then
    modes+=("$m")
  else
    echo "clients: SKIP $m mode: $compactor has no 'serve' command yet"
  fi
done

IFS=, read -r -a scenarios <<<"$clients"
start=$SECONDS
round=0
while :; do
  round=$((round + 1))
  for name in "${scenarios[@]}"; do
    if ! client_installed "$name"; then
      report SKIP "$name" - "client not installed (see the install lines above)"
      continue
    fi
    for m in "${modes[@]}"; do run_scenario "$name" "$m" "$round"; done
  done
  [ $((SECONDS - start)) -ge "$duration" ] && break
  [ "$round" -ge 1000 ] && break
done

summary="clients: strategy $strategy: $passed passed, $failed failed, $skipped skipped in $round round(s), $((SECONDS - start))s"
if [ $failed -gt 0 ]; then
  echo "$summary (files kept: $work)"
  echo "clients: failed: ${failures[*]}"
  exit 1
fi
if [ $remove_work = 1 ]; then
  rm -rf "$work"
  echo "$summary"
else
  echo "$summary (files: $work)"
fi
exit 0
