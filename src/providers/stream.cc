// Server-sent events (any API) and the generic stream decoder; each API's
// events are read by its own ProviderStreamParser.
#include "providers/stream.h"

namespace compactor {

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
    event_.assign(value);  // the buffer of the last event, reused
  } else if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  }
}

namespace providers {

StreamDecoder::StreamDecoder(const ModelConfig& model) {
  auto api = ApiOf(model);
  if (api.ok()) {
    parser_ = (*api)->NewStreamParser(model);
  } else {
    unknown_api_ = api.status();
  }
}

void StreamDecoder::Feed(std::string_view chunk) {
  sse_.Feed(chunk, [this](std::string_view e, std::string_view d) { OnEvent(e, d); });
}

void StreamDecoder::OnEvent(std::string_view event, std::string_view data) {
  ++events_;
  if (parser_) parser_->OnEvent(event, data);
}

Result<LlmResponse> StreamDecoder::Finish() {
  sse_.Flush([this](std::string_view e, std::string_view d) { OnEvent(e, d); });
  if (!parser_) return unknown_api_;
  return parser_->Finish();
}

}  // namespace providers
}  // namespace compactor
