// Request builders and response parsers for the four provider APIs
// (docs/providers.md has the shapes side by side).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "compactor/providers.h"
#include "providers/json_util.h"
#include "providers/stream.h"

namespace compactor {
namespace {

using Json = nlohmann::ordered_json;

// Thinking budgets for anthropic by level (pi's defaults, xhigh added).
int64_t AnthropicBudget(std::string_view level) {
  if (level == "minimal") return 1024;
  if (level == "low") return 2048;
  if (level == "medium") return 8192;
  if (level == "high") return 16384;
  if (level == "xhigh") return 32768;
  return 0;
}

int64_t ResolveMaxTokens(const ModelConfig& model, const LlmRequest& req, bool required) {
  int64_t mt = req.max_tokens > 0 ? req.max_tokens : model.max_output_tokens;
  if (mt > 0 && model.max_output_tokens > 0) mt = std::min(mt, model.max_output_tokens);
  if (mt <= 0 && required) mt = 4096;
  return mt;
}

std::string DataUrl(const LlmPart& p) { return "data:" + p.mime_type + ";base64," + p.data; }

bool AllText(const std::vector<LlmPart>& parts) {
  return std::all_of(parts.begin(), parts.end(),
                     [](const LlmPart& p) { return p.kind == LlmPart::Kind::kText; });
}

std::string JoinedText(const std::vector<LlmPart>& parts) {
  std::string out;
  bool first = true;
  for (const LlmPart& p : parts) {
    if (!first) out += "\n";
    first = false;
    out += p.kind == LlmPart::Kind::kText ? p.text : std::string("[image]");
  }
  return out;
}

Json ParseArguments(const std::string& text) {
  Json args = Json::parse(text, nullptr, false);
  if (args.is_discarded() || !args.is_object()) return Json::object();
  return args;
}

Json ToolSchema(const LlmTool& tool) {
  Json schema = Json::parse(tool.parameters_json, nullptr, false);
  if (schema.is_discarded() || !schema.is_object()) {
    schema = {{"type", "object"}, {"properties", Json::object()}};
  }
  return schema;
}

void AddHeaders(const ModelConfig& model, HttpRequest& http) {
  http.headers.emplace_back("content-type", "application/json");
  for (const auto& [k, v] : model.headers) http.headers.emplace_back(k, v);
}

// --- openai-chat -----------------------------------------------------------

Json ChatMessages(const LlmRequest& req) {
  Json out = Json::array();
  if (!req.system_prompt.empty()) {
    out.push_back({{"role", "system"}, {"content", req.system_prompt}});
  }
  for (const LlmMessage& m : req.messages) {
    switch (m.role) {
      case LlmMessage::Role::kUser: {
        Json msg = {{"role", "user"}};
        if (AllText(m.parts) && m.parts.size() == 1) {
          msg["content"] = m.parts[0].text;
        } else {
          Json parts = Json::array();
          for (const LlmPart& p : m.parts) {
            if (p.kind == LlmPart::Kind::kText) {
              parts.push_back({{"type", "text"}, {"text", p.text}});
            } else {
              parts.push_back({{"type", "image_url"}, {"image_url", {{"url", DataUrl(p)}}}});
            }
          }
          msg["content"] = std::move(parts);
        }
        out.push_back(std::move(msg));
        break;
      }
      case LlmMessage::Role::kAssistant: {
        Json msg = {{"role", "assistant"}};
        std::string text = JoinedText(m.parts);
        msg["content"] = m.parts.empty() ? Json(nullptr) : Json(text);
        if (!m.tool_calls.empty()) {
          Json calls = Json::array();
          for (const LlmToolCall& c : m.tool_calls) {
            calls.push_back({{"id", c.id},
                             {"type", "function"},
                             {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
          }
          msg["tool_calls"] = std::move(calls);
        }
        out.push_back(std::move(msg));
        break;
      }
      case LlmMessage::Role::kToolResult:
        out.push_back(
            {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", JoinedText(m.parts)}});
        break;
    }
  }
  return out;
}

std::string ChatMaxTokensField(const ModelConfig& model) {
  if (!model.max_tokens_field.empty()) return model.max_tokens_field;
  return model.base_url.find("api.openai.com") != std::string::npos ? "max_completion_tokens"
                                                                    : "max_tokens";
}

Json ChatBody(const ModelConfig& model, const LlmRequest& req) {
  Json body = {{"model", model.model_id}, {"messages", ChatMessages(req)}};
  if (!req.tools.empty()) {
    Json tools = Json::array();
    for (const LlmTool& t : req.tools) {
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", t.name}, {"description", t.description}, {"parameters", ToolSchema(t)}}}});
    }
    body["tools"] = std::move(tools);
  }
  int64_t mt = ResolveMaxTokens(model, req, false);
  if (mt > 0) body[ChatMaxTokensField(model)] = mt;
  std::string effort = EffectiveReasoning(model, req.thinking_level);
  if (!effort.empty()) body["reasoning_effort"] = effort == "xhigh" ? "high" : effort;
  body["stream"] = model.stream;
  if (model.stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

// --- openai-responses ------------------------------------------------------

Json ResponsesInput(std::span<const LlmMessage> messages) {
  Json out = Json::array();
  for (const LlmMessage& m : messages) {
    switch (m.role) {
      case LlmMessage::Role::kUser: {
        Json content = Json::array();
        for (const LlmPart& p : m.parts) {
          if (p.kind == LlmPart::Kind::kText) {
            content.push_back({{"type", "input_text"}, {"text", p.text}});
          } else {
            content.push_back(
                {{"type", "input_image"}, {"detail", "auto"}, {"image_url", DataUrl(p)}});
          }
        }
        out.push_back({{"type", "message"}, {"role", "user"}, {"content", std::move(content)}});
        break;
      }
      case LlmMessage::Role::kAssistant:
        if (!m.parts.empty()) {
          out.push_back({{"type", "message"},
                         {"role", "assistant"},
                         {"content", Json::array({{{"type", "output_text"},
                                                   {"text", JoinedText(m.parts)},
                                                   {"annotations", Json::array()}}})},
                         {"status", "completed"}});
        }
        for (const LlmToolCall& c : m.tool_calls) {
          out.push_back({{"type", "function_call"},
                         {"call_id", c.id},
                         {"name", c.name},
                         {"arguments", c.arguments_json}});
        }
        break;
      case LlmMessage::Role::kToolResult:
        out.push_back({{"type", "function_call_output"},
                       {"call_id", m.tool_call_id},
                       {"output", JoinedText(m.parts)}});
        break;
    }
  }
  return out;
}

Json ResponsesBody(const ModelConfig& model, const LlmRequest& req) {
  Json body = {{"model", model.model_id}};
  if (!req.system_prompt.empty()) body["instructions"] = req.system_prompt;
  Json input = Json::array();
  if (!req.responses_history_json.empty()) {
    Json history = Json::parse(req.responses_history_json, nullptr, false);
    if (history.is_array()) input = std::move(history);
  }
  for (Json& item : ResponsesInput(req.messages)) input.push_back(std::move(item));
  body["input"] = std::move(input);
  if (!req.tools.empty()) {
    Json tools = Json::array();
    for (const LlmTool& t : req.tools) {
      tools.push_back({{"type", "function"},
                       {"name", t.name},
                       {"description", t.description},
                       {"parameters", ToolSchema(t)}});
    }
    body["tools"] = std::move(tools);
  }
  int64_t mt = ResolveMaxTokens(model, req, false);
  if (mt > 0) body["max_output_tokens"] = mt;
  std::string effort = EffectiveReasoning(model, req.thinking_level);
  if (!effort.empty()) body["reasoning"] = {{"effort", effort == "xhigh" ? "high" : effort}};
  body["store"] = false;
  body["stream"] = model.stream;
  return body;
}

// --- anthropic -------------------------------------------------------------

Json AnthropicBlocks(const std::vector<LlmPart>& parts) {
  Json blocks = Json::array();
  for (const LlmPart& p : parts) {
    if (p.kind == LlmPart::Kind::kText) {
      blocks.push_back({{"type", "text"}, {"text", p.text}});
    } else {
      blocks.push_back(
          {{"type", "image"},
           {"source", {{"type", "base64"}, {"media_type", p.mime_type}, {"data", p.data}}}});
    }
  }
  return blocks;
}

// Consecutive user messages merge text-with-text and tool-result-with-tool-
// result, never across the two kinds (a tool_result block must open its
// message, and mixing kinds changes what the model sees as the turn).
Json AnthropicMessages(const LlmRequest& req) {
  enum class Kind { kUser, kAssistant, kTool };
  Json out = Json::array();
  Kind last = Kind::kAssistant;
  bool have_last = false;
  for (const LlmMessage& m : req.messages) {
    Kind kind = m.role == LlmMessage::Role::kUser        ? Kind::kUser
                : m.role == LlmMessage::Role::kAssistant ? Kind::kAssistant
                                                         : Kind::kTool;
    Json blocks;
    if (kind == Kind::kUser) {
      blocks = AnthropicBlocks(m.parts);
    } else if (kind == Kind::kAssistant) {
      blocks = Json::array();
      for (const LlmPart& p : m.parts) {
        if (p.kind == LlmPart::Kind::kText && !p.text.empty()) {
          blocks.push_back({{"type", "text"}, {"text", p.text}});
        }
      }
      for (const LlmToolCall& c : m.tool_calls) {
        blocks.push_back({{"type", "tool_use"},
                          {"id", c.id},
                          {"name", c.name},
                          {"input", ParseArguments(c.arguments_json)}});
      }
    } else {
      Json result = {{"type", "tool_result"},
                     {"tool_use_id", m.tool_call_id},
                     {"content", AnthropicBlocks(m.parts)}};
      if (m.is_error) result["is_error"] = true;
      blocks = Json::array({std::move(result)});
    }
    if (blocks.empty()) continue;
    if (have_last && kind == last && kind != Kind::kAssistant) {
      for (auto& b : blocks) out.back()["content"].push_back(std::move(b));
      continue;
    }
    out.push_back({{"role", kind == Kind::kAssistant ? "assistant" : "user"},
                   {"content", std::move(blocks)}});
    last = kind;
    have_last = true;
  }
  return out;
}

Json AnthropicBody(const ModelConfig& model, const LlmRequest& req) {
  int64_t mt = ResolveMaxTokens(model, req, true);
  int64_t budget = AnthropicBudget(EffectiveReasoning(model, req.thinking_level));
  if (budget > 0) {
    // The thinking budget is part of max_tokens: grow the cap by it (within
    // the model's limit) so the summary keeps its own room.
    int64_t total = mt + budget;
    if (model.max_output_tokens > 0) total = std::min(total, model.max_output_tokens);
    if (budget >= total) budget = total - 1024;
    if (budget >= 1024)
      mt = total;
    else
      budget = 0;
  }
  Json body = {{"model", model.model_id}, {"max_tokens", mt}};
  if (!req.system_prompt.empty()) body["system"] = req.system_prompt;
  body["messages"] = AnthropicMessages(req);
  if (!req.tools.empty()) {
    Json tools = Json::array();
    for (const LlmTool& t : req.tools) {
      tools.push_back(
          {{"name", t.name}, {"description", t.description}, {"input_schema", ToolSchema(t)}});
    }
    body["tools"] = std::move(tools);
  }
  if (budget > 0) body["thinking"] = {{"type", "enabled"}, {"budget_tokens", budget}};
  if (model.stream) body["stream"] = true;
  return body;
}

// --- remote ----------------------------------------------------------------

Json RemoteBody(const LlmRequest& req) {
  std::string prompt;
  for (const LlmMessage& m : req.messages) {
    if (m.role != LlmMessage::Role::kUser) continue;
    if (!prompt.empty()) prompt += "\n\n";
    prompt += JoinedText(m.parts);
  }
  return {{"systemPrompt", req.system_prompt}, {"prompt", prompt}};
}

// --- parsing ---------------------------------------------------------------

int64_t IntAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  return it->get<int64_t>();
}

Status Malformed(const ModelConfig& model, std::string_view what) {
  return Status::Unavailable(std::string(ProviderKindName(model.provider)) +
                             ": malformed response (" + std::string(what) + ")");
}

// The "arguments" of an OpenAI function call: a JSON string as sent, or an
// object some compatible servers send instead.
std::string ArgumentsText(const Json& holder) {
  auto a = holder.find("arguments");
  if (a == holder.end() || a->is_null()) return "{}";
  return a->is_string() ? a->get<std::string>() : DumpJson(*a);
}

std::string ErrorText(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object()) {
    auto it = error.find("message");
    if (it != error.end() && it->is_string()) return it->get<std::string>();
  }
  return DumpJson(error);
}

Result<LlmResponse> ParseChat(const ModelConfig& model, const Json& doc) {
  LlmResponse r;
  if (auto e = doc.find("error"); e != doc.end() && !e->is_null()) {
    r.stop_reason = "error";
    r.error_message = ErrorText(*e);
    return r;
  }
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array() || choices->empty()) {
    return Malformed(model, "no choices");
  }
  const Json& choice = (*choices)[0];
  const Json* message = nullptr;
  if (auto it = choice.find("message"); it != choice.end() && it->is_object()) message = &*it;
  if (message == nullptr) return Malformed(model, "no message");
  if (auto c = message->find("content"); c != message->end()) {
    if (c->is_string()) {
      r.text = c->get<std::string>();
    } else if (c->is_array()) {
      for (const Json& part : *c) {
        if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
            part["text"].is_string()) {
          if (!r.text.empty()) r.text += "\n";
          r.text += part["text"].get<std::string>();
        }
      }
    }
  }
  if (auto calls = message->find("tool_calls"); calls != message->end() && calls->is_array()) {
    for (const Json& c : *calls) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
      const Json& f = c["function"];
      LlmToolCall call;
      call.id = c.value("id", "");
      call.name = f.value("name", "");
      call.arguments_json = ArgumentsText(f);
      r.tool_calls.push_back(std::move(call));
    }
  }
  std::string finish = choice.contains("finish_reason") && choice["finish_reason"].is_string()
                           ? choice["finish_reason"].get<std::string>()
                           : "stop";
  if (finish == "length") {
    r.stop_reason = "length";
  } else if (finish == "tool_calls" || finish == "function_call") {
    r.stop_reason = "toolUse";
  } else if (finish == "stop" || finish == "eos" || finish.empty()) {
    r.stop_reason = "stop";
  } else {
    r.stop_reason = "error";
    r.error_message = "Provider finish_reason: " + finish;
  }
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    int64_t cached = 0;
    if (auto d = u->find("prompt_tokens_details"); d != u->end())
      cached = IntAt(*d, "cached_tokens");
    r.usage.input = IntAt(*u, "prompt_tokens") - cached;
    r.usage.cache_read = cached;
    r.usage.output = IntAt(*u, "completion_tokens");
  }
  return r;
}

Result<LlmResponse> ParseResponses(const ModelConfig& model, const Json& doc) {
  LlmResponse r;
  if (auto e = doc.find("error"); e != doc.end() && !e->is_null()) {
    r.stop_reason = "error";
    r.error_message = ErrorText(*e);
    return r;
  }
  auto output = doc.find("output");
  if (output == doc.end() || !output->is_array()) return Malformed(model, "no output");
  bool tool_use = false;
  for (const Json& item : *output) {
    if (!item.is_object()) continue;
    std::string type = item.value("type", "");
    if (type == "function_call" || type == "custom_tool_call") {
      tool_use = true;
      LlmToolCall call;
      call.id = item.value("call_id", "");
      call.name = item.value("name", "");
      call.arguments_json = type == "function_call"
                                ? ArgumentsText(item)
                                : DumpJson(Json{{"input", item.value("input", "")}});
      r.tool_calls.push_back(std::move(call));
    }
    if (type != "message") continue;
    auto content = item.find("content");
    if (content == item.end() || !content->is_array()) continue;
    for (const Json& part : *content) {
      if (part.is_object() && part.value("type", "") == "output_text" && part.contains("text") &&
          part["text"].is_string()) {
        if (!r.text.empty()) r.text += "\n";
        r.text += part["text"].get<std::string>();
      }
    }
  }
  std::string status = doc.value("status", "completed");
  r.stop_reason = tool_use ? "toolUse" : "stop";
  if (status == "incomplete") {
    std::string reason;
    if (auto d = doc.find("incomplete_details"); d != doc.end() && d->is_object()) {
      reason = d->value("reason", "");
    }
    if (reason == "max_output_tokens") {
      r.stop_reason = "length";
    } else {
      r.stop_reason = "error";
      r.error_message = "Response incomplete: " + (reason.empty() ? "unknown" : reason);
    }
  } else if (status == "failed" || status == "cancelled") {
    r.stop_reason = "error";
    r.error_message = "Response " + status;
  }
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    int64_t cached = 0;
    if (auto d = u->find("input_tokens_details"); d != u->end())
      cached = IntAt(*d, "cached_tokens");
    r.usage.input = IntAt(*u, "input_tokens") - cached;
    r.usage.cache_read = cached;
    r.usage.output = IntAt(*u, "output_tokens");
  }
  return r;
}

Result<LlmResponse> ParseAnthropic(const ModelConfig& model, const Json& doc) {
  LlmResponse r;
  if (doc.value("type", "") == "error" || (doc.contains("error") && !doc["error"].is_null())) {
    r.stop_reason = "error";
    r.error_message = doc.contains("error") ? ErrorText(doc["error"]) : DumpJson(doc);
    return r;
  }
  auto content = doc.find("content");
  if (content == doc.end() || !content->is_array()) return Malformed(model, "no content");
  for (const Json& block : *content) {
    if (block.is_object() && block.value("type", "") == "text" && block.contains("text") &&
        block["text"].is_string()) {
      if (!r.text.empty()) r.text += "\n";
      r.text += block["text"].get<std::string>();
    } else if (block.is_object() && block.value("type", "") == "tool_use") {
      LlmToolCall call;
      call.id = block.value("id", "");
      call.name = block.value("name", "");
      call.arguments_json = DumpJson(
          block.contains("input") && block["input"].is_object() ? block["input"] : Json::object());
      r.tool_calls.push_back(std::move(call));
    }
  }
  std::string stop = doc.contains("stop_reason") && doc["stop_reason"].is_string()
                         ? doc["stop_reason"].get<std::string>()
                         : "end_turn";
  if (stop == "end_turn" || stop == "stop_sequence" || stop == "pause_turn") {
    r.stop_reason = "stop";
  } else if (stop == "max_tokens") {
    r.stop_reason = "length";
  } else if (stop == "tool_use") {
    r.stop_reason = "toolUse";
  } else {
    r.stop_reason = "error";
    r.error_message = "Provider stop_reason: " + stop;
  }
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    r.usage.input = IntAt(*u, "input_tokens");
    r.usage.output = IntAt(*u, "output_tokens");
    r.usage.cache_read = IntAt(*u, "cache_read_input_tokens");
    r.usage.cache_write = IntAt(*u, "cache_creation_input_tokens");
  }
  return r;
}

Result<LlmResponse> ParseRemote(const Json& doc) {
  auto s = doc.find("summary");
  if (s == doc.end() || !s->is_string()) {
    return Status::Unavailable("Remote compaction response missing summary");
  }
  LlmResponse r;
  r.text = s->get<std::string>();
  r.stop_reason = "stop";
  return r;
}

}  // namespace

