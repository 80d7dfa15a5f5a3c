// Rebuilt context -> agent request, response -> pi messages, and the OpenAI
// native compaction hook (include/compactor/model_input.h).
#include "compactor/model_input.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "compactor/provider_api.h"
#include "compactor/summarizer.h"
#include "providers/api_util.h"
#include "providers/json_util.h"
#include "util/json_scan.h"

namespace compactor {

using providers::StringAt;

namespace {

using Json = nlohmann::ordered_json;

LlmPart TextPart(std::string text) {
  LlmPart p;
  p.text = std::move(text);
  return p;
}

// Text and image parts of a pi content value (a string or a block array).
// Images need the raw JSON: Message keeps only the length of their data.
std::vector<LlmPart> ContentParts(const Json& content) {
  std::vector<LlmPart> parts;
  if (content.is_string()) {
    parts.push_back(TextPart(content.get<std::string>()));
    return parts;
  }
  if (!content.is_array()) return parts;
  for (const Json& block : content) {
    if (!block.is_object()) continue;
    std::string type = StringAt(block, "type");
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      parts.push_back(TextPart(block["text"].get<std::string>()));
    } else if (type == "image" && block.contains("data") && block["data"].is_string()) {
      LlmPart p;
      p.kind = LlmPart::Kind::kImage;
      p.mime_type = StringAt(block, "mimeType");
      if (p.mime_type.empty()) p.mime_type = "image/png";
      p.data = block["data"].get<std::string>();
      parts.push_back(std::move(p));
    }
  }
  return parts;
}

// One pi message as a request message, before the pairing repair. `raw` is
// the message's JSON (for image data); null when only the Message is known
// (images then become "[image]" markers).
std::optional<LlmMessage> Convert(const Message& m, const Json* raw) {
  LlmMessage out;
  auto parts_of = [&](const Message& msg) {
    if (raw != nullptr && raw->contains("content")) return ContentParts((*raw)["content"]);
    std::vector<LlmPart> parts;
    if (msg.content_is_string) {
      parts.push_back(TextPart(msg.content_string));
      return parts;
    }
    for (const ContentBlock& b : msg.content) {
      if (b.kind == ContentBlock::Kind::kText) parts.push_back(TextPart(b.text));
      if (b.kind == ContentBlock::Kind::kImage) parts.push_back(TextPart("[image]"));
    }
    return parts;
  };
  switch (m.role) {
    case Role::kUser:
    case Role::kCustom:
      out.role = LlmMessage::Role::kUser;
      out.parts = parts_of(m);
      break;
    case Role::kAssistant:
      // pi-ai drops failed turns: their partial content is not part of the dialogue.
      if (m.stop_reason == "error" || m.stop_reason == "aborted") return std::nullopt;
      out.role = LlmMessage::Role::kAssistant;
      for (const ContentBlock& b : m.content) {
        if (b.kind == ContentBlock::Kind::kText && !b.text.empty()) {
          out.parts.push_back(TextPart(b.text));
        } else if (b.kind == ContentBlock::Kind::kToolCall) {
          out.tool_calls.push_back(
              {b.tool_call_id, b.tool_name, b.arguments_json.empty() ? "{}" : b.arguments_json});
        }
      }
      if (out.parts.empty() && out.tool_calls.empty()) return std::nullopt;
      break;
    case Role::kToolResult:
      out.role = LlmMessage::Role::kToolResult;
      out.parts = parts_of(m);
      out.tool_call_id = m.tool_call_id;
      out.tool_name = m.tool_name;
      out.is_error = m.is_error;
      break;
    case Role::kBashExecution:
    case Role::kBranchSummary:
    case Role::kCompactionSummary: {
      // pi's convertToLlm wording (bash text, <summary> wrapping).
      std::vector<Message> converted = ConvertToLlm(std::span<const Message>(&m, 1));
      if (converted.empty()) return std::nullopt;
      out.role = LlmMessage::Role::kUser;
      out.parts.push_back(TextPart(converted[0].JoinedText()));
      break;
    }
    case Role::kOther:
      return std::nullopt;
  }
  if (out.role == LlmMessage::Role::kUser && out.parts.empty()) return std::nullopt;
  return out;
}

LlmMessage MissingResult(const LlmToolCall& call) {
  LlmMessage r;
  r.role = LlmMessage::Role::kToolResult;
  r.tool_call_id = call.id;
  r.tool_name = call.name;
  r.is_error = true;
  r.parts.push_back(TextPart(std::string(kMissingToolResultText)));
  return r;
}

// Every tool call answered before the next user/assistant message (synthetic
// error results otherwise), every result answering a call that is still open.
std::vector<LlmMessage> RepairPairs(std::vector<LlmMessage> in) {
  std::vector<LlmMessage> out;
  out.reserve(in.size());
  std::vector<LlmToolCall> open;
  auto close_open = [&] {
    for (const LlmToolCall& c : open) out.push_back(MissingResult(c));
    open.clear();
  };
  for (LlmMessage& m : in) {
    if (m.role == LlmMessage::Role::kToolResult) {
      auto it = std::find_if(open.begin(), open.end(),
                             [&](const LlmToolCall& c) { return c.id == m.tool_call_id; });
      if (it == open.end()) continue;  // its call is gone (compacted, dropped): the APIs reject it
      open.erase(it);
      out.push_back(std::move(m));
      continue;
    }
    close_open();
    if (m.role == LlmMessage::Role::kAssistant) open = m.tool_calls;
    out.push_back(std::move(m));
  }
  close_open();
  return out;
}

std::vector<LlmMessage> ConvertMessages(const std::vector<Message>& messages) {
  std::vector<LlmMessage> out;
  for (const Message& m : messages) {
    if (auto c = Convert(m, nullptr)) out.push_back(std::move(*c));
  }
  return RepairPairs(std::move(out));
}

// The stored remote compaction of the latest compaction on the path ending at
// `leaf`, as JSON text, or empty.
std::string StoredRemoteCompaction(const Session& session, size_t compaction_index) {
  std::string_view pd = session.FieldJson(compaction_index, "preserveData");
  if (pd.empty()) return "";
  Result<Json> doc = internal::ParseJsonWithinLimit<Json>(pd);
  if (!doc.ok() || !doc->is_object()) return "";
  auto it = doc->find("openaiRemoteCompaction");
  if (it == doc->end() || !it->is_object()) return "";
  return DumpJson(*it);
}

std::optional<size_t> LatestCompactionOnLeafPath(const Session& session) {
  std::optional<size_t> leaf = session.Leaf();
  if (!leaf) return std::nullopt;
  std::vector<size_t> path = session.PathTo(*leaf);
  for (size_t i = path.size(); i-- > 0;) {
    if (session.entry(path[i]).type == EntryType::kCompaction) return path[i];
  }
  return std::nullopt;
}

}  // namespace

