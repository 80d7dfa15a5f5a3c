// OpenAI Chat Completions ("openai-chat"): also vLLM, llama.cpp, Ollama and
// LM Studio. Requests, answers (whole and streamed), errors, and client
// requests (docs/providers.md, docs/client-requests.md).
#include <map>

#include "compactor/js_json.h"
#include "providers/api_util.h"
#include "providers/client_util.h"

namespace compactor::providers {
namespace {

// --- requests ----------------------------------------------------------------

Json UserContent(const LlmMessage& m) {
  if (AllText(m.parts) && m.parts.size() == 1) return m.parts[0].text;
  Json parts = Json::array();
  for (const LlmPart& p : m.parts) {
    if (p.kind == LlmPart::Kind::kText) {
      parts.push_back({{"type", "text"}, {"text", p.text}});
    } else {
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", DataUrl(p)}}}});
    }
  }
  return parts;
}

Json AssistantMessage(const LlmMessage& m) {
  Json msg = {{"role", "assistant"}};
  msg["content"] = m.parts.empty() ? Json(nullptr) : Json(JoinedText(m.parts));
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const LlmToolCall& c : m.tool_calls) {
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
    }
    msg["tool_calls"] = std::move(calls);
  }
  return msg;
}

Json Messages(const LlmRequest& req) {
  Json out = Json::array();
  if (!req.system_prompt.empty()) {
    out.push_back({{"role", "system"}, {"content", req.system_prompt}});
  }
  for (const LlmMessage& m : req.messages) {
    if (m.role == LlmMessage::Role::kUser) {
      out.push_back({{"role", "user"}, {"content", UserContent(m)}});
    } else if (m.role == LlmMessage::Role::kAssistant) {
      out.push_back(AssistantMessage(m));
    } else {
      out.push_back(
          {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", JoinedText(m.parts)}});
    }
  }
  return out;
}

std::string MaxTokensField(const ModelConfig& model) {
  if (!model.max_tokens_field.empty()) return model.max_tokens_field;
  return model.base_url.find("api.openai.com") != std::string::npos ? "max_completion_tokens"
                                                                    : "max_tokens";
}

Json Body(const ModelConfig& model, const LlmRequest& req) {
  Json body = {{"model", model.model_id}, {"messages", Messages(req)}};
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
  if (mt > 0) body[MaxTokensField(model)] = mt;
  std::string effort = EffectiveReasoning(model, req.thinking_level);
  if (!effort.empty()) body["reasoning_effort"] = effort == "xhigh" ? "high" : effort;
  body["stream"] = model.stream;
  if (model.stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

// --- answers -----------------------------------------------------------------

// pi's stop reason for a finish_reason; an unexpected one is an error stop.
void ApplyFinishReason(const std::string& finish, LlmResponse& r) {
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
}

void ReadUsage(const Json& u, LlmUsage& usage) {
  int64_t cached = 0;
  if (auto d = u.find("prompt_tokens_details"); d != u.end()) cached = IntAt(*d, "cached_tokens");
  usage.input = IntAt(u, "prompt_tokens") - cached;
  usage.cache_read = cached;
  usage.output = IntAt(u, "completion_tokens");
}

std::string MessageText(const Json& message) {
  std::string text;
  auto c = message.find("content");
  if (c == message.end()) return text;
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) return text;
  for (const Json& part : *c) {
    if (part.is_object() && StringAt(part, "type") == "text" && part.contains("text") &&
        part["text"].is_string()) {
      if (!text.empty()) text += "\n";
      text += part["text"].get<std::string>();
    }
  }
  return text;
}

Result<LlmResponse> Parse(const ModelConfig& model, const Json& doc) {
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
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) return Malformed(model, "no message");
  r.text = MessageText(*message);
  if (auto calls = message->find("tool_calls"); calls != message->end() && calls->is_array()) {
    for (const Json& c : *calls) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
      const Json& f = c["function"];
      r.tool_calls.push_back({StringAt(c, "id"), StringAt(f, "name"), ArgumentsText(f)});
    }
  }
  ApplyFinishReason(choice.contains("finish_reason") && choice["finish_reason"].is_string()
                        ? choice["finish_reason"].get<std::string>()
                        : "stop",
                    r);
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) ReadUsage(*u, r.usage);
  return r;
}

// Chunks: data: {"choices":[{"delta":{...},"finish_reason":...}]}, a usage
// chunk, data: [DONE]. A finish reason without [DONE] is complete too.
class StreamParser : public StreamParserBase {
 public:
  StreamParser() : StreamParserBase("openai-chat") {}