std::string ResponsesInputItems(std::span<const LlmMessage> messages) {
  return DumpJson(ResponsesInput(messages));
}

LlmMessage LlmMessage::UserText(std::string text) {
  LlmMessage m;
  m.role = Role::kUser;
  LlmPart p;
  p.text = std::move(text);
  m.parts.push_back(std::move(p));
  return m;
}

std::string EffectiveReasoning(const ModelConfig& model, std::string_view thinking_level) {
  if (!model.reasoning) return "";
  std::string level =
      model.reasoning_effort.empty() ? std::string(thinking_level) : model.reasoning_effort;
  if (level == "off" || level == "inherit") return "";
  return level;
}

std::string EndpointUrl(const ModelConfig& model) {
  switch (model.provider) {
    case ProviderKind::kOpenAiChat:
      return model.base_url + "/chat/completions";
    case ProviderKind::kOpenAiResponses:
      return model.base_url + "/responses";
    case ProviderKind::kAnthropic:
      return model.base_url + (model.base_url.ends_with("/v1") ? "/messages" : "/v1/messages");
    case ProviderKind::kRemote:
      return model.base_url;
  }
  return model.base_url;
}

Result<HttpRequest> BuildProviderRequest(const ModelConfig& model, const LlmRequest& request,
                                         std::string_view api_key) {
  HttpRequest http;
  http.url = EndpointUrl(model);
  http.timeout_ms = model.timeout_ms;
  http.connect_timeout_ms = model.connect_timeout_ms;
  AddHeaders(model, http);
  Json body;
  switch (model.provider) {
    case ProviderKind::kOpenAiChat:
      body = ChatBody(model, request);
      if (!api_key.empty())
        http.headers.emplace_back("authorization", "Bearer " + std::string(api_key));
      break;
    case ProviderKind::kOpenAiResponses:
      body = ResponsesBody(model, request);
      if (!api_key.empty())
        http.headers.emplace_back("authorization", "Bearer " + std::string(api_key));
      break;
    case ProviderKind::kAnthropic:
      body = AnthropicBody(model, request);
      http.headers.emplace_back("anthropic-version", "2023-06-01");
      if (!api_key.empty()) http.headers.emplace_back("x-api-key", std::string(api_key));
      break;
    case ProviderKind::kRemote:
      body = RemoteBody(request);
      if (!api_key.empty())
        http.headers.emplace_back("authorization", "Bearer " + std::string(api_key));
      break;
  }
  http.body = DumpJson(body);
  return http;
}

