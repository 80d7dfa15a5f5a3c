#include "serve/api.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "compactor/branch.h"
#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/llm_summarizer.h"
#include "compactor/prepare.h"
#include "compactor/report.h"
#include "compactor/settings.h"
#include "compactor/strategy.h"
#include "compactor/summarizer.h"
#include "compactor/writer.h"
#include "serve/compact_plan.h"
#include "serve/upstream_summarizer.h"

namespace compactor::serve {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kPrefix = "/compactor/v1";

// A Status as the API's error: status code and error code (docs/api.md).
void Fail(ServiceResponse& res, const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return ServiceError(res, 404, "not_found", s.message());
    case StatusCode::kInvalidArgument:
      return ServiceError(res, 400, "invalid_argument", s.message());
    case StatusCode::kCorruption:
      return ServiceError(res, 422, "invalid_session", s.message());
    case StatusCode::kFailedPrecondition:
      return ServiceError(res, 409, "conflict", s.message());
    case StatusCode::kUnavailable:
      return ServiceError(res, 502, "summarizer_unavailable", s.message());
    case StatusCode::kCancelled:
      return ServiceError(res, 409, "cancelled", s.message());
    case StatusCode::kResourceExhausted:
      return ServiceError(res, 507, "resource_exhausted", s.message());
    default:
      return ServiceError(res, 500, "internal", s.message());
  }
}

