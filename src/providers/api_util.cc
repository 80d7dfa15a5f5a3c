#include "providers/api_util.h"

#include <algorithm>

#include "util/json_scan.h"

namespace compactor::providers {

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
  Result<Json> args = internal::ParseJsonWithinLimit<Json>(text);
  if (!args.ok() || !args->is_object()) return Json::object();
  return std::move(args).value();
}

Json ToolSchema(const LlmTool& tool) {
  Result<Json> schema = internal::ParseJsonWithinLimit<Json>(tool.parameters_json);
  if (!schema.ok() || !schema->is_object()) {
    return {{"type", "object"}, {"properties", Json::object()}};
  }
  return std::move(schema).value();
}

HttpRequest NewHttpRequest(const ModelConfig& model, std::string url) {
  HttpRequest http;
  http.url = std::move(url);
  http.timeout_ms = model.timeout_ms;
  http.connect_timeout_ms = model.connect_timeout_ms;
  http.headers.emplace_back("content-type", "application/json");
  for (const auto& [k, v] : model.headers) http.headers.emplace_back(k, v);
  return http;
}

void AddBearer(HttpRequest& http, std::string_view api_key) {
  if (!api_key.empty())
    http.headers.emplace_back("authorization", "Bearer " + std::string(api_key));
}

int64_t IntAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  // A count outside int64_t (4e87 tokens, 2^64 - 1) means nothing, and
  // converting it would be undefined (a float) or wrap negative (an
  // unsigned): it reads as absent, like any other non-count.
  if (it->is_number_float()) {
    double d = it->get<double>();
    constexpr double kLimit = 9.2e18;  // just under 2^63
    return d > -kLimit && d < kLimit ? static_cast<int64_t>(d) : 0;
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}) return 0;
  return it->get<int64_t>();
}

std::string StringAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

const Json& ObjectAt(const Json& obj, const char* key) {
  static const Json* const kEmpty = new Json(Json::object());
  if (!obj.is_object()) return *kEmpty;
  auto it = obj.find(key);
  return it == obj.end() || !it->is_object() ? *kEmpty : *it;
}

namespace {

// Error types a stream may report mid-way that are worth a retry.
bool TransientErrorType(std::string_view type) {
  return type == "overloaded_error" || type == "api_error" || type == "rate_limit_error" ||
         type == "server_error" || type == "timeout_error";
}

}  // namespace

bool IsTransientError(const Json& error) {
  // Anthropic names the kind in "type"; the Responses API's in-stream error
  // event has "type":"error" and names it in "code" (as its error objects do).
  return error.is_object() && (TransientErrorType(StringAt(error, "type")) ||
                               TransientErrorType(StringAt(error, "code")));
}

std::string ErrorText(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object()) {
    auto it = error.find("message");
    if (it != error.end() && it->is_string()) return it->get<std::string>();
  }
  return DumpJson(error);
}

std::string ArgumentsText(const Json& holder) {
  auto a = holder.find("arguments");
  if (a == holder.end() || a->is_null()) return "{}";
  return a->is_string() ? a->get<std::string>() : DumpJson(*a);
}

Status Malformed(const ModelConfig& model, std::string_view what) {
  return Status::Unavailable(model.api + ": malformed response (" + std::string(what) + ")");
}

Result<Json> ParseObjectBody(const ModelConfig& model, std::string_view body) {
  Result<Json> doc = internal::ParseJsonWithinLimit<Json>(body);
  if (!doc.ok()) return Malformed(model, doc.status().message());
  if (!doc->is_object()) return Malformed(model, "not a JSON object");
  return doc;
}

namespace {

// A stream error event's text: a string, else a non-empty "message", else its JSON.
std::string StreamErrorText(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  std::string m = StringAt(error, "message");
  return m.empty() ? DumpJson(error) : m;
}

bool IsRetryableStatus(int status) {
  return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

}  // namespace

OverflowVerdict ClassifyErrorText(std::string_view text, int http_status) {
  OverflowInput in;
  in.stop_reason = "error";
  in.error_message = text;
  in.http_status = http_status;
  return ClassifyOverflow(in);
}

StreamEventInfo StreamParserBase::OnEvent(std::string_view, std::string_view data) {
  StreamEventInfo info;
  ++events_;
  if (done_) return info;
  if (data == "[DONE]") {
    done_ = true;
    info.complete = true;
    return info;
  }
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(data);
  if (!parsed.ok() && parsed.status().code() == StatusCode::kUnsupported) {
    // Too deep is not junk to skip: the rest of the response may be in it.
    response_.stop_reason = "error";
    response_.error_message =
        api_ + ": malformed response (an event's " + parsed.status().message() + ")";
    done_ = true;
    info.error = true;
    info.error_message = response_.error_message;
    info.stop_reason = "error";
    return info;
  }
  if (!parsed.ok() || !parsed->is_object()) return info;  // tolerate junk lines
  Json& j = *parsed;
  std::string type = StringAt(j, "type");
  if (type == "error" || (j.contains("error") && !j["error"].is_null() && type.empty())) {
    const Json& err = j.contains("error") ? j["error"] : j;
    response_.stop_reason = "error";
    response_.error_message = StreamErrorText(err);
    response_.transient = IsTransientError(err);
    done_ = true;
    info.error = true;
    info.error_message = response_.error_message;
    info.transient = response_.transient;
    info.overflow = ClassifyErrorText(info.error_message);
    info.stop_reason = "error";
    return info;
  }
  try {
    OnJson(j, type, info);
  } catch (const Json::exception&) {
    // A field of an unexpected type that a parser read without checking: the
    // event is junk, as an unparsable line is (a hostile or broken upstream
    // must not end the process).
    return info;
  }
  if (info.usage_reported) info.usage = response_.usage;
  return info;
}

void StreamParserBase::ContentStarted(StreamEventInfo& info) {
  if (content_started_) return;
  content_started_ = true;
  info.content_started = true;
}

Result<LlmResponse> StreamParserBase::Finish() {
  if (response_.stop_reason == "error" && done_) return response_;
  bool complete = done_ || CompleteWithoutMarker();
  if (events_ == 0) return Status::Unavailable(api_ + ": malformed response (empty stream)");
  if (!complete) {
    return Status::Unavailable(api_ + ": stream ended before the response was complete");
  }
  LlmResponse out = Assemble();
  if (out.stop_reason.empty()) out.stop_reason = "stop";
  return out;
}

ProviderError HttpError(int status, std::string_view body, std::string type, std::string detail) {
  ProviderError e;
  e.message = DescribeHttpFailure(status, body);
  e.type = std::move(type);
  e.detail = std::move(detail);
  e.overflow = ClassifyErrorText(e.message, status);
  if (e.overflow.overflow || e.overflow.payload) return e;
  e.auth = status == 401 || status == 403;
  e.retryable = !e.auth && IsRetryableStatus(status);
  return e;
}

void ReadErrorFields(std::string_view body, std::string* type, std::string* detail) {
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(body);
  if (!parsed.ok() || !parsed->is_object()) return;
  const Json& doc = *parsed;
  auto it = doc.find("error");
  if (it == doc.end() || it->is_null()) return;
  if (it->is_string()) {
    *detail = it->get<std::string>();
    return;
  }
  *type = StringAt(*it, "type");
  if (std::string code = StringAt(*it, "code"); !code.empty()) *type = code;
  *detail = StringAt(*it, "message");
}

}  // namespace compactor::providers
