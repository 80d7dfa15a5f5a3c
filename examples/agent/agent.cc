// compactor-agent: a small but real coding agent built on Compactor's runtime.
//
// It talks to any OpenAI-compatible Chat Completions endpoint (vLLM,
// llama.cpp server, Ollama, LM Studio, OpenAI), or to the Responses and
// Anthropic APIs, gives the model read/write/bash tools, and persists the
// conversation in a pi session file through compactor::Runtime, so automatic
// compaction (threshold, overflow recovery, output-cap recovery) happens as it
// would in a production agent. With --strategy notes it also offers a
// write_notes tool whose file becomes the summary. See examples/agent/README.md.
//
// Exit codes: 0 done, 1 the model or a file failed, 2 usage error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/env.h"
#include "compactor/llm_summarizer.h"
#include "compactor/model_input.h"
#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "compactor/runtime.h"
#include "compactor/session.h"
#include "compactor/settings.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "tools.h"

namespace {

using compactor::Result;
using compactor::Status;

struct Args {
  std::string session;
  std::string base_url = "http://127.0.0.1:8080/v1";
  std::string model;
  std::string api = "openai-chat";
  std::string provider_name;
  std::string api_key_env;
  int64_t window = 32768;
  int64_t max_output = 4096;
  std::string strategy;
  std::string notes;
  std::string settings;
  std::string summarizer = "offline";
  bool remote_compaction = false;
  std::string workdir = ".";
  int max_steps = 50;
  std::string system_prompt =
      "You are a careful coding agent working in a local directory. Use the tools to read, "
      "write and run things; keep answers short; say when the task is done.";
  bool stream = false;
  bool json = false;
  int64_t bash_timeout_ms = 30000;
  std::vector<std::string> prompt;
};

double NowMs() { return static_cast<double>(compactor::Env::Default()->NowMs()); }

bool Exists(const std::string& path) { return compactor::Env::Default()->Stat(path).ok(); }

// Progress and events go to stderr (or as JSON lines to stdout with --json),
// the model's answers to stdout.
class Output {
 public:
  explicit Output(bool json) : json_(json) {}
  void Event(const nlohmann::ordered_json& j, const std::string& text) const {
    if (json_) {
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n"
                << std::flush;
    } else {
      std::cerr << text << "\n";
    }
  }
  void Answer(const std::string& text) const {
    if (json_) {
      Event({{"type", "answer"}, {"text", text}}, "");
    } else {
      std::cout << text << "\n" << std::flush;
    }
  }

 private:
  bool json_;
};

void ReportEvent(const Output& out, const compactor::RuntimeEvent& e) {
  using Kind = compactor::RuntimeEvent::Kind;
  nlohmann::ordered_json j;
  std::string text;
  std::string reason(compactor::CompactionReasonName(e.reason));
  if (e.kind == Kind::kWarning) {
    j = {{"type", "warning"}, {"message", e.error}};
    text = "[compactor] warning: " + e.error;
  } else if (e.kind == Kind::kCompactionStart) {
    j = {{"type", "compaction_start"},
         {"reason", reason},
         {"action", e.action},
         {"strategy", e.strategy},
         {"tokensBefore", e.tokens_before}};
    text = "[compactor] " + reason + " " + e.action + " (" + e.strategy + ") at " +
           std::to_string(static_cast<int64_t>(e.tokens_before)) + " tokens...";
  } else {
    j = {{"type", "compaction_end"},
         {"reason", reason},
         {"action", e.action},
         {"strategy", e.strategy},
         {"tokensBefore", e.tokens_before},
         {"tokensAfter", e.tokens_after},
         {"willRetry", e.will_retry},
         {"skipped", e.skipped},
         {"skippedReason", e.skipped_reason},
         {"error", e.error},
         {"entryId", e.entry_id}};
    if (!e.error.empty()) {
      text = "[compactor] " + reason + " compaction failed: " + e.error;
    } else if (e.skipped) {
      text = "[compactor] " + reason + " compaction skipped: " + e.skipped_reason;
    } else {
      text = "[compactor] " + reason + " " + e.action + ": " +
             std::to_string(static_cast<int64_t>(e.tokens_before)) + " -> " +
             std::to_string(static_cast<int64_t>(e.tokens_after)) + " tokens" +
             (e.will_retry ? ", retrying the request" : "");
    }
  }
  out.Event(j, text);
}

// A session file with just a header, unless it exists.
Status EnsureSession(const std::string& path, const std::string& cwd) {
  if (Exists(path)) return Status::Ok();
  compactor::SessionHeaderFields h;
  h.id = compactor::NewUuidV7();
  h.timestamp = compactor::NowIsoTimestamp();
  h.cwd = cwd;
  return compactor::WriteFileAtomic(path, compactor::MakeSessionHeader(h) + "\n",
                                    {.keep_backup = false});
}

class Agent {
 public:
  Agent(const Args& a, compactor::ModelConfig model, std::unique_ptr<compactor::Runtime> rt,
        agent::Tools tools, Output out)
      : a_(a), model_(std::move(model)), rt_(std::move(rt)), tools_(std::move(tools)), out_(out) {}