void Ok(ServiceResponse& res, std::string body, int status = 200) {
  res.status = status;
  res.content_type = "application/json";
  res.body = std::move(body);
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The request's parameters: the query string, then (for a JSON object
// body) the body's members; the query wins.
class Params {
 public:
  // kInvalidArgument when a non-empty body is not a JSON object.
  static Result<Params> Of(const ServiceRequest& req, bool body_has_params) {
    Params p(req);
    if (body_has_params && !req.body.empty()) {
      p.body_ = Json::parse(req.body, nullptr, false);
      if (!p.body_.is_object())
        return Status::InvalidArgument("the body must be a JSON object of parameters");
    }
    return p;
  }
  std::optional<std::string> Get(const std::string& name) const {
    auto it = req_->params.find(name);
    if (it != req_->params.end()) return it->second;
    if (body_.is_object() && body_.contains(name)) {
      const Json& v = body_[name];
      if (v.is_string()) return v.get<std::string>();
      return Dump(v);
    }
    return std::nullopt;
  }
  std::string Str(const std::string& name) const { return Get(name).value_or(""); }
  Result<bool> Bool(const std::string& name) const {
    auto v = Get(name);
    if (!v || *v == "false" || *v == "0") return false;
    if (*v == "true" || *v == "1" || v->empty()) return true;
    return Status::InvalidArgument(name + ": expected true or false, got \"" + *v + "\"");
  }
  Result<std::optional<int64_t>> Int(const std::string& name) const {
    auto v = Get(name);
    if (!v) return std::optional<int64_t>();
    try {
      size_t used = 0;
      int64_t n = std::stoll(*v, &used);
      if (used == v->size()) return std::optional<int64_t>(n);
    } catch (...) {  // std::stoll's invalid_argument / out_of_range
    }
    return Status::InvalidArgument(name + ": expected an integer, got \"" + *v + "\"");
  }

 private:
  explicit Params(const ServiceRequest& req) : req_(&req) {}
  const ServiceRequest* req_;
  Json body_;
};

// The settings with the request's overrides (the CLI's settings options).
Result<CompactionSettings> SettingsFor(CompactionSettings s, const Params& p) {
  COMPACTOR_ASSIGN_OR_RETURN(auto keep, p.Int("keepRecentTokens"));
  COMPACTOR_ASSIGN_OR_RETURN(auto reserve, p.Int("reserveTokens"));
  COMPACTOR_ASSIGN_OR_RETURN(auto window, p.Int("contextWindow"));
  if (keep) s.keep_recent_tokens = *keep;
  if (reserve) s.reserve_tokens = *reserve;
  if (window) s.context_window = *window;
  COMPACTOR_RETURN_IF_ERROR(ValidateSettings(s));
  return s;
}

Result<std::unique_ptr<Summarizer>> SummarizerFor(const std::string& name,
                                                  const std::vector<ModelConfig>& models,
                                                  int64_t reserve_tokens) {
  if (name.empty() || name == "offline") return NewOfflineSummarizer();
  auto candidates = ResolveCandidates(models, name);
  if (!candidates.ok())
    return Status::InvalidArgument("summarizer: " + candidates.status().message());
  LlmSummarizerOptions o;
  o.candidates = std::move(candidates).value();
  o.reserve_tokens = reserve_tokens;
  return NewLlmSummarizer(std::move(o));
}

// The model endpoint of a registered API.
std::string_view ApiPath(std::string_view api) {
  if (api == "anthropic") return "/v1/messages";
  if (api == "openai-responses") return "/v1/responses";
  if (api == "openai-chat") return "/v1/chat/completions";
  return "";
}

// The session's model: its latest model_change entry's.
std::string SessionModel(const Session& s) {
  for (size_t i = s.size(); i-- > 0;) {
    const Entry& e = s.entry(i);
    if (e.type == EntryType::kModelChange && !e.model.empty()) return std::string(e.model);
  }
  return "";
}

// A request's error with its own code (400 unless said otherwise).
struct ApiError {
  int status = 400;
  std::string code, message;
};

// `summarizer=upstream`: summaries by the serve's upstream, with the
// caller's own credentials (its Authorization or x-api-key field, sent with
// the summary requests only: never stored, never logged, redacted from
// errors). The API is the `api` parameter, else anthropic for an x-api-key
// caller and openai-responses otherwise; the model is the `model`
// parameter, else the session's. Errors: no upstream for that API
// (upstream_unavailable), no credentials (credentials_required), no model.
Result<std::unique_ptr<Summarizer>> UpstreamSummarizer(
    const ServiceRequest& req, const Params& p, const Session& s,
    const std::function<std::string(const std::string&)>& upstream_url, Env* env, ApiError* err) {
  HeaderList credentials;
  for (const auto& [name, value] : req.headers) {
    if (EqualsIgnoreCase(name, "authorization") || EqualsIgnoreCase(name, "x-api-key"))
      credentials.emplace_back(name, value);
  }
  std::string api = p.Str("api");
  if (api.empty()) api = HasHeader(credentials, "x-api-key") ? "anthropic" : "openai-responses";
  if (ApiPath(api).empty()) {
    *err = {400, "invalid_argument",
            "api: expected anthropic, openai-responses or openai-chat, got \"" + api + "\""};
    return Status::InvalidArgument(err->message);
  }
  std::string url = upstream_url ? upstream_url(api) : "";
  if (url.empty()) {
    *err = {400, "upstream_unavailable",
            "summarizer=upstream needs an upstream for " + api + " (compactor serve --upstream)"};
    return Status::InvalidArgument(err->message);
  }
  if (credentials.empty()) {
    *err = {400, "credentials_required",
            "summarizer=upstream sends the summary requests with the caller's credentials: send "
            "\"Authorization\" or \"x-api-key\" for the upstream"};
    return Status::InvalidArgument(err->message);
  }
  std::string model = p.Str("model");
  if (model.empty()) model = SessionModel(s);
  if (model.empty()) {
    *err = {400, "invalid_argument", "summarizer=upstream: the session names no model; pass model"};
    return Status::InvalidArgument(err->message);
  }
  UpstreamSummaryTarget t;
  t.api = api;
  t.url = std::move(url);
  t.model = std::move(model);
  t.headers = std::move(credentials);
  ProxySummarizerOptions o;
  o.env = env;
  return NewUpstreamSummarizer(std::move(t), o);
}

std::string IsoOf(int64_t ms) {
  // NowIsoTimestamp formats the clock of an Env; a fixed clock formats `ms`.
  class At : public EnvWrapper {
   public:
    At(int64_t ms) : EnvWrapper(Env::Default()), ms_(ms) {}
    int64_t NowMs() override { return ms_; }

   private:
    int64_t ms_;
  } at(ms);
  return NowIsoTimestamp(&at);
}

Json InfoJson(const StoredSessionInfo& i) {
  Json j;
  j["id"] = i.id;
  j["path"] = i.path;
  j["name"] = i.named ? Json(i.title) : Json(nullptr);
  j["firstPrompt"] = !i.named && !i.title.empty() ? Json(i.title) : Json(nullptr);
  j["sizeBytes"] = i.size_bytes;
  j["entries"] = i.entries;
  j["lastActivity"] = IsoOf(i.last_activity_ms);
  j["readOnly"] = i.read_only;
  return j;
}

// Entries posted to .../entries, completed: an id where none is given, a
// parentId chaining them onto the leaf, a timestamp.
Result<std::vector<std::string>> CompleteEntries(const Session& s, const std::string& body,
                                                 Env* env, std::vector<std::string>* ids) {
  Json posted = Json::parse(body, nullptr, false);
  if (posted.is_discarded()) return Status::InvalidArgument("the body is not JSON");
  if (posted.is_object()) posted = Json::array({posted});
  if (!posted.is_array() || posted.empty())
    return Status::InvalidArgument("the body must be a pi entry object or a non-empty array");
  std::optional<size_t> leaf = s.Leaf();
  std::string parent = leaf ? std::string(s.entry(*leaf).id) : "";
  std::vector<std::string> lines;
  for (Json& e : posted) {
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string())
      return Status::InvalidArgument("every entry is an object with a string \"type\"");
    if (e["type"] == "session") return Status::InvalidArgument("a session header is not an entry");
    if (!e.contains("id")) e["id"] = NewEntryId(s, *ids, env);
    if (!e["id"].is_string()) return Status::InvalidArgument("an entry's \"id\" is a string");
    std::string id = e["id"].get<std::string>();
    if (s.Find(id) || std::find(ids->begin(), ids->end(), id) != ids->end())
      return Status::InvalidArgument("entry id " + id + " exists");
    if (!e.contains("parentId")) e["parentId"] = parent.empty() ? Json(nullptr) : Json(parent);
    if (!e.contains("timestamp")) e["timestamp"] = NowIsoTimestamp(env);
    ids->push_back(id);
    parent = id;
    lines.push_back(Dump(e));
  }
  return lines;
}

