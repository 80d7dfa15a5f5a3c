// ResolveServeDefaults: the "serve" section of the settings file, the
// environment, and validation of every option (docs/serve.md, "Settings").
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/providers.h"
#include "compactor/serve.h"
#include "compactor/store.h"
#include "compactor/strategy.h"
#include "serve/http_util.h"
#include "serve/proxy_strategy.h"

namespace compactor {
namespace {

using Json = nlohmann::json;

constexpr const char* kApis[] = {"anthropic", "openai-responses", "openai-chat"};

bool KnownApi(std::string_view api) {
  for (const char* a : kApis) {
    if (api == a) return true;
  }
  return false;
}

Result<std::string> ReadText(Env* env, const std::string& path) {
  auto text = env->ReadFile(path);
  if (!text.ok()) {
    return Status::NotFound("cannot read the settings file " + path + ": " +
                            text.status().message());
  }
  return std::move(*text);
}

class SectionReader {
 public:
  SectionReader(std::string file, ServeOptions* o, std::vector<std::string>* warnings)
      : file_(std::move(file)), o_(o), warnings_(warnings) {}

  Status Read(const Json& serve) {
    if (!serve.is_object()) return Bad("serve", "expected an object");
    for (const auto& [key, v] : serve.items()) {
      COMPACTOR_RETURN_IF_ERROR(Key(key, v));
    }
    return Status::Ok();
  }

 private:
  Status Key(const std::string& key, const Json& v) {
    if (key == "upstream") {
      if (!v.is_string()) return Bad("serve.upstream", "expected a URL string");
      if (o_->upstream.empty()) o_->upstream = v.get<std::string>();
    } else if (key == "upstreams") {
      return Upstreams(v);
    } else if (key == "contextWindows") {
      return Windows(v);
    } else if (key == "maxBodyBytes") {
      int64_t n = 0;
      COMPACTOR_RETURN_IF_ERROR(Int(v, "serve.maxBodyBytes", 1024, int64_t{1} << 34, &n));
      o_->max_body_bytes = static_cast<size_t>(n);
    } else if (key == "threads") {
      int64_t n = 0;
      COMPACTOR_RETURN_IF_ERROR(Int(v, "serve.threads", 4, 4096, &n));
      o_->threads = static_cast<int>(n);
    } else if (key == "connectTimeoutMs") {
      return Int(v, "serve.connectTimeoutMs", 1, 3'600'000, &o_->connect_timeout_ms);
    } else if (key == "upstreamIdleTimeoutMs") {
      return Int(v, "serve.upstreamIdleTimeoutMs", 1, 86'400'000, &o_->upstream_idle_timeout_ms);
    } else if (key == "keepAliveTimeoutMs") {
      return Int(v, "serve.keepAliveTimeoutMs", 1, 3'600'000, &o_->keep_alive_timeout_ms);
    } else if (key == "clientTimeoutMs") {
      return Int(v, "serve.clientTimeoutMs", 1, 3'600'000, &o_->client_timeout_ms);
    } else if (key == "summaryDeadlineMs") {
      return Int(v, "serve.summaryDeadlineMs", 0, 3'600'000, &o_->summary_deadline_ms);
    } else if (key == "remoteCompaction") {
      if (!v.is_string() || (v != "auto" && v != "upstream" && v != "proxy")) {
        return Bad("serve.remoteCompaction", "expected \"auto\", \"upstream\" or \"proxy\"");
      }
      o_->remote_compaction = v.get<std::string>();
    } else if (key == "maxConversations") {
      int64_t n = 0;
      COMPACTOR_RETURN_IF_ERROR(Int(v, "serve.maxConversations", 1, 10'000'000, &n));
      o_->max_conversations = static_cast<size_t>(n);
    } else if (key == "notesFile") {
      if (!v.is_string() || v.get<std::string>().empty()) {
        return Bad("serve.notesFile", "expected a file name");
      }
      o_->notes_file = v.get<std::string>();
    } else if (key == "markSummaryRequests") {
      if (!v.is_boolean()) return Bad("serve.markSummaryRequests", "expected true or false");
      o_->mark_summary_requests = v.get<bool>();
    } else {
      warnings_->push_back(file_ + ": unknown key \"serve." + key + "\" (ignored)");
    }
    return Status::Ok();
  }

  Status Upstreams(const Json& v) {
    if (!v.is_object()) return Bad("serve.upstreams", "expected an object of API: URL");
    for (const auto& [api, url] : v.items()) {
      if (!KnownApi(api)) {
        return Bad("serve.upstreams." + api,
                   "unknown API (anthropic, openai-responses, openai-chat)");
      }
      if (!url.is_string()) return Bad("serve.upstreams." + api, "expected a URL string");
      o_->upstreams.emplace(api, url.get<std::string>());  // the caller's entries win
    }
    return Status::Ok();
  }

  Status Windows(const Json& v) {
    if (!v.is_object()) return Bad("serve.contextWindows", "expected an object of model: tokens");
    for (const auto& [model, n] : v.items()) {
      int64_t w = 0;
      COMPACTOR_RETURN_IF_ERROR(Int(n, "serve.contextWindows." + model, 1, int64_t{1} << 40, &w));
      o_->model_windows.emplace(model, w);
    }
    return Status::Ok();
  }

