// Anthropic Messages ("anthropic"): requests, answers (whole and streamed),
// errors, and client requests such as Claude Code's (system blocks and
// messages with cache_control breakpoints, thinking blocks with signatures,
// tool_use / tool_result), including the breakpoint budget of a rewrite
// (docs/providers.md, docs/client-requests.md).
#include <map>
#include <optional>

#include "compactor/js_json.h"
#include "providers/api_util.h"
#include "providers/client_util.h"
#include "util/json_scan.h"

namespace compactor::providers {
namespace {

// --- requests ----------------------------------------------------------------

// Thinking budgets by level (pi's defaults, xhigh added).
int64_t Budget(std::string_view level) {
  if (level == "minimal") return 1024;
  if (level == "low") return 2048;
  if (level == "medium") return 8192;
  if (level == "high") return 16384;
  if (level == "xhigh") return 32768;
  return 0;
}

Json Blocks(const std::vector<LlmPart>& parts) {
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

Json AssistantBlocks(const LlmMessage& m) {
  Json blocks = Json::array();
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
  return blocks;
}

// Consecutive user messages merge text-with-text and tool-result-with-tool-
// result, never across the two kinds (a tool_result block must open its
// message, and mixing kinds changes what the model sees as the turn).
Json Messages(const LlmRequest& req) {
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
      blocks = Blocks(m.parts);
    } else if (kind == Kind::kAssistant) {
      blocks = AssistantBlocks(m);
    } else {
      Json result = {
          {"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", Blocks(m.parts)}};
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

Json Body(const ModelConfig& model, const LlmRequest& req) {
  int64_t mt = ResolveMaxTokens(model, req, true);
  int64_t budget = Budget(EffectiveReasoning(model, req.thinking_level));
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
  body["messages"] = Messages(req);
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

// --- answers -----------------------------------------------------------------

void ApplyStopReason(const std::string& stop, LlmResponse& r) {
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
}

Result<LlmResponse> Parse(const ModelConfig& model, const Json& doc) {
  LlmResponse r;
  if (StringAt(doc, "type") == "error" || (doc.contains("error") && !doc["error"].is_null())) {
    r.stop_reason = "error";
    r.error_message = doc.contains("error") ? ErrorText(doc["error"]) : DumpJson(doc);
    return r;
  }
  auto content = doc.find("content");
  if (content == doc.end() || !content->is_array()) return Malformed(model, "no content");
  for (const Json& block : *content) {
    if (block.is_object() && StringAt(block, "type") == "text" && block.contains("text") &&
        block["text"].is_string()) {
      if (!r.text.empty()) r.text += "\n";
      r.text += block["text"].get<std::string>();
    } else if (block.is_object() && StringAt(block, "type") == "tool_use") {
      r.tool_calls.push_back(
          {StringAt(block, "id"), StringAt(block, "name"),
           DumpJson(block.contains("input") && block["input"].is_object() ? block["input"]
                                                                          : Json::object())});
    }
  }
  ApplyStopReason(doc.contains("stop_reason") && doc["stop_reason"].is_string()
                      ? doc["stop_reason"].get<std::string>()
                      : "end_turn",
                  r);
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    r.usage.input = IntAt(*u, "input_tokens");
    r.usage.output = IntAt(*u, "output_tokens");
    r.usage.cache_read = IntAt(*u, "cache_read_input_tokens");
    r.usage.cache_write = IntAt(*u, "cache_creation_input_tokens");
  }
  return r;
}

// Events message_start, content_block_start/delta/stop, message_delta,
// message_stop; text blocks are kept (thinking is not).
class StreamParser : public StreamParserBase {
 public:
  StreamParser() : StreamParserBase("anthropic") {}

 protected:
  void OnJson(const Json& j, const std::string& type, StreamEventInfo& info) override {
    if (type == "message_start") {
      const Json& u = ObjectAt(ObjectAt(j, "message"), "usage");
      response_.usage.input = IntAt(u, "input_tokens");
      response_.usage.output = IntAt(u, "output_tokens");
      response_.usage.cache_read = IntAt(u, "cache_read_input_tokens");
      response_.usage.cache_write = IntAt(u, "cache_creation_input_tokens");
      info.usage_reported = true;
    } else if (type == "content_block_start") {
      ContentStarted(info);
      const Json& block = ObjectAt(j, "content_block");
      int index = static_cast<int>(IntAt(j, "index"));
      if (StringAt(block, "type") == "text") {
        blocks_[index] = StringAt(block, "text");
      } else if (StringAt(block, "type") == "tool_use") {
        LlmToolCall& call = calls_[index];
        call.id = StringAt(block, "id");
        call.name = StringAt(block, "name");
      }
    } else if (type == "content_block_delta") {
      const Json& delta = ObjectAt(j, "delta");
      int index = static_cast<int>(IntAt(j, "index"));
      auto it = blocks_.find(index);
      if (StringAt(delta, "type") == "text_delta" && it != blocks_.end()) {
        it->second += StringAt(delta, "text");
      } else if (StringAt(delta, "type") == "input_json_delta") {
        auto call = calls_.find(index);
        if (call != calls_.end()) call->second.arguments_json += StringAt(delta, "partial_json");
      }
    } else if (type == "message_delta") {
      std::string stop = StringAt(ObjectAt(j, "delta"), "stop_reason");
      if (!stop.empty()) {
        ApplyStopReason(stop, response_);
        info.stop_reason = response_.stop_reason;
      }
      if (auto u = j.find("usage");
          u != j.end() && u->is_object() && u->contains("output_tokens")) {
        response_.usage.output = IntAt(*u, "output_tokens");
        info.usage_reported = true;
      }
    } else if (type == "message_stop") {
      done_ = true;
      info.complete = true;
    }
  }
  LlmResponse Assemble() override {
    LlmResponse out = response_;
    out.text.clear();
    bool first = true;
    for (const auto& [index, text] : blocks_) {
      if (!first) out.text += "\n";
      first = false;
      out.text += text;
    }
    for (auto& [index, call] : calls_) {
      // A call streamed without arguments (none are sent for an empty input).
      if (call.arguments_json.empty()) call.arguments_json = "{}";
      out.tool_calls.push_back(std::move(call));
    }
    return out;
  }

 private:
  std::map<int, std::string> blocks_;  // text blocks by index
  std::map<int, LlmToolCall> calls_;   // tool_use blocks by index (input_json_delta pieces)
};

// --- client requests ---------------------------------------------------------

bool HasMarker(dom::element block) {
  dom::element m;
  return Member(block, "cache_control", &m) && !m.is_null();
}

// Breakpoints on the blocks of a content array (and inside tool_result content).
int CountMarkers(dom::element blocks) {
  int n = 0;
  dom::array array;
  if (blocks.get_array().get(array) != simdjson::SUCCESS) return n;
  for (dom::element b : array) {
    if (!b.is_object()) continue;
    n += HasMarker(b) ? 1 : 0;
    dom::element inner;
    if (Member(b, "content", &inner)) n += CountMarkers(inner);
  }
  return n;
}

ClientItem ReadItem(dom::element m, ByteSpan raw) {
  ClientItem item;
  item.raw = raw;
  std::string_view role = StringMember(m, "role");
  item.type = std::string(role);
  item.kind = role == "user"        ? ClientItemKind::kUser
              : role == "assistant" ? ClientItemKind::kAssistant
                                    : ClientItemKind::kOther;
  dom::element content;
  dom::array blocks;
  if (!Member(m, "content", &content)) return item;
  item.cache_breakpoints = CountMarkers(content);
  if (content.get_array().get(blocks) != simdjson::SUCCESS) return item;
  bool compaction = false;
  for (dom::element b : blocks) {
    std::string_view type = StringMember(b, "type");
    if (type == "tool_use") {
      item.call_ids.emplace_back(StringMember(b, "id"));
      item.call_names.emplace_back(StringMember(b, "name"));
    } else if (type == "tool_result") {
      item.result_ids.emplace_back(StringMember(b, "tool_use_id"));
    } else if ((type == "thinking" && HasMember(b, "signature")) || type == "redacted_thinking") {
      item.opaque = true;
    } else if (type == "compaction") {
      compaction = true;
      item.opaque = true;
    }
  }
  if (compaction) {
    item.kind = ClientItemKind::kCompaction;
  } else if (!item.call_ids.empty()) {
    item.kind = ClientItemKind::kToolCall;
  } else if (!item.result_ids.empty()) {
    item.kind = ClientItemKind::kToolResult;
  }
  return item;
}

void WriteImage(dom::element block, PiMessageWriter& w) {
  dom::element source;
  if (Member(block, "source", &source) && StringMember(source, "type") == "base64") {
    w.Image(StringMember(source, "media_type"), StringMember(source, "data"));
  } else {
    w.Image("", "");
  }
}

// tool_result content (a string or text/image blocks) as pi blocks.
void WriteResultContent(dom::element result, PiMessageWriter& w) {
  dom::element content;
  if (!Member(result, "content", &content)) return;
  std::string_view text;
  if (content.get_string().get(text) == simdjson::SUCCESS) w.Text(text);
  dom::array blocks;
  if (content.get_array().get(blocks) != simdjson::SUCCESS) return;
  for (dom::element b : blocks) {
    std::string_view type = StringMember(b, "type");
    if (type == "text") w.Text(StringMember(b, "text"));
    if (type == "image") WriteImage(b, w);
  }
}

// A user message: text and images become user messages, each tool_result
// block a toolResult message, in block order.
std::vector<std::string> UserMessages(const ClientRequest& request, size_t index,
                                      dom::element content) {
  std::string_view text;
  if (content.get_string().get(text) == simdjson::SUCCESS) {
    return {PiMessageWriter::UserString(text)};
  }
  std::vector<std::string> out;
  dom::array blocks;
  if (content.get_array().get(blocks) != simdjson::SUCCESS) return out;
  std::optional<PiMessageWriter> pending;
  auto flush = [&] {
    if (pending && !pending->empty()) out.push_back(pending->Finish());
    pending.reset();
  };
  for (dom::element b : blocks) {
    std::string_view type = StringMember(b, "type");
    if (type == "text" || type == "image") {
      if (!pending) pending.emplace("user");
      if (type == "text") pending->Text(StringMember(b, "text"));
      if (type == "image") WriteImage(b, *pending);
    }
    if (type != "tool_result") continue;
    flush();
    std::string_view id = StringMember(b, "tool_use_id");
    PiMessageWriter r = PiMessageWriter::ToolResult(id, ToolNameBefore(request, index, id),
                                                    BoolMember(b, "is_error"));
    WriteResultContent(b, r);
    out.push_back(r.Finish());
  }
  flush();
  return out;
}

std::string AssistantMessage(dom::element content) {
  PiMessageWriter w("assistant");
  std::string_view text;
  dom::array blocks;
  if (content.get_string().get(text) == simdjson::SUCCESS) w.Text(text);
  if (content.get_array().get(blocks) != simdjson::SUCCESS) return w.Finish();
  for (dom::element b : blocks) {
    std::string_view type = StringMember(b, "type");
    if (type == "text") {
      w.Text(StringMember(b, "text"));
    } else if (type == "thinking") {
      w.Thinking(StringMember(b, "thinking"), StringMember(b, "signature"), false);
    } else if (type == "redacted_thinking") {
      w.Thinking("", StringMember(b, "data"), true);
    } else if (type == "tool_use") {
      dom::element input;
      w.ToolCall(StringMember(b, "id"), StringMember(b, "name"),
                 Member(b, "input", &input) ? simdjson::minify(input) : "{}");
    }
  }
  return w.Finish();
}

std::vector<std::string> ItemMessages(const ClientRequest& request, size_t index, dom::element m) {
  std::string_view role = StringMember(m, "role");
  dom::element content;
  if (!Member(m, "content", &content)) return {};
  if (role == "user") return UserMessages(request, index, content);
  if (role == "assistant") return {AssistantMessage(content)};
  return {};
}

bool IsMarker(std::string_view raw) { return !raw.empty() && raw != "null"; }

std::string StripArray(std::string_view array, int& budget, bool& changed);

// `block` without its breakpoint, then without those of its nested content
// (a tool_result's), while `budget` lasts.
std::string StripBlock(std::string_view block, int& budget, bool& changed) {
  std::string out(block);
  if (budget > 0 && IsMarker(internal::FindMember(out, "cache_control"))) {
    out = internal::RemoveMember(out, "cache_control");
    --budget;
    changed = true;
  }
  std::string_view inner = internal::FindMember(out, "content");
  if (budget > 0 && !inner.empty() && inner.front() == '[') {
    bool inner_changed = false;
    std::string stripped = StripArray(inner, budget, inner_changed);
    if (inner_changed) {
      out = internal::SetMember(out, "content", stripped);
      changed = true;
    }
  }
  return out;
}

// The content array `array` with breakpoints removed in block order.
std::string StripArray(std::string_view array, int& budget, bool& changed) {
  std::string out;
  size_t copied = 0;
  for (auto [b, e] : internal::ScanArrayElements(array)) {
    if (budget <= 0) break;
    bool block_changed = false;
    std::string block = StripBlock(array.substr(b, e - b), budget, block_changed);
    if (!block_changed) continue;
    out.append(array.substr(copied, b - copied));
    out.append(block);
    copied = e;
    changed = true;
  }
  out.append(array.substr(copied));
  return out;
}

// `item` with up to `budget` breakpoints removed, earliest first.
std::string StripMarkers(std::string_view item, int& budget) {
  std::string_view content = internal::FindMember(item, "content");
  if (content.empty() || content.front() != '[') return std::string(item);
  bool changed = false;
  std::string stripped = StripArray(content, budget, changed);
  return changed ? internal::SetMember(item, "content", stripped) : std::string(item);
}

// The raw value of the first breakpoint in the content array `blocks`
// (a block's own before its nested content's), or "".
std::string_view FirstMarker(std::string_view blocks) {
  for (auto [b, e] : internal::ScanArrayElements(blocks)) {
    std::string_view block = blocks.substr(b, e - b);
    std::string_view marker = internal::FindMember(block, "cache_control");
    if (IsMarker(marker)) return marker;
    std::string_view inner = internal::FindMember(block, "content");
    if (!inner.empty() && inner.front() == '[') {
      if (std::string_view m = FirstMarker(inner); !m.empty()) return m;
    }
  }
  return {};
}

constexpr int kMaxBreakpoints = 4;

class AnthropicMessages : public ProviderApi {
 public:
  std::string_view name() const override { return "anthropic"; }
  std::string_view pi_api() const override { return "anthropic-messages"; }
  std::string_view default_provider() const override { return "anthropic"; }
  std::string_view default_base_url() const override { return "https://api.anthropic.com"; }
  bool base_url_is_endpoint() const override { return false; }
  bool streams() const override { return true; }
  bool agent_requests() const override { return true; }
  bool native_compaction() const override { return false; }

  std::string EndpointUrl(const ModelConfig& model) const override {
    return model.base_url + (model.base_url.ends_with("/v1") ? "/messages" : "/v1/messages");
  }

  Result<HttpRequest> BuildRequest(const ModelConfig& model, const LlmRequest& request,
                                   std::string_view api_key) const override {
    HttpRequest http = NewHttpRequest(model, EndpointUrl(model));
    http.body = DumpJson(Body(model, request));
    http.headers.emplace_back("anthropic-version", "2023-06-01");
    if (!api_key.empty()) http.headers.emplace_back("x-api-key", std::string(api_key));
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

  // {"type":"error","error":{"type":"invalid_request_error","message":...}}
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
      return Status::InvalidArgument("anthropic request: no \"messages\" array");
    }
    r.model = std::string(StringMember(doc, "model"));
    r.stream = BoolMember(doc, "stream");
    r.conversation = members["messages"];
    dom::element v;
    if (auto s = members.find("system"); s != members.end() && Member(doc, "system", &v)) {
      r.system = s->second;
      r.system_cache_breakpoints = CountMarkers(v);
    }
    if (auto t = members.find("tools"); t != members.end() && Member(doc, "tools", &v)) {
      r.tools = t->second;
      r.tools_cache_breakpoints = CountMarkers(v);
    }
    dom::element metadata, user;
    if (Member(doc, "metadata", &metadata) && Member(metadata, "user_id", &user) &&
        !user.is_null()) {
      r.hints["metadata.user_id"] = HintText(user);
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

  // The summary is a user message with a breakpoint (the value of the next
  // breakpoint, so TTLs stay in order), unless the system and tools already
  // hold all four; kept messages give up breakpoints, earliest first and the
  // last message's last, to stay within four.
  Result<std::string> RewriteClientRequest(const ClientRequest& request,
                                           const ClientRewrite& rewrite) const override {
    const std::vector<ClientItem>& items = request.items;
    std::vector<size_t> kept(rewrite.keep.begin(), rewrite.keep.end());
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    for (size_t i = rewrite.cut; i < items.size(); ++i) kept.push_back(i);
    const int fixed = request.system_cache_breakpoints + request.tools_cache_breakpoints;
    const bool summary_marker = fixed < kMaxBreakpoints;
    int total = fixed + (summary_marker ? 1 : 0);
    std::string marker;
    for (size_t i : kept) {
      if (i >= items.size()) continue;  // SpliceRewrite reports it
      total += items[i].cache_breakpoints;
      if (marker.empty() && items[i].cache_breakpoints > 0) {
        std::string_view content = internal::FindMember(request.Text(items[i]), "content");
        if (!content.empty() && content.front() == '[') marker = FirstMarker(content);
      }
    }
    if (marker.empty()) marker = R"({"type":"ephemeral"})";
    std::map<size_t, std::string> replaced;
    int excess = total - kMaxBreakpoints;
    for (size_t i : kept) {
      if (excess <= 0 || i >= items.size()) break;
      if (items[i].cache_breakpoints == 0) continue;
      replaced[i] = StripMarkers(request.Text(items[i]), excess);
    }
    std::string summary = R"({"role":"user","content":[{"type":"text","text":)";
    AppendJsString(summary, rewrite.summary);
    if (summary_marker) summary += R"(,"cache_control":)" + marker;
    summary += "}]}";
    return SpliceRewrite(request, rewrite, summary, replaced);
  }
};

}  // namespace

const ProviderApi& AnthropicMessagesApi() {
  static const AnthropicMessages api;
  return api;
}

}  // namespace compactor::providers