// The `leaf` query parameter (nullopt: the session's leaf).
std::optional<std::string> LeafParam(const ServiceRequest& req) {
  auto leaf = req.params.find("leaf");
  if (leaf == req.params.end()) return std::nullopt;
  return leaf->second;
}

// GET .../sessions/{id}/export: the session as a pi session file (docs/api.md).
void ExportSession(SessionStore& store, const std::string& id, ServiceResponse& res) {
  auto text = store.Export(id);
  if (!text.ok()) return Fail(res, text.status());
  res.content_type = "application/x-ndjson";
  res.body = std::move(text).value();
}

}  // namespace

SessionService::~SessionService() = default;

Result<std::unique_ptr<SessionService>> SessionService::Install(Server& server,
                                                                const ServeOptions& options) {
  std::unique_ptr<SessionService> svc(new SessionService());
  svc->env_ = EnvOrDefault(options.env);
  if (!options.settings_file.empty()) {
    COMPACTOR_ASSIGN_OR_RETURN(LoadedSettings loaded,
                               LoadSettingsFile(options.settings_file, {}, svc->env_));
    svc->settings_ = loaded.settings;
    COMPACTOR_ASSIGN_OR_RETURN(std::string text, svc->env_->ReadFile(options.settings_file));
    auto models = ParseModelConfigs(text);
    if (models.ok()) svc->models_ = std::move(models).value();
  }
  StoreSpec so;  // a directory or a postgres:// URI
  so.store = options.store;
  so.read_only_dirs = options.sessions;
  so.env = svc->env_;
  COMPACTOR_ASSIGN_OR_RETURN(svc->store_, OpenStore(so));
  svc->loaded_ = std::make_unique<LoadedSessions>(svc->store_.get());
  RecorderOptions ro;
  ro.store = svc->store_.get();
  ro.shared_store = IsPostgresUri(options.store);  // other servers write it too
  ro.env = svc->env_;
  ro.on_error = [](const Status& s) {
    std::fprintf(stderr, "compactor: warning: recording: %s\n", s.message().c_str());
  };
  svc->recorder_ = std::make_unique<ConversationRecorder>(std::move(ro));
  svc->hook_ = std::make_shared<RecordingHook>(svc->recorder_.get());
  server.proxy().AddHook(svc->hook_);
  // x-compactor-session names the recorded session, the id the API takes.
  ConversationRecorder* recorder = svc->recorder_.get();
  server.set_session_resolver(
      [recorder](const std::string& conversation) { return recorder->SessionFor(conversation); });
  // The proxy's summaries survive its conversation table and restarts.
  SessionStore* store = svc->store_.get();
  DurableSummaries durable;
  durable.put = [store](const std::string& key, const std::string& summary) {
    Status s = store->PutSummary(key, summary);
    if (!s.ok())
      std::fprintf(stderr, "compactor: warning: summary cache: %s\n", s.message().c_str());
  };
  durable.find = [store](const std::string& key) { return store->FindSummary(key); };
  durable.claim = [store](const std::string& key) { return store->TryClaimSummary(key); };
  server.set_durable_summaries(std::move(durable));
  Server* srv = &server;  // outlives the service's requests
  svc->upstream_url_ = [srv](const std::string& api) -> std::string {
    std::string_view path = ApiPath(api);
    std::string root = srv->proxy().UpstreamFor(ClassifyPath(path), {});
    return root.empty() || path.empty() ? "" : JoinUpstream(root, path);
  };
  // The window the viewer's context bar measures against: as the proxy
  // chooses it (--context-window, the settings' models, the built-in table).
  svc->window_of_ = [fixed = options.context_window,
                     windows = options.model_windows](const std::string& model) -> int64_t {
    if (fixed > 0) return fixed;
    auto it = windows.find(model);
    return it != windows.end() ? it->second : BuiltinContextWindow(model);
  };
  svc->Register(server.router());
  return svc;
}

