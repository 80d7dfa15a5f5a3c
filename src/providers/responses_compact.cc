// OpenAI native compaction: POST <base>/responses/compact and the filtering of
// its output into preserveData.openaiRemoteCompaction (as oh-my-pi 15.7.2 does;
// docs/model-input.md). The text summary is still produced locally; this only
// adds the opaque replacement history that a Responses model can replay.
#include <nlohmann/json.hpp>

#include "compactor/estimate.h"
#include "compactor/providers.h"
#include "providers/api_util.h"
#include "providers/json_util.h"
#include "util/json_scan.h"

namespace compactor {

using providers::StringAt;

namespace {

using Json = nlohmann::ordered_json;

// Text wrappers agents inject as user messages; they are context, not history.
// Both spellings of the environment block: oh-my-pi filters the hyphenated
// one, Codex CLI sends `<environment_context>`.
constexpr std::string_view kContextWrappers[] = {
    "<system-reminder>",
    "# AGENTS.md instructions",
    "<environment-context>",
    "<environment_context>",
    "<skill>",
    "<user-shell-command>",
    "<turn-aborted>",
    "<subagent-notification>",
};

bool IsContextWrapper(std::string_view text) {
  size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return false;
  text = text.substr(b);
  for (std::string_view w : kContextWrappers) {
    if (text.starts_with(w)) return true;
  }
  return false;
}

bool KeepUserMessage(const Json& item) {
  auto content = item.find("content");
  if (content == item.end()) return false;
  if (content->is_string()) return !IsContextWrapper(content->get<std::string>());
  if (!content->is_array() || content->empty()) return false;
  for (const Json& part : *content) {
    if (!part.is_object()) return false;
    std::string type = StringAt(part, "type");
    if (type == "input_image") continue;
    if (type == "input_text" && part.contains("text") && part["text"].is_string() &&
        !IsContextWrapper(part["text"].get<std::string>())) {
      continue;
    }
    return false;
  }
  return true;
}

int64_t JsLength(const Json& item) { return Utf16Length(DumpJson(item)); }

}  // namespace

std::string ResponsesCompactUrl(std::string_view base_url) {
  std::string base(base_url.empty() ? std::string_view("https://api.openai.com/v1") : base_url);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + (base.ends_with("/v1") ? "/responses/compact" : "/v1/responses/compact");
}

Result<HttpRequest> BuildResponsesCompactRequest(const ModelConfig& model,
                                                 std::string_view input_items_json,
                                                 std::string_view instructions,
                                                 std::string_view api_key) {
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(input_items_json);
  if (!parsed.ok() || !parsed->is_array()) {
    return Status::InvalidArgument("responses/compact: input items must be a JSON array");
  }
  Json& items = *parsed;
  if (model.context_window > 0) {
    int64_t total = Utf16Length(instructions);
    for (const Json& item : items) total += JsLength(item);
    // Pop from the end while over the window: a call output with its call, or
    // a developer message; anything else ends the trimming.
    while (!items.empty() && (total + 3) / 4 > model.context_window) {
      const Json& last = items.back();
      std::string type = last.is_object() ? StringAt(last, "type") : "";
      if (type == "function_call_output" || type == "custom_tool_call_output") {
        std::string call_id = StringAt(last, "call_id");
        std::string call_type =
            type == "function_call_output" ? "function_call" : "custom_tool_call";
        total -= JsLength(last);
        items.erase(items.end() - 1);
        for (size_t i = items.size(); i-- > 0;) {
          if (items[i].is_object() && StringAt(items[i], "type") == call_type &&
              StringAt(items[i], "call_id") == call_id) {
            total -= JsLength(items[i]);
            items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
            break;
          }
        }
      } else if (type == "message" && StringAt(last, "role") == "developer") {
        total -= JsLength(last);
        items.erase(items.end() - 1);
      } else {
        break;
      }
    }
  }
  HttpRequest http;
  http.url = ResponsesCompactUrl(model.base_url);
  http.timeout_ms = model.timeout_ms;
  http.connect_timeout_ms = model.connect_timeout_ms;
  http.headers.emplace_back("content-type", "application/json");
  for (const auto& [k, v] : model.headers) http.headers.emplace_back(k, v);
  if (!api_key.empty())
    http.headers.emplace_back("authorization", "Bearer " + std::string(api_key));
  Json body = {{"model", model.model_id},
               {"input", std::move(items)},
               {"instructions", std::string(instructions)}};
  http.body = DumpJson(body);
  return http;
}

Result<RemoteCompaction> ParseResponsesCompactResponse(std::string_view body,
                                                       std::string_view provider) {
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(body);
  if (!parsed.ok()) {
    return Status::Unavailable("responses/compact: malformed response (" +
                               parsed.status().message() + ")");
  }
  if (!parsed->is_object()) {
    return Status::Unavailable("responses/compact: malformed response (invalid JSON)");
  }
  const Json& doc = *parsed;
  auto output = doc.find("output");
  if (output == doc.end() || !output->is_array()) {
    return Status::Unavailable("responses/compact: malformed response (no output)");
  }
  Json history = Json::array();
  const Json* compaction = nullptr;
  const Json* compaction_summary = nullptr;
  for (const Json& item : *output) {
    if (!item.is_object()) continue;
    std::string type = StringAt(item, "type");
    if (type == "compaction" || type == "compaction_summary") {
      history.push_back(item);
      if (type == "compaction" && item.contains("encrypted_content") &&
          item["encrypted_content"].is_string()) {
        compaction = &item;
      }
      if (type == "compaction_summary") compaction_summary = &item;
      continue;
    }
    if (type != "message") continue;  // reasoning and tool items are dropped
    std::string role = StringAt(item, "role");
    if (role == "assistant" || (role == "user" && KeepUserMessage(item))) history.push_back(item);
  }
  const Json* chosen = compaction != nullptr ? compaction : compaction_summary;
  if (chosen == nullptr) {
    return Status::FailedPrecondition("Remote compaction response missing compaction item");
  }
  RemoteCompaction out;
  out.provider = std::string(provider);
  out.replacement_history_json = DumpJson(history);
  out.compaction_item_json = DumpJson(*chosen);
  return out;
}

std::optional<std::string> ReplacementHistoryFor(std::string_view stored_json,
                                                 std::string_view provider) {
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(stored_json);
  if (!parsed.ok() || !parsed->is_object()) return std::nullopt;
  Json& doc = *parsed;
  if (!doc.contains("provider") || !doc["provider"].is_string() ||
      doc["provider"].get<std::string>() != provider) {
    return std::nullopt;
  }
  auto h = doc.find("replacementHistory");
  if (h == doc.end() || !h->is_array()) return std::nullopt;
  return DumpJson(*h);
}

}  // namespace compactor
