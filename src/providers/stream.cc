// Streamed responses: Chat Completions chunks (data: {...}, data: [DONE]),
// Anthropic message events (message_start ... message_stop) and Responses
// events (response.output_text.delta ... response.completed).
#include "providers/stream.h"

#include <nlohmann/json.hpp>

#include "providers/json_util.h"

namespace compactor::providers {
namespace {

using Json = nlohmann::ordered_json;

int64_t IntAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  return it->get<int64_t>();
}

std::string StringAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::string ErrorMessage(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  std::string m = StringAt(error, "message");
  return m.empty() ? DumpJson(error) : m;
}

// Error types a stream may report mid-way that are worth a retry.
bool TransientErrorType(std::string_view type) {
  return type == "overloaded_error" || type == "api_error" || type == "rate_limit_error" ||
         type == "server_error" || type == "timeout_error";
}

}  // namespace

void SseParser::Feed(std::string_view chunk, const Handler& on_event) {
  buffer_.append(chunk);
  size_t start = 0;
  while (true) {
    size_t nl = buffer_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(buffer_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line, on_event);
    start = nl + 1;
  }
  buffer_.erase(0, start);
}

void SseParser::Flush(const Handler& on_event) {
  if (!buffer_.empty()) {
    std::string rest = std::move(buffer_);
    buffer_.clear();
    Line(rest, on_event);
  }
  Line("", on_event);
}

void SseParser::Line(std::string_view line, const Handler& on_event) {
  if (line.empty()) {
    if (has_data_) on_event(event_, data_);
    event_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment / keep-alive
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    event_ = std::string(value);
  } else if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  }
}

void StreamDecoder::Feed(std::string_view chunk) {
  parser_.Feed(chunk, [this](std::string_view e, std::string_view d) { OnEvent(e, d); });
}