void SessionService::Register(ServiceRouter& router) {
  auto bind = [this](void (SessionService::*fn)(const ServiceRequest&, ServiceResponse&)) {
    return [this, fn](const ServiceRequest& req, ServiceResponse& res) { (this->*fn)(req, res); };
  };
  const std::string s = std::string(kPrefix) + "/sessions";
  router.Add("GET", s, bind(&SessionService::List));
  router.Add("GET", s + "/{id}", bind(&SessionService::Stats));
  router.Add("GET", s + "/{id}/context", bind(&SessionService::Context));
  router.Add("GET", s + "/{id}/tree", bind(&SessionService::Tree));
  router.Add("GET", s + "/{id}/plan", bind(&SessionService::Plan));
  router.Add("GET", s + "/{id}/export", [this](const ServiceRequest& req, ServiceResponse& res) {
    ExportSession(*store_, req.path_params.at("id"), res);
  });
  router.Add("POST", s + "/{id}/compact", bind(&SessionService::Compact));
  router.Add("POST", s + "/{id}/entries", bind(&SessionService::Entries));
  router.Add("POST", s + "/{id}/branch", bind(&SessionService::Branch));
  router.Add("POST", std::string(kPrefix) + "/compact", bind(&SessionService::CompactStateless));
  // For the web viewer (docs/viewer.md).
  router.Add("GET", s + "/{id}/entries/{entry}", bind(&SessionService::EntryOf));
  router.Add("GET", s + "/{id}/outline", bind(&SessionService::Outline));
  router.Add("GET", s + "/{id}/window", bind(&SessionService::Window));
}

void SessionService::List(const ServiceRequest& /*req*/, ServiceResponse& res) {
  auto list = store_->List();
  if (!list.ok()) return Fail(res, list.status());
  Json sessions = Json::array();
  for (const StoredSessionInfo& i : *list) sessions.push_back(InfoJson(i));
  Ok(res, Dump(Json{{"sessions", std::move(sessions)}}));
}

void SessionService::Stats(const ServiceRequest& req, ServiceResponse& res) {
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  auto ctx = s->Context(LeafParam(req), false);
  if (!ctx.ok()) return Fail(res, ctx.status());
  Ok(res, StatsJson(s->session(), **ctx));
}