 protected:
  void OnJson(const Json& j, const std::string&, StreamEventInfo& info) override {
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
      ReadUsage(*u, response_.usage);
      info.usage_reported = true;
    }
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty()) return;
    const Json& c = (*choices)[0];
    if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
      std::string content = StringAt(*d, "content");
      if (!content.empty() || !StringAt(*d, "reasoning_content").empty()) ContentStarted(info);
      text_ += content;
      if (auto tc = d->find("tool_calls"); tc != d->end() && tc->is_array()) {
        ContentStarted(info);
        for (const Json& piece : *tc) {
          LlmToolCall& call = calls_[static_cast<int>(IntAt(piece, "index"))];
          if (std::string id = StringAt(piece, "id"); !id.empty()) call.id = id;
          const Json& f = ObjectAt(piece, "function");
          if (std::string name = StringAt(f, "name"); !name.empty()) call.name = name;
          call.arguments_json += StringAt(f, "arguments");
        }
      }
    }
    std::string finish = StringAt(c, "finish_reason");
    if (!finish.empty()) {
      finish_seen_ = true;
      ApplyFinishReason(finish, response_);
      info.stop_reason = response_.stop_reason;
    }
  }
  bool CompleteWithoutMarker() const override { return finish_seen_; }
  LlmResponse Assemble() override {
    LlmResponse out = response_;
    out.text = text_;
    for (auto& [index, call] : calls_) {
      if (call.arguments_json.empty()) call.arguments_json = "{}";
      out.tool_calls.push_back(std::move(call));
    }
    return out;
  }

 private:
  bool finish_seen_ = false;
  std::string text_;
  std::map<int, LlmToolCall> calls_;  // assembled from fragments, by index
};

// --- client requests ---------------------------------------------------------

// Reasoning a compatible server returns signed or encrypted (OpenRouter
// reasoning_details, LiteLLM thinking_blocks) must be sent back unaltered.
bool HasSignedReasoning(dom::element message) {
  for (std::string_view key : {"reasoning_details", "thinking_blocks"}) {
    dom::array details;
    if (!ArrayMember(message, key, &details)) continue;
    for (dom::element d : details) {
      std::string_view type = StringMember(d, "type");
      if (!StringMember(d, "signature").empty() || type == "reasoning.encrypted" ||
          type == "redacted_thinking") {
        return true;
      }
    }
  }
  return false;
}

ClientItem ReadItem(dom::element m, ByteSpan raw) {
  ClientItem item;
  item.raw = raw;
  std::string_view role = StringMember(m, "role");
  item.type = std::string(role);
  if (role == "system" || role == "developer") {
    item.kind = ClientItemKind::kSystem;
  } else if (role == "user") {
    item.kind = ClientItemKind::kUser;
  } else if (role == "assistant") {
    item.kind = ClientItemKind::kAssistant;
    dom::array calls;
    if (ArrayMember(m, "tool_calls", &calls)) {
      for (dom::element c : calls) {
        if (!c.is_object()) continue;
        dom::element f;
        item.call_ids.emplace_back(StringMember(c, "id"));
        item.call_names.emplace_back(Member(c, "function", &f) ? StringMember(f, "name") : "");
      }
    }
    if (!item.call_ids.empty()) item.kind = ClientItemKind::kToolCall;
    item.opaque = HasSignedReasoning(m);
  } else if (role == "tool" || role == "function") {
    item.kind = ClientItemKind::kToolResult;
    if (std::string_view id = StringMember(m, "tool_call_id"); !id.empty()) {
      item.result_ids.emplace_back(id);
    }
  }
  return item;
}

// Text (and images) of a content value (a string or parts) as pi blocks.
void WriteContent(dom::element m, PiMessageWriter& w) {
  dom::element content;
  if (!Member(m, "content", &content)) return;
  std::string_view text;
  if (content.get_string().get(text) == simdjson::SUCCESS) {
    w.Text(text);
    return;
  }
  dom::array parts;
  if (content.get_array().get(parts) != simdjson::SUCCESS) return;
  for (dom::element p : parts) {
    std::string_view type = StringMember(p, "type");
    if (type == "text") w.Text(StringMember(p, "text"));
    if (type == "refusal") w.Text(StringMember(p, "refusal"));
    if (type != "image_url") continue;
    dom::element image;
    std::string_view url;
    if (Member(p, "image_url", &image) && image.get_string().get(url) != simdjson::SUCCESS) {
      url = StringMember(image, "url");
    }
    w.ImageUrl(url);
  }
}