  // One user prompt, run until the model answers without tools. 0 or 1.
  int Prompt(const std::string& text) {
    auto appended = rt_->AppendMessage(compactor::UserMessageJson(text, NowMs()));
    if (!appended.ok()) return Fail(appended.status().ToString());
    for (int step = 0; step < a_.max_steps; ++step) {
      if (Status s = rt_->BeginTurn(); !s.ok()) return Fail(s.ToString());
      auto request = BuildRequest();
      if (!request.ok()) return Fail(request.status().ToString());
      compactor::CallOutcome call = compactor::CallModel(model_, *request, call_);
      compactor::TurnOutcome turn;
      std::optional<compactor::LlmResponse> response;
      if (call.result.ok()) {
        response = *call.result;
        turn.assistant_json =
            compactor::AssistantMessageJson(model_, a_.provider_name, *response, NowMs());
      } else {
        // Handed to the runtime as pi records a failed request: an error
        // assistant message. The runtime decides (overflow -> compact + retry).
        compactor::LlmResponse failed;
        failed.stop_reason = "error";
        failed.error_message = call.result.status().message();
        turn.assistant_json =
            compactor::AssistantMessageJson(model_, a_.provider_name, failed, NowMs());
        turn.http_status = call.failure.http_status;
      }
      auto action = rt_->AfterTurn(turn);
      if (!action.ok()) return Fail(action.status().ToString());
      using Kind = compactor::RuntimeAction::Kind;
      if (action->kind == Kind::kGiveUp) return Fail(action->error);
      if (action->kind == Kind::kRetryTurn) continue;
      if (action->kind == Kind::kSwitchModel) {
        model_.model_id = action->model.id;
        model_.context_window = action->model.context_window;
        if (action->retry) continue;
      }
      if (!response) return Fail(call.result.status().ToString());
      if (!response->tool_calls.empty()) {
        for (const compactor::LlmToolCall& c : response->tool_calls) {
          agent::ToolOutput r = tools_.Run(c);
          out_.Event({{"type", "tool"}, {"name", c.name}, {"isError", r.is_error}},
                     "[tool] " + c.name + (r.is_error ? " (error)" : ""));
          auto id = rt_->AppendMessage(
              compactor::ToolResultMessageJson(c.id, c.name, r.text, r.is_error, NowMs()));
          if (!id.ok()) return Fail(id.status().ToString());
        }
        continue;
      }
      if (!response->text.empty()) out_.Answer(response->text);
      if (action->kind == Kind::kContinue) continue;
      return 0;
    }
    return Fail("stopped after " + std::to_string(a_.max_steps) + " model requests (--max-steps)");
  }

  compactor::CallOptions& call_options() { return call_; }