void SessionService::Context(const ServiceRequest& req, ServiceResponse& res) {
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  auto expand = req.params.find("expand");
  auto ctx = s->Context(LeafParam(req), expand != req.params.end() && expand->second != "false");
  if (!ctx.ok()) return Fail(res, ctx.status());
  Ok(res, ContextToJson(**ctx));
}

void SessionService::Tree(const ServiceRequest& req, ServiceResponse& res) {
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  auto ctx = s->Context(LeafParam(req), false);
  if (!ctx.ok()) return Fail(res, ctx.status());
  Ok(res, TreeJson(s->session(), **ctx));
}

void SessionService::Plan(const ServiceRequest& req, ServiceResponse& res) {
  auto p = Params::Of(req, false);
  if (!p.ok()) return Fail(res, p.status());
  auto settings = SettingsFor(settings_, *p);
  if (!settings.ok()) return Fail(res, settings.status());
  PrepareOptions po;
  po.settings = *settings;
  if (auto leaf = p->Get("leaf")) po.leaf_id = *leaf;
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  auto r = PrepareCompaction(s->session(), po);
  if (!r.ok()) return Fail(res, r.status());
  Ok(res, PlanJson(*r));
}

namespace {

// Refuses writes to a read-only session: 403 read_only. False when `res` is set.
bool Writable(SessionStore& store, const std::string& id, ServiceResponse& res) {
  auto ro = store.ReadOnly(id);
  if (!ro.ok()) {
    Fail(res, ro.status());
    return false;
  }
  if (*ro) {
    ServiceError(res, 403, "read_only",
                 "session " + id + " is served read-only (--sessions); writes are refused");
    return false;
  }
  return true;
}

// Records a computed compaction in the store as CompactFile records it in a
// file: an appended entry, a new session (handoff), or a replacement (mask),
// each refused when the session changed since it was read (409 conflict).
Status RecordCompaction(SessionStore& store, const std::string& id, const Session& s,
                        ComputedCompaction& c) {
  switch (c.result.output) {
    case CompactionOutput::kAppendEntry: {
      StoreAppendOptions ao;
      ao.expected_entries = s.size();
      ao.loaded = &s;
      return store.Append(id, {c.result.entry_json}, ao);
    }
    case CompactionOutput::kNewSession: {
      COMPACTOR_ASSIGN_OR_RETURN(std::string new_id, store.Import(c.new_session_jsonl));
      COMPACTOR_ASSIGN_OR_RETURN(StoredSessionInfo info, store.Info(new_id));
      c.result.output_path = info.path;
      return Status::Ok();
    }
    case CompactionOutput::kRewriteFile:
      return store.Replace(id, c.rewritten_jsonl, s.size());
  }
  return Status::Internal("unknown compaction output");
}

// CompactOptions from the request's parameters (the CLI's compact options).
Status FillCompactOptions(const Params& p, const CompactionSettings& base,
                          const std::vector<ModelConfig>& models, CompactOptions* o,
                          std::unique_ptr<Summarizer>* summarizer) {
  COMPACTOR_ASSIGN_OR_RETURN(o->settings, SettingsFor(base, p));
  if (auto name = p.Get("strategy"); name && !name->empty()) {
    COMPACTOR_ASSIGN_OR_RETURN(o->strategy, ParseStrategy(*name));
  }
  // summarizer=upstream is made once the session is read (its model).
  if (p.Str("summarizer") != "upstream") {
    COMPACTOR_ASSIGN_OR_RETURN(
        *summarizer, SummarizerFor(p.Str("summarizer"), models, o->settings.reserve_tokens));
    o->summarizer = summarizer->get();
  }
  o->instructions = p.Str("instructions");
  if (auto leaf = p.Get("leaf")) o->leaf_id = *leaf;
  COMPACTOR_ASSIGN_OR_RETURN(o->only_if_needed, p.Bool("ifNeeded"));
  COMPACTOR_ASSIGN_OR_RETURN(o->dry_run, p.Bool("dryRun"));
  return Status::Ok();
}

// For summarizer=upstream: sets `*summarizer` and `*use`, or answers `res`
// with the error and returns false. True and nothing set for any other
// summarizer.
bool UseUpstreamSummarizer(const ServiceRequest& req, const Params& p, const Session& s,
                           const std::function<std::string(const std::string&)>& upstream_url,
                           Env* env, std::unique_ptr<Summarizer>* summarizer,
                           const Summarizer** use, ServiceResponse& res) {
  if (p.Str("summarizer") != "upstream") return true;
  ApiError e;
  auto u = UpstreamSummarizer(req, p, s, upstream_url, env, &e);
  if (!u.ok()) {
    ServiceError(res, e.status, e.code, e.message);
    return false;
  }
  *summarizer = std::move(u).value();
  *use = summarizer->get();
  return true;
}

}  // namespace