  Status Int(const Json& v, const std::string& key, int64_t lo, int64_t hi, int64_t* out) {
    if (!v.is_number_integer()) return Bad(key, "expected an integer");
    int64_t n = v.get<int64_t>();
    if (n < lo || n > hi) {
      return Bad(key, "expected " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    *out = n;
    return Status::Ok();
  }

  Status Bad(const std::string& key, const std::string& why) {
    return Status::InvalidArgument("settings file " + file_ + ": " + key + ": " + why);
  }

  std::string file_;
  ServeOptions* o_;
  std::vector<std::string>* warnings_;
};

Status ApplySettingsFile(ServeOptions* o, std::vector<std::string>* warnings, std::string* text) {
  COMPACTOR_ASSIGN_OR_RETURN(*text, ReadText(o->env, o->settings_file));
  Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("settings file " + o->settings_file + ": not a JSON object");
  }
  auto it = j.find("serve");
  if (it == j.end()) return Status::Ok();
  return SectionReader(o->settings_file, o, warnings).Read(*it);
}

Status ValidateSummarizer(ServeOptions* out, const std::string& settings_text) {
  const ServeOptions& o = *out;
  if (o.summarizer == "upstream" || o.summarizer == "offline") return Status::Ok();
  if (o.settings_file.empty()) {
    return Status::InvalidArgument("--summarizer " + o.summarizer +
                                   " names a model: give the settings file that defines it "
                                   "(--settings FILE)");
  }
  COMPACTOR_ASSIGN_OR_RETURN(std::vector<ModelConfig> models, ParseModelConfigs(settings_text));
  auto found = ResolveCandidates(models, o.summarizer);
  if (!found.ok()) {
    return Status::InvalidArgument("--summarizer " + o.summarizer + ": " +
                                   found.status().message() +
                                   " (upstream, offline, or a model "
                                   "of the settings file)");
  }
  out->summarizer_models = std::move(*found);
  return Status::Ok();
}

Status ValidateUpstreams(ServeOptions* o) {
  if (!o->upstream.empty()) {
    COMPACTOR_ASSIGN_OR_RETURN(o->upstream, serve::NormalizeUpstream(o->upstream));
  }
  for (auto& [api, url] : o->upstreams) {
    if (!KnownApi(api)) {
      return Status::InvalidArgument("unknown API \"" + api +
                                     "\" for an upstream (anthropic, openai-responses, "
                                     "openai-chat)");
    }
    COMPACTOR_ASSIGN_OR_RETURN(url, serve::NormalizeUpstream(url));
  }
  if (o->upstream.empty() && o->upstreams.empty()) {
    return Status::InvalidArgument(
        "no upstream: give --upstream URL (or \"serve\": {\"upstream\": URL} in the settings "
        "file)");
  }
  return Status::Ok();
}

}  // namespace

Status ResolveServeDefaults(ServeOptions* o, std::vector<std::string>* warnings) {
  if (o->env == nullptr) o->env = Env::Default();
  std::string settings_text;
  if (!o->settings_file.empty()) {
    COMPACTOR_RETURN_IF_ERROR(ApplySettingsFile(o, warnings, &settings_text));
  }
  COMPACTOR_ASSIGN_OR_RETURN(serve::ListenAddress listen, serve::ParseListen(o->listen));
  COMPACTOR_RETURN_IF_ERROR(ValidateUpstreams(o));
  if (o->token.empty()) o->token = o->env->GetEnvVar("COMPACTOR_SERVE_TOKEN").value_or("");
  if (!serve::IsLoopbackHost(listen.host) && o->token.empty()) {
    return Status::InvalidArgument("--listen " + o->listen +
                                   " is not a loopback address: set COMPACTOR_SERVE_TOKEN "
                                   "(the service API's bearer token) to listen there");
  }
  if (o->context_window < 0) {
    return Status::InvalidArgument("--context-window must be a positive number of tokens");
  }
  auto strategy = ParseStrategy(o->strategy);
  if (!strategy.ok()) return Status::InvalidArgument("--strategy: " + strategy.status().message());
  // Only what keeps the client's request well-formed (docs/serve.md,
  // "Strategies in the proxy").
  if (auto applied = serve::ProxyStrategyOf((*strategy)->name(), !o->notes_file.empty());
      !applied.ok()) {
    return Status::InvalidArgument("--strategy " + o->strategy + ": " + applied.status().message());
  }
  COMPACTOR_RETURN_IF_ERROR(ValidateSummarizer(o, settings_text));
  for (const std::string& dir : o->sessions) {
    if (dir.empty()) return Status::InvalidArgument("--sessions needs a directory");
  }
  if (IsPostgresUri(o->store) && !o->sessions.empty()) {
    return Status::InvalidArgument(
        "--sessions (read-only directories) needs a directory store, not --store postgres://...");
  }
  if (o->store.empty()) {
    std::optional<std::string> home = o->env->GetEnvVar("HOME");
    if (!home || home->empty()) {
      return Status::InvalidArgument("HOME is not set: give the store directory (--store DIR)");
    }
    o->store = *home + "/.local/share/compactor/sessions";
  }
  return Status::Ok();
}

}  // namespace compactor