std::vector<LlmMessage> ToLlmMessages(std::span<const ContextMessage> messages) {
  std::vector<LlmMessage> out;
  out.reserve(messages.size());
  for (const ContextMessage& cm : messages) {
    std::string_view text = cm.json();
    auto parsed = ParseMessage(text);
    if (!parsed.ok()) continue;  // the context builder only hands out objects
    Json raw;
    const Json* raw_ptr = nullptr;
    // Raw JSON only where image data may be needed.
    if (text.find("\"image\"") != std::string_view::npos) {
      Result<Json> parsed_raw = internal::ParseJsonWithinLimit<Json>(text);
      if (parsed_raw.ok() && parsed_raw->is_object()) {
        raw = std::move(parsed_raw).value();
        raw_ptr = &raw;
      }
    }
    if (auto c = Convert(*parsed, raw_ptr)) out.push_back(std::move(*c));
  }
  return RepairPairs(std::move(out));
}

Result<ModelInput> BuildModelInput(const Session& session, const SessionContext& context,
                                   const ModelConfig& model, const ModelInputOptions& options) {
  ModelInput in;
  in.request.system_prompt = options.system_prompt;
  in.request.tools = options.tools;
  in.request.max_tokens = options.max_tokens;
  in.request.thinking_level = options.thinking_level;
  std::optional<size_t> replaced_entry;
  auto api = ApiOf(model);
  if (!api.ok()) return api.status();
  if ((*api)->native_compaction() && context.compaction_path_index &&
      *context.compaction_path_index < context.path.size()) {
    size_t compaction = context.path[*context.compaction_path_index];
    std::string stored = StoredRemoteCompaction(session, compaction);
    if (!stored.empty()) {
      if (auto history = ReplacementHistoryFor(stored, options.remote_provider)) {
        in.request.responses_history_json = std::move(*history);
        in.replayed_remote_history = true;
        replaced_entry = compaction;
      }
    }
  }
  if (!replaced_entry) {
    in.request.messages = ToLlmMessages(context.messages);
    return in;
  }
  // The history stands for exactly what the text summary stands for: drop the
  // messages of the compaction entry, keep the kept and later messages raw.
  std::vector<ContextMessage> rest;
  rest.reserve(context.messages.size());
  for (const ContextMessage& m : context.messages) {
    if (m.entry_index != *replaced_entry) rest.push_back(m);
  }
  in.request.messages = ToLlmMessages(rest);
  return in;
}

std::string_view PiApiName(const ModelConfig& model) {
  const ProviderApi* api = FindProviderApi(model.api);
  return api != nullptr ? api->pi_api() : std::string_view(model.api);
}

