// `compactor serve`: an HTTP service in front of a model API. Agents (Codex
// CLI, Claude Code, pi) point their base URL at it; every request is passed
// to the upstream (compacted when the compaction pipeline decides so) and the
// answer is relayed, streams event by event. The service API and the viewer
// live under /compactor/, with GET /healthz and GET /metrics at the root.
// docs/serve.md is the design; docs/cli.md the command.
//
// Thread safety: ServeOptions is a plain value. A ServeServer may be shut
// down from any thread (Shutdown is idempotent); its other methods are const.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_SERVE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_SERVE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compactor/providers.h"
#include "compactor/status.h"

namespace compactor {

class Env;

struct ServeOptions {
  // HOST:PORT to listen on; port 0 picks a free port. Any address other than
  // loopback (127.0.0.0/8, ::1, localhost) needs `token`.
  std::string listen = "127.0.0.1:8787";
  // Where model requests go, the path kept: "https://api.anthropic.com" sends
  // POST /v1/messages to https://api.anthropic.com/v1/messages. Empty: only
  // `upstreams` (from the settings file) name upstreams.
  std::string upstream;
  // Per-API upstreams, keyed by the registered API name ("anthropic",
  // "openai-responses", "openai-chat"); they win over `upstream` for the
  // paths of that API (docs/serve.md, "Routing").
  std::map<std::string, std::string> upstreams;
  // Where proxied conversations are recorded: a directory, or a PostgreSQL
  // URI (postgres://... or postgresql://..., docs/store.md) that many
  // servers may share. Empty: the default, the directory
  // $HOME/.local/share/compactor/sessions (ResolveServeDefaults).
  std::string store;
  // More directories of pi session files, served read-only (with a
  // directory store only).
  std::vector<std::string> sessions;
  // The settings file (compaction settings and the "serve" section); empty: none.
  std::string settings_file;
  // The context window of every model; 0 = the settings' model table, then
  // the built-in table.
  int64_t context_window = 0;
  // Per-model context windows from the settings file ("serve.models").
  std::map<std::string, int64_t> model_windows;
  // The compaction strategy (compact.h's names) the proxy applies: summary,
  // user-prompts, notes or mask (docs/serve.md, "Strategies in the proxy").
  std::string strategy = "summary";
  // notes: the notes file whose content is the summary (settings
  // "serve.notesFile"); read at each compaction. Required by notes.
  std::string notes_file;
  // "upstream" (default: the client's own model and credentials), "offline"
  // (the embedded summarizer) or the name of a model of the settings file.
  std::string summarizer = "upstream";
  // One JSON object per log line instead of the human-readable line.
  bool json_logs = false;
  // The candidates of a `summarizer` naming a settings model (filled by
  // ResolveServeDefaults).
  std::vector<ModelConfig> summarizer_models;
  // The longest a request waits for its summary before it goes upstream
  // uncompacted (settings "serve.summaryDeadlineMs"): 60 s.
  int64_t summary_deadline_ms = 60'000;
  // Codex's compaction_trigger (settings "serve.remoteCompaction"): "auto"
  // (passed to OpenAI's and ChatGPT's upstreams, answered by the proxy for
  // any other), "upstream" (always passed), "proxy" (always answered).
  std::string remote_compaction = "auto";
  // Marks the proxy's own summary requests to the upstream with
  // "x-compactor-request: summary" (settings "serve.markSummaryRequests"):
  // for test harnesses whose fake upstream must tell them from a client's.
  // Off by default: real upstreams get no internal header.
  bool mark_summary_requests = false;
  // Conversations the proxy keeps in memory (settings
  // "serve.maxConversations", 1 .. 10^7): past it the least recently used
  // idle one is evicted; it finds its summary again in the store's summary
  // cache when it comes back: 4096.
  size_t max_conversations = 4096;

  // --- limits (settings "serve" section) -----------------------------------
  // Largest request body accepted, as received and once decoded: 32 MiB. Larger: 413.
  size_t max_body_bytes = 32u << 20;
  // Worker threads; each serves one client connection at a time, so this is
  // the number of concurrent connections (streams) served: 256.
  int threads = 256;
  // Waiting for a TCP connection to the upstream: 10 s (then 504).
  int64_t connect_timeout_ms = 10'000;
  // Longest silence from the upstream, before its response head or between
  // two body reads: 600 s (then 504 before the head, a cut stream after it).
  int64_t upstream_idle_timeout_ms = 600'000;
  // An idle client connection is closed after: 60 s.
  int64_t keep_alive_timeout_ms = 60'000;
  // Reading a request from / writing a response to a client may stall for: 60 s.
  int64_t client_timeout_ms = 60'000;

  // The bearer token of the service API (COMPACTOR_SERVE_TOKEN, read by
  // ResolveServeDefaults). Required on a non-loopback address.
  std::string token;
  // Files, clock and environment variables; null = Env::Default().
  Env* env = nullptr;
};

// Applies the "serve" section of `options->settings_file` (when set) to the
// options the command line left at their defaults, fills `store` and `token`
// from the environment (HOME, COMPACTOR_SERVE_TOKEN), and validates
// everything: the listen address, the upstream URLs, that at least one
// upstream exists, the token on non-loopback addresses, the strategy and
// the summarizer. kInvalidArgument with a one-line message naming the
// problem; `warnings` receives unknown keys of the section.
Status ResolveServeDefaults(ServeOptions* options, std::vector<std::string>* warnings);

// A running service.
class ServeServer {
 public:
  // Binds the address and starts serving on worker threads; returns once
  // connections are accepted. REQUIRES: ResolveServeDefaults succeeded on
  // `options`. Errors: kUnavailable when the address cannot be bound.
  static Result<std::unique_ptr<ServeServer>> Start(ServeOptions options);

  virtual ~ServeServer() = default;
  ServeServer(const ServeServer&) = delete;
  ServeServer& operator=(const ServeServer&) = delete;

  // The bound host and port (the actual port when 0 was asked for).
  virtual std::string host() const = 0;
  virtual int port() const = 0;
  // "http://HOST:PORT" ([HOST] for IPv6).
  virtual std::string url() const = 0;

  // Stops accepting connections, lets requests in flight finish (streams
  // run to their end), closes idle connections and returns when all workers
  // have stopped. Safe to call more than once and from any thread.
  virtual void Shutdown() = 0;

 protected:
  ServeServer() = default;
};

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_SERVE_H_