Result<LlmResponse> ParseProviderResponse(const ModelConfig& model, std::string_view body) {
  Json doc = Json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded()) return Malformed(model, "invalid JSON");
  if (!doc.is_object()) return Malformed(model, "not a JSON object");
  switch (model.provider) {
    case ProviderKind::kOpenAiChat:
      return ParseChat(model, doc);
    case ProviderKind::kOpenAiResponses:
      return ParseResponses(model, doc);
    case ProviderKind::kAnthropic:
      return ParseAnthropic(model, doc);
    case ProviderKind::kRemote:
      return ParseRemote(doc);
  }
  return Malformed(model, "unknown provider");
}

Result<LlmResponse> ParseProviderStream(const ModelConfig& model, std::string_view sse_body) {
  providers::StreamDecoder decoder(model);
  decoder.Feed(sse_body);
  return decoder.Finish();
}

std::string DescribeHttpFailure(int status, std::string_view body) {
  size_t b = body.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return std::to_string(status) + " status code (no body)";
  body = body.substr(b);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' ')) {
    body.remove_suffix(1);
  }
  constexpr size_t kMax = 4000;
  std::string out = std::to_string(status) + " " + std::string(body.substr(0, kMax));
  if (body.size() > kMax) out += "...";
  return out;
}

std::string RedactSecret(std::string text, std::string_view secret) {
  if (secret.size() < 4) return text;
  size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), "[redacted]");
    pos += 10;
  }
  return text;
}

int StripImagesToMarkers(LlmRequest& request) {
  int n = 0;
  for (LlmMessage& m : request.messages) {
    for (LlmPart& p : m.parts) {
      if (p.kind != LlmPart::Kind::kImage) continue;
      p.kind = LlmPart::Kind::kText;
      p.text = "[image]";
      p.data.clear();
      p.data.shrink_to_fit();
      p.mime_type.clear();
      ++n;
    }
  }
  return n;
}

}  // namespace compactor
