// compactor serve: the HTTP service (docs/serve.md). Built into its own
// program, compactor-serve, which `compactor serve` runs (cmd_serve_forward.cc):
// the HTTP server library pulls OpenSSL into the process, which would add
// tens of milliseconds to the start-up of every other command.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "compactor/serve.h"

namespace compactor::cli {
namespace {

int RunServe(ServeOptions options) {
  std::vector<std::string> warnings;
  Status resolved = ResolveServeDefaults(&options, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "compactor: warning: %s\n", w.c_str());
  if (!resolved.ok()) return Fail(resolved);
  // SIGTERM and SIGINT are taken by sigwait below: blocked here, before any
  // thread starts, so every worker inherits the mask. A client that goes
  // away must not kill the process (writes use MSG_NOSIGNAL; this covers TLS).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);
  auto server = ServeServer::Start(std::move(options));
  if (!server.ok()) return Fail(server.status());
  std::printf("listening on %s\n", (*server)->url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "compactor: %s: finishing the requests in flight\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Shutdown();
  return kExitOk;
}

}  // namespace

void RegisterServe(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", kServeDescription);
  cmd->add_option("--listen", o->listen,
                  "HOST:PORT to listen on (default 127.0.0.1:8787; port 0 picks a free port; "
                  "other than loopback needs COMPACTOR_SERVE_TOKEN)");
  cmd->add_option("--upstream", o->upstream,
                  "where model requests go, the path kept: URL/v1/messages (per-API upstreams: "
                  "the settings file)");
  cmd->add_option("--store", o->store,
                  "where proxied conversations are recorded: a directory (default "
                  "~/.local/share/compactor/sessions) or a postgres://... URI many servers share "
                  "(docs/store.md)");
  cmd->add_option("--sessions", o->sessions,
                  "a directory of pi session files served read-only (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--settings", o->settings_file,
                  "settings file: compaction settings and the \"serve\" section (docs/serve.md)");
  cmd->add_option("--context-window", o->context_window,
                  "the context window of every model (default: the settings' table, then the "
                  "built-in one)");
  cmd->add_option("--strategy", o->strategy, "the compaction strategy (default summary)");
  cmd->add_option("--summarizer", o->summarizer,
                  "upstream (default: the client's model and credentials), offline, or a model "
                  "of the settings file");
  cmd->add_flag("--json", o->json_logs, "log one JSON object per request on stderr");
  cmd->callback([o] { ExitCode() = RunServe(*o); });
}

}  // namespace compactor::cli