void SessionService::Compact(const ServiceRequest& req, ServiceResponse& res) {
  const std::string& id = req.path_params.at("id");
  auto p = Params::Of(req, true);
  if (!p.ok()) return Fail(res, p.status());
  CompactOptions o;
  std::unique_ptr<Summarizer> summarizer;
  Status filled = FillCompactOptions(*p, settings_, models_, &o, &summarizer);
  if (!filled.ok()) return Fail(res, filled);
  o.env = env_;
  if (!o.dry_run && !Writable(*store_, id, res)) return;
  auto s = loaded_->Acquire(id);
  if (!s.ok()) return Fail(res, s.status());
  Session& session = s->session();
  if (!UseUpstreamSummarizer(req, *p, session, upstream_url_, env_, &summarizer, &o.summarizer,
                             res))
    return;
  auto c = ComputeCompaction(session, o);
  if (!c.ok()) return Fail(res, c.status());
  if (c->result.compacted && !o.dry_run) {
    Status recorded = RecordCompaction(*store_, id, session, *c);
    if (!recorded.ok()) return Fail(res, recorded);
  }
  Ok(res, CompactionResultJson(c->result, o.dry_run));
}

void SessionService::Entries(const ServiceRequest& req, ServiceResponse& res) {
  const std::string& id = req.path_params.at("id");
  if (!Writable(*store_, id, res)) return;
  auto s = loaded_->Acquire(id);
  if (!s.ok()) return Fail(res, s.status());
  std::vector<std::string> ids;
  auto lines = CompleteEntries(s->session(), req.body, env_, &ids);
  if (!lines.ok()) return Fail(res, lines.status());
  StoreAppendOptions ao;
  ao.expected_entries = s->session().size();
  ao.loaded = &s->session();
  Status appended = store_->Append(id, *lines, ao);
  if (!appended.ok()) return Fail(res, appended);
  Ok(res, Dump(Json{{"ids", ids}}), 201);
}

void SessionService::Branch(const ServiceRequest& req, ServiceResponse& res) {
  const std::string& id = req.path_params.at("id");
  auto p = Params::Of(req, true);
  if (!p.ok()) return Fail(res, p.status());
  BranchOptions o;
  o.target_id = p->Str("to");
  if (o.target_id.empty()) return ServiceError(res, 400, "invalid_argument", "\"to\" is required");
  if (auto from = p->Get("from")) o.from_leaf = *from;
  auto summarize = p->Bool("summarize");
  auto replace = p->Bool("replaceInstructions");
  auto dry_run = p->Bool("dryRun");
  auto window = p->Int("contextWindow");
  auto reserve = p->Int("reserveTokens");
  for (const Status& st : {summarize.status(), replace.status(), dry_run.status(), window.status(),
                           reserve.status()}) {
    if (!st.ok()) return Fail(res, st);
  }
  o.summarize = *summarize;
  o.replace_instructions = *replace;
  o.dry_run = *dry_run;
  if (*window) o.context_window = **window;
  if (*reserve) o.reserve_tokens = **reserve;
  o.instructions = p->Str("instructions");
  o.label = p->Str("label");
  o.env = env_;
  std::unique_ptr<Summarizer> summarizer;
  if (p->Str("summarizer") != "upstream") {
    auto made = SummarizerFor(p->Str("summarizer"), models_, o.reserve_tokens);
    if (!made.ok()) return Fail(res, made.status());
    summarizer = std::move(made).value();
    o.summarizer = summarizer.get();
  }
  if (!o.dry_run && !Writable(*store_, id, res)) return;
  auto s = loaded_->Acquire(id);
  if (!s.ok()) return Fail(res, s.status());
  if (!UseUpstreamSummarizer(req, *p, s->session(), upstream_url_, env_, &summarizer, &o.summarizer,
                             res))
    return;
  auto r = ComputeBranch(s->session(), o);
  if (!r.ok()) return Fail(res, r.status());
  if (!r->noop && !o.dry_run && !r->appended.empty()) {
    StoreAppendOptions ao;
    ao.expected_entries = s->session().size();
    ao.loaded = &s->session();
    Status appended = store_->Append(id, r->appended, ao);
    if (!appended.ok()) return Fail(res, appended);
  }
  Ok(res, BranchResultJson(*r, o.dry_run));
}