void StreamDecoder::OnEvent(std::string_view, std::string_view data) {
  ++events_;
  if (done_) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  Json j = Json::parse(data.begin(), data.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;  // tolerate junk lines
  std::string type = StringAt(j, "type");

  if (type == "error" || (j.contains("error") && !j["error"].is_null() && type.empty())) {
    const Json& err = j.contains("error") ? j["error"] : j;
    response_.stop_reason = "error";
    response_.error_message = ErrorMessage(err);
    response_.transient = TransientErrorType(StringAt(err, "type"));
    done_ = true;
    return;
  }

  switch (model_.provider) {
    case ProviderKind::kOpenAiChat: {
      if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
        int64_t cached = 0;
        if (auto d = u->find("prompt_tokens_details"); d != u->end()) {
          cached = IntAt(*d, "cached_tokens");
        }
        response_.usage.input = IntAt(*u, "prompt_tokens") - cached;
        response_.usage.cache_read = cached;
        response_.usage.output = IntAt(*u, "completion_tokens");
      }
      auto choices = j.find("choices");
      if (choices == j.end() || !choices->is_array() || choices->empty()) return;
      const Json& c = (*choices)[0];
      if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
        deltas_ += StringAt(*d, "content");
        if (auto tc = d->find("tool_calls"); tc != d->end() && tc->is_array()) {
          for (const Json& piece : *tc) {
            LlmToolCall& call = calls_[static_cast<int>(IntAt(piece, "index"))];
            if (std::string id = StringAt(piece, "id"); !id.empty()) call.id = id;
            const Json& f = piece.value("function", Json::object());
            if (std::string name = StringAt(f, "name"); !name.empty()) call.name = name;
            call.arguments_json += StringAt(f, "arguments");
          }
        }
      }
      std::string finish = StringAt(c, "finish_reason");
      if (!finish.empty()) {
        finish_seen_ = true;
        if (finish == "stop" || finish == "eos") {
          response_.stop_reason = "stop";
        } else if (finish == "length") {
          response_.stop_reason = "length";
        } else if (finish == "tool_calls" || finish == "function_call") {
          response_.stop_reason = "toolUse";
        } else {
          response_.stop_reason = "error";
          response_.error_message = "Provider finish_reason: " + finish;
        }
      }
      return;
    }
    case ProviderKind::kAnthropic: {
      if (type == "message_start") {
        const Json& u =
            j.contains("message") ? j["message"].value("usage", Json::object()) : Json::object();
        response_.usage.input = IntAt(u, "input_tokens");
        response_.usage.output = IntAt(u, "output_tokens");
        response_.usage.cache_read = IntAt(u, "cache_read_input_tokens");
        response_.usage.cache_write = IntAt(u, "cache_creation_input_tokens");
      } else if (type == "content_block_start") {
        const Json& block = j.value("content_block", Json::object());
        if (StringAt(block, "type") == "text") {
          blocks_[static_cast<int>(IntAt(j, "index"))] = StringAt(block, "text");
        } else if (StringAt(block, "type") == "tool_use") {
          LlmToolCall& call = calls_[static_cast<int>(IntAt(j, "index"))];
          call.id = StringAt(block, "id");
          call.name = StringAt(block, "name");
        }
      } else if (type == "content_block_delta") {
        const Json& delta = j.value("delta", Json::object());
        auto it = blocks_.find(static_cast<int>(IntAt(j, "index")));
        if (StringAt(delta, "type") == "text_delta" && it != blocks_.end()) {
          it->second += StringAt(delta, "text");
        } else if (StringAt(delta, "type") == "input_json_delta") {
          auto call = calls_.find(static_cast<int>(IntAt(j, "index")));
          if (call != calls_.end()) call->second.arguments_json += StringAt(delta, "partial_json");
        }
      } else if (type == "message_delta") {
        std::string stop = StringAt(j.value("delta", Json::object()), "stop_reason");
        if (!stop.empty()) {
          if (stop == "end_turn" || stop == "stop_sequence" || stop == "pause_turn") {
            response_.stop_reason = "stop";
          } else if (stop == "max_tokens") {
            response_.stop_reason = "length";
          } else if (stop == "tool_use") {
            response_.stop_reason = "toolUse";
          } else {
            response_.stop_reason = "error";
            response_.error_message = "Provider stop_reason: " + stop;
          }
        }
        if (auto u = j.find("usage");
            u != j.end() && u->is_object() && u->contains("output_tokens")) {
          response_.usage.output = IntAt(*u, "output_tokens");
        }
      } else if (type == "message_stop") {
        done_ = true;
      }
      return;
    }
    case ProviderKind::kOpenAiResponses: {
      if (type == "response.output_text.delta") {
        deltas_ += StringAt(j, "delta");
      } else if (type == "response.completed" || type == "response.incomplete" ||
                 type == "response.failed") {
        if (auto r = j.find("response"); r != j.end() && r->is_object()) {
          auto parsed = ParseProviderResponse(model_, DumpJson(*r));
          if (parsed.ok()) full_ = std::move(parsed).value();
        }
        done_ = true;
      }
      return;
    }
    case ProviderKind::kRemote:
      return;
  }
}

Result<LlmResponse> StreamDecoder::Finish() {
  parser_.Flush([this](std::string_view e, std::string_view d) { OnEvent(e, d); });
  std::string api(ProviderKindName(model_.provider));
  if (response_.stop_reason == "error" && done_) return response_;
  bool complete = done_ || (model_.provider == ProviderKind::kOpenAiChat && finish_seen_);
  if (events_ == 0) return Status::Unavailable(api + ": malformed response (empty stream)");
  if (!complete) {
    return Status::Unavailable(api + ": stream ended before the response was complete");
  }
  if (full_) return *full_;
  LlmResponse out = response_;
  if (model_.provider == ProviderKind::kAnthropic) {
    out.text.clear();
    bool first = true;
    for (const auto& [index, text] : blocks_) {
      if (!first) out.text += "\n";
      first = false;
      out.text += text;
    }
  } else {
    out.text = deltas_;
  }
  for (auto& [index, call] : calls_) {
    // A call streamed without arguments (anthropic sends none for an empty input).
    if (call.arguments_json.empty()) call.arguments_json = "{}";
    out.tool_calls.push_back(std::move(call));
  }
  if (out.stop_reason.empty()) out.stop_reason = "stop";
  return out;
}

}  // namespace compactor::providers
