// OpenAI Responses ("openai-responses"): requests, answers (whole and
// streamed), errors, client requests such as Codex CLI's (developer messages,
// reasoning items with encrypted_content, compaction items), and the input
// items /responses/compact and replayed histories use (docs/providers.md,
// docs/client-requests.md). /responses/compact itself: responses_compact.cc.
#include <map>

#include "compactor/js_json.h"
#include "providers/api_util.h"
#include "providers/client_util.h"
#include "util/json_scan.h"

namespace compactor {
namespace providers {
namespace {

// --- requests ----------------------------------------------------------------

void AppendUser(const LlmMessage& m, Json& out) {
  Json content = Json::array();
  for (const LlmPart& p : m.parts) {
    if (p.kind == LlmPart::Kind::kText) {
      content.push_back({{"type", "input_text"}, {"text", p.text}});
    } else {
      content.push_back({{"type", "input_image"}, {"detail", "auto"}, {"image_url", DataUrl(p)}});
    }
  }
  out.push_back({{"type", "message"}, {"role", "user"}, {"content", std::move(content)}});
}

void AppendAssistant(const LlmMessage& m, Json& out) {
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
}

Json InputItems(std::span<const LlmMessage> messages) {
  Json out = Json::array();
  for (const LlmMessage& m : messages) {
    if (m.role == LlmMessage::Role::kUser) {
      AppendUser(m, out);
    } else if (m.role == LlmMessage::Role::kAssistant) {
      AppendAssistant(m, out);
    } else {
      out.push_back({{"type", "function_call_output"},
                     {"call_id", m.tool_call_id},
                     {"output", JoinedText(m.parts)}});
    }
  }
  return out;
}

Json Body(const ModelConfig& model, const LlmRequest& req) {
  Json body = {{"model", model.model_id}};
  if (!req.system_prompt.empty()) body["instructions"] = req.system_prompt;
  Json input = Json::array();
  if (!req.responses_history_json.empty()) {
    Result<Json> history = internal::ParseJsonWithinLimit<Json>(req.responses_history_json);
    if (history.ok() && history->is_array()) input = std::move(history).value();
  }
  for (Json& item : InputItems(req.messages)) input.push_back(std::move(item));
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

// --- answers -----------------------------------------------------------------

void ReadOutputItem(const Json& item, LlmResponse& r, bool& tool_use) {
  std::string type = StringAt(item, "type");
  if (type == "function_call" || type == "custom_tool_call") {
    tool_use = true;
    r.tool_calls.push_back({StringAt(item, "call_id"), StringAt(item, "name"),
                            type == "function_call"
                                ? ArgumentsText(item)
                                : DumpJson(Json{{"input", StringAt(item, "input")}})});
  }
  if (type != "message") return;
  auto content = item.find("content");
  if (content == item.end() || !content->is_array()) return;
  for (const Json& part : *content) {
    if (part.is_object() && StringAt(part, "type") == "output_text" && part.contains("text") &&
        part["text"].is_string()) {
      if (!r.text.empty()) r.text += "\n";
      r.text += part["text"].get<std::string>();
    }
  }
}

void ApplyStatus(const Json& doc, bool tool_use, LlmResponse& r) {
  std::string status = StringAt(doc, "status");
  if (status.empty()) status = "completed";
  r.stop_reason = tool_use ? "toolUse" : "stop";
  if (status == "incomplete") {
    std::string reason;
    if (auto d = doc.find("incomplete_details"); d != doc.end() && d->is_object()) {
      reason = StringAt(*d, "reason");
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
}

Result<LlmResponse> Parse(const ModelConfig& model, const Json& doc) {
  LlmResponse r;
  if (auto e = doc.find("error"); e != doc.end() && !e->is_null()) {
    r.stop_reason = "error";
    r.error_message = ErrorText(*e);
    r.transient = IsTransientError(*e);
    return r;
  }
  auto output = doc.find("output");
  if (output == doc.end() || !output->is_array()) return Malformed(model, "no output");
  bool tool_use = false;
  for (const Json& item : *output) {
    if (item.is_object()) ReadOutputItem(item, r, tool_use);
  }
  ApplyStatus(doc, tool_use, r);
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    int64_t cached = 0;
    if (auto d = u->find("input_tokens_details"); d != u->end()) {
      cached = IntAt(*d, "cached_tokens");
    }
    r.usage.input = IntAt(*u, "input_tokens") - cached;
    r.usage.cache_read = cached;
    r.usage.output = IntAt(*u, "output_tokens");
  }
  return r;
}

// Events response.output_text.delta ... response.completed; the response
// object of completed / incomplete / failed is read like a whole answer.
class StreamParser : public StreamParserBase {
 public:
  explicit StreamParser(const ModelConfig& model)
      : StreamParserBase("openai-responses"), model_(model) {}

 protected:
  void OnJson(const Json& j, const std::string& type, StreamEventInfo& info) override {
    if (type == "response.output_text.delta") {
      ContentStarted(info);
      text_ += StringAt(j, "delta");
    } else if (type == "response.output_item.added" ||
               type == "response.reasoning_summary_text.delta") {
      ContentStarted(info);
    } else if (type == "response.completed" || type == "response.incomplete" ||
               type == "response.failed") {
      if (auto r = j.find("response"); r != j.end() && r->is_object()) {
        auto parsed = Parse(model_, *r);
        if (parsed.ok()) full_ = std::move(parsed).value();
      }
      done_ = true;
      info.complete = true;
      if (full_) {
        response_.usage = full_->usage;
        info.usage_reported = true;
        info.stop_reason = full_->stop_reason;
        if (full_->stop_reason == "error") {
          info.error = true;
          info.error_message = full_->error_message;
          info.overflow = ClassifyErrorText(info.error_message);
        }
      }
    }
  }
  LlmResponse Assemble() override {
    if (full_) return *full_;
    LlmResponse out = response_;
    out.text = text_;
    return out;
  }

 private:
  const ModelConfig model_;
  std::string text_;                 // output_text deltas
  std::optional<LlmResponse> full_;  // the final response object
};

// --- client requests ---------------------------------------------------------

ClientItem ReadItem(dom::element it, ByteSpan raw) {
  ClientItem item;
  item.raw = raw;
  std::string type(StringMember(it, "type"));
  if (type.empty() && HasMember(it, "role")) type = "message";
  item.type = type;
  if (type == "message") {
    std::string_view role = StringMember(it, "role");
    item.kind = role == "user"                              ? ClientItemKind::kUser
                : role == "assistant"                       ? ClientItemKind::kAssistant
                : (role == "system" || role == "developer") ? ClientItemKind::kSystem
                                                            : ClientItemKind::kOther;
  } else if (type == "reasoning") {
    item.kind = ClientItemKind::kReasoning;
    item.opaque = true;
  } else if (type == "compaction" || type == "compaction_summary") {
    item.kind = ClientItemKind::kCompaction;
    item.opaque = true;
  } else if (type == "item_reference") {
    item.opaque = true;  // server-side state
  } else if (type == "mcp_approval_request") {
    item.kind = ClientItemKind::kToolCall;
    item.call_ids.emplace_back(StringMember(it, "id"));
    item.call_names.emplace_back(StringMember(it, "name"));
  } else if (type == "mcp_approval_response") {
    item.kind = ClientItemKind::kToolResult;
    item.result_ids.emplace_back(StringMember(it, "approval_request_id"));
  } else if (type.ends_with("_call_output") && HasMember(it, "call_id")) {
    item.kind = ClientItemKind::kToolResult;
    item.result_ids.emplace_back(StringMember(it, "call_id"));
  } else if (type.ends_with("_call") && HasMember(it, "call_id")) {
    item.kind = ClientItemKind::kToolCall;
    item.call_ids.emplace_back(StringMember(it, "call_id"));
    std::string_view name = StringMember(it, "name");
    item.call_names.emplace_back(name.empty() ? std::string_view(type).substr(0, type.size() - 5)
                                              : name);
  }
  return item;
}

// A message's content or a call's output (a string, or input/output parts)
// as pi blocks.
void WriteContent(dom::element content, PiMessageWriter& w) {
  std::string_view text;
  if (content.get_string().get(text) == simdjson::SUCCESS) {
    w.Text(text);
    return;
  }
  dom::array parts;
  if (content.get_array().get(parts) != simdjson::SUCCESS) return;
  for (dom::element p : parts) {
    std::string_view type = StringMember(p, "type");
    if (type == "input_text" || type == "output_text" || type == "text") {
      w.Text(StringMember(p, "text"));
    } else if (type == "refusal") {
      w.Text(StringMember(p, "refusal"));
    } else if (type == "input_image") {
      w.ImageUrl(StringMember(p, "image_url"));
    }
  }
}

// The arguments of a call item as JSON text.
std::string CallArguments(dom::element it, std::string_view type) {
  dom::element v;
  if (type == "function_call") {
    return Member(it, "arguments", &v) && !v.is_null() ? HintText(v) : "{}";
  }
  if (type == "custom_tool_call") {
    std::string out = R"({"input":)";
    AppendJsString(out, StringMember(it, "input"));
    return out + "}";
  }
  return Member(it, "action", &v) ? simdjson::minify(v) : "{}";
}

std::vector<std::string> ItemMessages(const ClientRequest& request, size_t index, dom::element it) {
  const ClientItem& item = request.items[index];
  std::string_view text;
  if (it.get_string().get(text) == simdjson::SUCCESS) {  // "input": "text"
    return {PiMessageWriter::UserString(text)};
  }
  dom::element content;
  switch (item.kind) {
    case ClientItemKind::kUser:
    case ClientItemKind::kAssistant: {
      PiMessageWriter w(item.kind == ClientItemKind::kUser ? "user" : "assistant");
      if (Member(it, "content", &content)) WriteContent(content, w);
      return {w.Finish()};
    }
    case ClientItemKind::kReasoning: {
      std::string summary;
      dom::array parts;
      if (ArrayMember(it, "summary", &parts)) {
        for (dom::element p : parts) {
          if (!summary.empty()) summary += "\n\n";
          summary += StringMember(p, "text");
        }
      }
      PiMessageWriter w("assistant");
      w.Thinking(summary, StringMember(it, "encrypted_content"), false);
      return {w.Finish()};
    }
    case ClientItemKind::kToolCall: {
      PiMessageWriter w("assistant");
      w.ToolCall(item.call_ids[0], item.call_names[0], CallArguments(it, item.type));
      return {w.Finish()};
    }
    case ClientItemKind::kToolResult: {
      const std::string& id = item.result_ids[0];
      PiMessageWriter w =
          PiMessageWriter::ToolResult(id, ToolNameBefore(request, index, id), false);
      dom::element output;
      if (Member(it, "output", &output) && !output.is_null()) {
        if (output.is_string() || output.is_array()) {
          WriteContent(output, w);
        } else {
          w.Text(simdjson::minify(output));
        }
      }
      return {w.Finish()};
    }
    default:
      return {};
  }
}

class OpenAiResponses : public ProviderApi {
 public:
  std::string_view name() const override { return "openai-responses"; }
  std::string_view pi_api() const override { return "openai-responses"; }
  std::string_view default_provider() const override { return "openai"; }
  std::string_view default_base_url() const override { return "https://api.openai.com/v1"; }
  bool base_url_is_endpoint() const override { return false; }
  bool streams() const override { return true; }
  bool agent_requests() const override { return true; }
  bool native_compaction() const override { return true; }

  std::string EndpointUrl(const ModelConfig& model) const override {
    return model.base_url + "/responses";
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

  std::unique_ptr<ProviderStreamParser> NewStreamParser(const ModelConfig& model) const override {
    return std::make_unique<StreamParser>(model);
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
    dom::element input;
    if (!Member(doc, "input", &input) || !(input.is_array() || input.is_string())) {
      return Status::InvalidArgument("openai-responses request: no \"input\" array or string");
    }
    r.model = std::string(StringMember(doc, "model"));
    r.stream = BoolMember(doc, "stream");
    r.conversation = members["input"];
    if (auto s = members.find("instructions"); s != members.end()) r.system = s->second;
    if (auto t = members.find("tools"); t != members.end()) r.tools = t->second;
    for (std::string_view hint : {"prompt_cache_key", "previous_response_id", "conversation",
                                  "user", "safety_identifier"}) {
      dom::element h;
      if (Member(doc, hint, &h) && !h.is_null()) r.hints[std::string(hint)] = HintText(h);
    }
    std::vector<dom::element> elements;
    if (input.is_string()) {
      ClientItem item;
      item.kind = ClientItemKind::kUser;
      item.type = "message";
      item.raw = r.conversation;
      r.items.push_back(std::move(item));
      elements.push_back(input);
    } else {
      std::vector<ByteSpan> spans;
      dom::array array;
      if (input.get_array().get(array) != simdjson::SUCCESS) return Status::Internal("input");
      COMPACTOR_RETURN_IF_ERROR(ArrayItems(r, array, &elements, &spans));
      for (size_t i = 0; i < spans.size(); ++i) {
        r.items.push_back(ReadItem(elements[i], spans[i]));
        if (r.items.back().type == "compaction_trigger") r.hints["compaction_trigger"] = "true";
      }
    }
    FinishItems(r, [&](size_t i) { return ItemMessages(r, i, elements[i]); });
    return r;
  }

  std::vector<std::string> ClientItemMessages(const ClientRequest& request,
                                              size_t index) const override {
    ScratchParser parser(ScratchParser::kItem, request.items.at(index).raw.size());
    dom::element it;
    std::string_view raw = request.Text(request.items.at(index));
    if (parser.get().parse(raw.data(), raw.size(), !PaddedIn(request.body, raw)).get(it) !=
        simdjson::SUCCESS) {
      return {};
    }
    return ItemMessages(request, index, it);
  }

  Result<std::string> RewriteClientRequest(const ClientRequest& request,
                                           const ClientRewrite& rewrite) const override {
    std::string summary =
        R"({"type":"message","role":"user","content":[{"type":"input_text","text":)";
    AppendJsString(summary, rewrite.summary);
    summary += "}]}";
    return SpliceRewrite(request, rewrite, summary);
  }
};

}  // namespace

const ProviderApi& OpenAiResponsesApi() {
  static const OpenAiResponses api;
  return api;
}

}  // namespace providers

std::string ResponsesInputItems(std::span<const LlmMessage> messages) {
  return DumpJson(providers::InputItems(messages));
}

}  // namespace compactor