 private:
  Result<compactor::LlmRequest> BuildRequest() {
    // The runtime owns the file and keeps its context up to date entry by
    // entry (Runtime::CurrentContext), so a turn costs no re-read of the file
    // and compactions (and their replayable native history) take effect at
    // once. The snapshot is dropped before the next write, which lets the
    // runtime extend its session in place.
    auto now = rt_->CurrentContext();
    if (!now.ok()) return now.status();
    compactor::ModelInputOptions mo;
    mo.system_prompt = a_.system_prompt;
    mo.tools = tools_.Definitions();
    mo.max_tokens = a_.max_output;
    auto in = compactor::BuildModelInput(*now->session, *now->context, model_, mo);
    if (!in.ok()) return in.status();
    return std::move(in->request);
  }

  int Fail(const std::string& message) {
    out_.Event({{"type", "error"}, {"message", message}}, "compactor-agent: " + message);
    return 1;
  }

  const Args& a_;
  compactor::ModelConfig model_;
  std::unique_ptr<compactor::Runtime> rt_;
  agent::Tools tools_;
  Output out_;
  compactor::CallOptions call_;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "compactor-agent: a coding agent (read/write/bash tools) on an OpenAI-compatible endpoint, "
      "persisted to a pi session with automatic compaction by Compactor's runtime"};
  app.add_option("--session", a.session, "pi session file (created if missing)")->required();
  app.add_option("--base-url", a.base_url, "API root, e.g. http://127.0.0.1:8080/v1")
      ->capture_default_str();
  app.add_option("--model", a.model, "model id sent to the endpoint")->required();
  app.add_option("--api", a.api, "openai-chat, openai-responses or anthropic")
      ->capture_default_str();
  app.add_option("--provider", a.provider_name,
                 "provider name recorded in the session (default: openai or anthropic)");
  app.add_option("--api-key-env", a.api_key_env, "NAME of the variable holding the API key");
  app.add_option("--window", a.window, "the model's context window in tokens")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-output", a.max_output, "output cap per request")->capture_default_str();
  app.add_option("--strategy", a.strategy,
                 compactor::StrategyNames() + " (default: the settings')");
  app.add_option("--notes", a.notes, "notes file for --strategy notes (default SESSION.notes.md)");
  app.add_option("--settings", a.settings, "compaction settings JSON (re-read at every check)");
  app.add_option("--summarizer", a.summarizer,
                 "offline (embedded, no network) or agent (the same model writes summaries)")
      ->capture_default_str();
  app.add_flag("--remote-compaction", a.remote_compaction,
               "openai-responses: also store OpenAI's native compaction (/responses/compact)");
  app.add_option("--workdir", a.workdir, "directory the tools work in")->capture_default_str();
  app.add_option("--max-steps", a.max_steps, "model requests per prompt at most")
      ->capture_default_str();
  app.add_option("--system", a.system_prompt, "system prompt");
  app.add_option("--bash-timeout-ms", a.bash_timeout_ms, "bash tool timeout")
      ->capture_default_str();
  app.add_flag("--stream", a.stream, "ask for streamed responses");
  app.add_flag("--json", a.json, "events and answers as JSON lines on stdout");
  app.add_option("prompt", a.prompt, "the task; without it, one prompt per line from stdin");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  Output out(a.json);
  auto usage = [&](const std::string& m) {
    std::cerr << "compactor-agent: " << m << "\n";
    return 2;
  };

  const compactor::ProviderApi* api = compactor::FindProviderApi(a.api);
  if (api == nullptr || !api->agent_requests()) {
    return usage("--api must be openai-chat, openai-responses or anthropic");
  }
  compactor::ModelConfig model;
  model.name = "agent";
  model.api = a.api;
  model.base_url = a.base_url;
  while (!model.base_url.empty() && model.base_url.back() == '/') model.base_url.pop_back();
  model.model_id = a.model;
  model.context_window = a.window;
  model.max_output_tokens = a.max_output;
  model.api_key_env = a.api_key_env;
  model.stream = a.stream;
  if (a.provider_name.empty()) {
    a.provider_name = api->default_provider();
  }
  if (a.remote_compaction && !api->native_compaction()) {
    return usage("--remote-compaction needs --api openai-responses");
  }