void SessionService::CompactStateless(const ServiceRequest& req, ServiceResponse& res) {
  auto p = Params::Of(req, false);
  if (!p.ok()) return Fail(res, p.status());
  CompactOptions o;
  std::unique_ptr<Summarizer> summarizer;
  Status filled = FillCompactOptions(*p, settings_, models_, &o, &summarizer);
  if (!filled.ok()) return Fail(res, filled);
  o.dry_run = true;  // stores nothing, whatever was asked
  o.env = env_;
  LoadOptions lo;
  lo.message_observer = TokenEstimateObserver();
  auto s = Session::FromString(req.body, "the request body", lo);
  if (!s.ok()) return Fail(res, s.status());
  if (!UseUpstreamSummarizer(req, *p, **s, upstream_url_, env_, &summarizer, &o.summarizer, res))
    return;
  auto c = ComputeCompaction(**s, o);
  if (!c.ok()) return Fail(res, c.status());
  std::unique_ptr<Session> after;
  if (c->result.compacted) {
    auto a = SessionAfterCompaction(**s, *c);
    if (!a.ok()) return Fail(res, a.status());
    after = std::move(a).value();
  }
  const Session& shown = after ? *after : **s;
  ContextOptions co;
  // The new session of a handoff starts its own path; otherwise the leaf
  // asked for (the appended entry follows it).
  if (c->result.compacted && c->result.output == CompactionOutput::kAppendEntry)
    co.leaf_id = c->result.entry_id;
  else if (o.leaf_id && !after)
    co.leaf_id = o.leaf_id;
  auto ctx = BuildSessionContext(shown, co);
  if (!ctx.ok()) return Fail(res, ctx.status());
  Ok(res, "{\"compaction\":" + CompactionResultJson(c->result, true) +
              ",\"context\":" + ContextToJson(*ctx) + "}");
}

// --- for the web viewer ------------------------------------------------------

namespace {

constexpr size_t kOutlineBytes = 160;

// `text` on one line, at most kOutlineBytes bytes, cut at a UTF-8 boundary.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= kOutlineBytes) break;
    bool space = c == '\n' || c == '\r' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  if (out.size() >= kOutlineBytes) {
    size_t cut = kOutlineBytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out;
}

// The readable part of a message's content: its text blocks, tool calls as
// "name(arguments)", images as "[image]".
std::string ContentText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const Json& b : content) {
    if (!b.is_object() || out.size() > kOutlineBytes) continue;
    std::string type = b.value("type", "");
    if (!out.empty()) out += ' ';
    if (type == "text" && b.contains("text") && b["text"].is_string()) {
      out += b["text"].get<std::string>();
    } else if (type == "toolCall") {
      out += b.value("name", "tool") + "(" +
             (b.contains("arguments") ? Dump(b["arguments"]) : std::string()) + ")";
    } else if (type == "image") {
      out += "[image]";
    } else if (type == "thinking") {
      out += "[thinking]";
    }
  }
  return out;
}

std::string MessageOutline(std::string_view json) {
  Json m = Json::parse(json, nullptr, false);
  if (!m.is_object()) return "";
  std::string role = m.value("role", "");
  if (role == "bashExecution") return "$ " + m.value("command", "");
  std::string text = m.contains("content") ? ContentText(m["content"]) : "";
  if (role == "toolResult") return m.value("toolName", "tool") + ": " + text;
  return text;
}