std::string AssistantMessageJson(const ModelConfig& model, std::string_view provider,
                                 const LlmResponse& response, double timestamp_ms) {
  Json content = Json::array();
  if (!response.text.empty()) content.push_back({{"type", "text"}, {"text", response.text}});
  for (const LlmToolCall& c : response.tool_calls) {
    Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(c.arguments_json);
    // Arguments the model broke (or nested past any walk) are kept as text
    // so nothing it said is lost.
    Json args = parsed.ok() && parsed->is_object() ? std::move(parsed).value()
                                                   : Json{{"_raw", c.arguments_json}};
    content.push_back(
        {{"type", "toolCall"}, {"id", c.id}, {"name", c.name}, {"arguments", std::move(args)}});
  }
  const LlmUsage& u = response.usage;
  Json usage = {
      {"input", u.input},
      {"output", u.output},
      {"cacheRead", u.cache_read},
      {"cacheWrite", u.cache_write},
      {"totalTokens", u.input + u.output + u.cache_read + u.cache_write},
      {"cost", {{"input", 0}, {"output", 0}, {"cacheRead", 0}, {"cacheWrite", 0}, {"total", 0}}}};
  Json msg = {{"role", "assistant"},
              {"content", std::move(content)},
              {"api", PiApiName(model)},
              {"provider", provider},
              {"model", model.model_id},
              {"usage", std::move(usage)},
              {"stopReason", response.stop_reason.empty() ? "stop" : response.stop_reason}};
  if (!response.error_message.empty()) msg["errorMessage"] = response.error_message;
  msg["timestamp"] = static_cast<int64_t>(timestamp_ms);
  return DumpJson(msg);
}

std::string UserMessageJson(std::string_view text, double timestamp_ms) {
  Json msg = {{"role", "user"},
              {"content", Json::array({{{"type", "text"}, {"text", text}}})},
              {"timestamp", static_cast<int64_t>(timestamp_ms)}};
  return DumpJson(msg);
}

std::string ToolResultMessageJson(std::string_view tool_call_id, std::string_view tool_name,
                                  std::string_view text, bool is_error, double timestamp_ms) {
  Json msg = {
      {"role", "toolResult"},  {"toolCallId", tool_call_id},
      {"toolName", tool_name}, {"content", Json::array({{{"type", "text"}, {"text", text}}})},
      {"isError", is_error},   {"timestamp", static_cast<int64_t>(timestamp_ms)}};
  return DumpJson(msg);
}

CompactionHooks::Compacting RemoteCompactionHook(RemoteCompactionOptions options) {
  return [o = std::move(options)](const CompactingEvent& e) -> CompactingResult {
    CompactingResult none;
    auto fail = [&](const Status& s) {
      if (o.on_error) o.on_error(s);
      return none;
    };
    const ProviderApi* api = FindProviderApi(o.model.api);
    if (api == nullptr || !api->native_compaction()) {
      return fail(Status::InvalidArgument(
          "remote compaction needs an openai-responses model, not " + o.model.api));
    }
    // A previous native compaction for this provider replaces its text summary.
    Json items = Json::array();
    bool have_history = false;
    if (auto prev = LatestCompactionOnLeafPath(e.session)) {
      std::string stored = StoredRemoteCompaction(e.session, *prev);
      if (auto h = stored.empty() ? std::nullopt : ReplacementHistoryFor(stored, o.provider)) {
        Result<Json> history = internal::ParseJsonWithinLimit<Json>(*h);
        have_history = history.ok() && history->is_array();
        if (have_history) items = std::move(history).value();
      }
    }
    std::vector<Message> messages;
    for (const Message& m : e.messages) {
      if (have_history && m.role == Role::kCompactionSummary) continue;
      messages.push_back(m);
    }
    Json converted = Json::parse(ResponsesInputItems(ConvertMessages(messages)), nullptr, false);
    for (Json& item : converted) items.push_back(std::move(item));

    Result<std::string> key_or = ReadApiKey(o.model, o.call);
    if (!key_or.ok()) {
      return fail(Status::FailedPrecondition("remote compaction: " + key_or.status().message()));
    }
    const std::string key = std::move(key_or).value();
    std::string instructions =
        o.instructions.empty() ? std::string(SummarizationSystemPrompt()) : o.instructions;
    auto http = BuildResponsesCompactRequest(o.model, DumpJson(items), instructions, key);
    if (!http.ok()) return fail(http.status());
    http->cancel_flag = o.call.cancel_flag;
    http->is_cancelled = o.call.is_cancelled;
    std::shared_ptr<HttpTransport> transport =
        o.call.transport ? o.call.transport : NewCurlTransport();
    auto response = transport->Send(*http);
    if (!response.ok()) return fail(response.status());
    if (response->status < 200 || response->status >= 300) {
      return fail(Status::Unavailable("remote compaction: " +
                                      DescribeHttpFailure(response->status, response->body, key)));
    }
    auto parsed = ParseResponsesCompactResponse(response->body, o.provider);
    if (!parsed.ok()) return fail(parsed.status());
    Json stored = {{"provider", parsed->provider},
                   {"replacementHistory", Json::parse(parsed->replacement_history_json)},
                   {"compactionItem", Json::parse(parsed->compaction_item_json)}};
    CompactingResult r;
    r.preserve_data_json = DumpJson(Json{{"openaiRemoteCompaction", std::move(stored)}});
    return r;
  };
}

}  // namespace compactor