  std::error_code ec;
  std::string cwd = std::filesystem::absolute(a.workdir, ec).string();
  if (Status s = EnsureSession(a.session, cwd); !s.ok()) {
    std::cerr << "compactor-agent: " << s.ToString() << "\n";
    return 1;
  }

  compactor::RuntimeOptions ro;
  ro.session_path = a.session;
  ro.model = {a.provider_name, a.model, a.window};
  ro.settings.reserve_tokens = std::min<int64_t>(ro.settings.reserve_tokens, a.window / 4);
  ro.settings.keep_recent_tokens = std::min<int64_t>(ro.settings.keep_recent_tokens, a.window / 4);
  std::unique_ptr<compactor::SettingsSource> settings_source;
  if (!a.settings.empty()) {
    settings_source = std::make_unique<compactor::SettingsSource>(a.settings, ro.settings);
    auto s = settings_source->Get();
    if (!s.ok()) {
      std::cerr << "compactor-agent: " << s.status().ToString() << "\n";
      return 2;
    }
    ro.settings = *s;
    ro.settings_source = settings_source.get();
  }
  if (!a.strategy.empty()) {
    if (!compactor::ParseStrategy(a.strategy).ok())
      return usage("unknown --strategy " + a.strategy);
    if (settings_source)
      return usage("give the strategy in the settings file or --strategy, not both");
    ro.settings.strategy = a.strategy;
  }
  std::string notes;
  const compactor::CompactionStrategy* strategy = compactor::FindStrategy(ro.settings.strategy);
  if (strategy && strategy->needs().notes_file) {
    notes = a.notes.empty() ? a.session + ".notes.md" : a.notes;
    if (!Exists(notes)) {
      if (Status s = compactor::WriteFileAtomic(notes, "", {.keep_backup = false}); !s.ok()) {
        std::cerr << "compactor-agent: " << s.ToString() << "\n";
        return 1;
      }
    }
    ro.notes_path = notes;
  }
  std::unique_ptr<compactor::Summarizer> summarizer;
  if (a.summarizer == "agent") {
    compactor::LlmSummarizerOptions so;
    so.candidates = {model};
    so.reserve_tokens = ro.settings.reserve_tokens;
    summarizer = compactor::NewLlmSummarizer(std::move(so));
    ro.summarizer = summarizer.get();
  } else if (a.summarizer != "offline") {
    return usage("--summarizer must be offline or agent");
  }
  compactor::CompactionHooks hooks;
  if (a.remote_compaction) {
    compactor::RemoteCompactionOptions rc;
    rc.model = model;
    rc.provider = a.provider_name;
    rc.on_error = [&out](const Status& s) {
      out.Event({{"type", "warning"}, {"message", s.ToString()}},
                "[compactor] native compaction failed (local summary kept): " + s.ToString());
    };
    hooks.OnCompacting(compactor::RemoteCompactionHook(std::move(rc)));
    ro.hooks = &hooks;
  }
  ro.on_event = [&out](const compactor::RuntimeEvent& e) { ReportEvent(out, e); };
  auto rt = compactor::Runtime::Open(std::move(ro));
  if (!rt.ok()) {
    std::cerr << "compactor-agent: " << rt.status().ToString() << "\n";
    return 1;
  }
  agent::ToolsOptions to;
  to.workdir = a.workdir;
  to.notes_path = notes;
  to.bash_timeout_ms = a.bash_timeout_ms;
  Agent agent(a, model, std::move(rt).value(), agent::Tools(to), out);

  if (!a.prompt.empty()) {
    std::string text;
    for (const std::string& p : a.prompt) text += (text.empty() ? "" : " ") + p;
    return agent.Prompt(text);
  }
  int rc = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    rc = agent.Prompt(line);
    if (rc != 0) break;
  }
  return rc;
}