// One line saying what an entry is about (docs/api.md, outline).
std::string EntryOutline(const Session& s, size_t i) {
  const Entry& e = s.entry(i);
  auto field = [&](std::string_view key) { return s.StringField(i, key).value_or(""); };
  switch (e.type) {
    case EntryType::kMessage:
      return OneLine(MessageOutline(s.MessageJson(i)));
    case EntryType::kCompaction:
    case EntryType::kBranchSummary:
      return OneLine(field("summary"));
    case EntryType::kModelChange:
      return OneLine(std::string(e.provider) + "/" + std::string(e.model));
    case EntryType::kThinkingLevelChange:
      return OneLine(e.thinking_level);
    case EntryType::kLabel:
      return OneLine(std::string(e.label) + " -> " + std::string(e.target_id));
    case EntryType::kSessionInfo:
      return OneLine(e.name);
    case EntryType::kCustomMessage: {
      Json c = Json::parse(s.FieldJson(i, "content"), nullptr, false);
      return OneLine(c.is_discarded() ? field("customType") : ContentText(c));
    }
    default:
      return OneLine(field("customType"));
  }
}

}  // namespace

void SessionService::EntryOf(const ServiceRequest& req, ServiceResponse& res) {
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  const std::string& entry = req.path_params.at("entry");
  std::optional<size_t> i = s->session().Find(entry);
  if (!i) return ServiceError(res, 404, "not_found", "no entry " + entry + " in the session");
  Ok(res, s->session().EntryJson(*i));
}

void SessionService::Outline(const ServiceRequest& req, ServiceResponse& res) {
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  const Session& session = s->session();
  std::string out = "{\"entries\":[";
  for (size_t i = 0; i < session.size(); ++i) {
    Json line;
    line["id"] = session.entry(i).id;
    line["timestamp"] = session.entry(i).timestamp;
    line["text"] = EntryOutline(session, i);
    if (i > 0) out += ',';
    out += Dump(line);
  }
  out += "]}";
  Ok(res, std::move(out));
}

void SessionService::Window(const ServiceRequest& req, ServiceResponse& res) {
  auto p = Params::Of(req, false);
  if (!p.ok()) return Fail(res, p.status());
  auto window = p->Int("contextWindow");
  if (!window.ok()) return Fail(res, window.status());
  auto s = loaded_->Acquire(req.path_params.at("id"));
  if (!s.ok()) return Fail(res, s.status());
  const Session& session = s->session();
  auto cached = s->Context(p->Get("leaf"), false);
  if (!cached.ok()) return Fail(res, cached.status());
  const SessionContext* ctx = cached->get();
  // The messages the model sees, by where they come from: the summary of
  // the compaction in effect, what it kept (entries before it on the path),
  // and what came after it.
  std::optional<size_t> compaction;
  if (ctx->compaction_path_index) compaction = ctx->path[*ctx->compaction_path_index];
  int64_t summary = 0, kept = 0, fresh = 0;
  TokenCounter counter;
  for (const ContextMessage& m : ctx->messages) {
    int64_t t = ContextMessageTokens(session, m, counter);
    if (compaction && m.entry_index == *compaction)
      summary += t;
    else if (compaction && m.entry_index < *compaction)  // its ancestors: earlier in the file
      kept += t;
    else
      fresh += t;
  }
  std::string model = ctx->model ? ctx->model->model_id : SessionModel(session);
  int64_t w = *window ? **window : settings_.context_window;
  if (w <= 0 && window_of_) w = window_of_(model);
  Json j;
  j["leafId"] = ctx->leaf_id ? Json(*ctx->leaf_id) : Json(nullptr);
  j["model"] = model.empty() ? Json(nullptr) : Json(model);
  j["contextWindow"] = w > 0 ? Json(w) : Json(nullptr);
  j["compactionId"] = compaction ? Json(session.entry(*compaction).id) : Json(nullptr);
  j["summaryTokens"] = summary;
  j["keptTokens"] = kept;
  j["newTokens"] = fresh;
  j["totalTokens"] = summary + kept + fresh;
  Ok(res, Dump(j));
}

}  // namespace compactor::serve