std::vector<std::string> ItemMessages(const ClientRequest& request, size_t index, dom::element m) {
  const ClientItem& item = request.items[index];
  switch (item.kind) {
    case ClientItemKind::kUser: {
      std::string_view text;
      dom::element content;
      if (Member(m, "content", &content) && content.get_string().get(text) == simdjson::SUCCESS) {
        return {PiMessageWriter::UserString(text)};
      }
      PiMessageWriter w("user");
      WriteContent(m, w);
      return {w.Finish()};
    }
    case ClientItemKind::kAssistant:
    case ClientItemKind::kToolCall: {
      PiMessageWriter w("assistant");
      if (std::string_view r = StringMember(m, "reasoning_content"); !r.empty()) {
        w.Thinking(r, "", false);
      }
      WriteContent(m, w);
      dom::array calls;
      if (ArrayMember(m, "tool_calls", &calls)) {
        for (dom::element c : calls) {
          dom::element f, args;
          if (!Member(c, "function", &f)) continue;
          std::string arguments = "{}";
          if (Member(f, "arguments", &args) && !args.is_null()) arguments = HintText(args);
          w.ToolCall(StringMember(c, "id"), StringMember(f, "name"), arguments);
        }
      }
      return {w.Finish()};
    }
    case ClientItemKind::kToolResult: {
      std::string_view id = StringMember(m, "tool_call_id");
      std::string tool =
          id.empty() ? std::string(StringMember(m, "name")) : ToolNameBefore(request, index, id);
      PiMessageWriter w = PiMessageWriter::ToolResult(id, tool, false);
      WriteContent(m, w);
      return {w.Finish()};
    }
    default:
      return {};
  }
}

class OpenAiChat : public ProviderApi {
 public:
  std::string_view name() const override { return "openai-chat"; }
  std::string_view pi_api() const override { return "openai-completions"; }
  std::string_view default_provider() const override { return "openai"; }
  std::string_view default_base_url() const override { return "https://api.openai.com/v1"; }
  bool base_url_is_endpoint() const override { return false; }
  bool streams() const override { return true; }
  bool agent_requests() const override { return true; }
  bool native_compaction() const override { return false; }

  std::string EndpointUrl(const ModelConfig& model) const override {
    return model.base_url + "/chat/completions";
  }

  Result<HttpRequest> BuildRequest(const ModelConfig& model, const LlmRequest& request,
                                   std::string_view api_key) const override {
    HttpRequest http = NewHttpRequest(model, EndpointUrl(model));
    http.body = DumpJson(Body(model, request));
    AddBearer(http, api_key);
    return http;
  }

  Result<LlmResponse> ParseResponse(const ModelConfig& model,
                                    std::string_view body) const override {
    COMPACTOR_ASSIGN_OR_RETURN(Json doc, ParseObjectBody(model, body));
    return Parse(model, doc);
  }

  std::unique_ptr<ProviderStreamParser> NewStreamParser(const ModelConfig&) const override {
    return std::make_unique<StreamParser>();
  }

  ProviderError ReadError(int http_status, std::string_view body) const override {
    std::string type, detail;
    ReadErrorFields(body, &type, &detail);
    return HttpError(http_status, body, std::move(type), std::move(detail));
  }

  Result<ClientRequest> ReadClientRequest(std::string body) const override {
    ClientRequest r;
    r.api = std::string(name());
    r.body = std::move(body);
    ScratchParser parser(ScratchParser::kBody, r.body.size());
    std::map<std::string, ByteSpan, std::less<>> members;
    COMPACTOR_ASSIGN_OR_RETURN(dom::element doc, ParseClientBody(r, parser.get(), &members));
    dom::array messages;
    if (!ArrayMember(doc, "messages", &messages)) {
      return Status::InvalidArgument("openai-chat request: no \"messages\" array");
    }
    r.model = std::string(StringMember(doc, "model"));
    r.stream = BoolMember(doc, "stream");
    r.conversation = members["messages"];
    if (auto t = members.find("tools"); t != members.end()) r.tools = t->second;
    for (std::string_view hint : {"user", "prompt_cache_key", "safety_identifier"}) {
      dom::element h;
      if (Member(doc, hint, &h) && !h.is_null()) r.hints[std::string(hint)] = HintText(h);
    }
    std::vector<dom::element> elements;
    std::vector<ByteSpan> spans;
    COMPACTOR_RETURN_IF_ERROR(ArrayItems(r, messages, &elements, &spans));
    for (size_t i = 0; i < spans.size(); ++i) r.items.push_back(ReadItem(elements[i], spans[i]));
    FinishItems(r, [&](size_t i) { return ItemMessages(r, i, elements[i]); });
    return r;
  }

  std::vector<std::string> ClientItemMessages(const ClientRequest& request,
                                              size_t index) const override {
    ScratchParser parser(ScratchParser::kItem, request.items.at(index).raw.size());
    dom::element m;
    std::string_view raw = request.Text(request.items.at(index));
    if (parser.get().parse(raw.data(), raw.size(), !PaddedIn(request.body, raw)).get(m) !=
        simdjson::SUCCESS) {
      return {};
    }
    return ItemMessages(request, index, m);
  }

  Result<std::string> RewriteClientRequest(const ClientRequest& request,
                                           const ClientRewrite& rewrite) const override {
    std::string summary = R"({"role":"user","content":)";
    AppendJsString(summary, rewrite.summary);
    summary += "}";
    return SpliceRewrite(request, rewrite, summary);
  }
};

}  // namespace

const ProviderApi& OpenAiChatApi() {
  static const OpenAiChat api;
  return api;
}

}  // namespace compactor::providers
