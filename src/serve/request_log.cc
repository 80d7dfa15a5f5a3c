#include "serve/request_log.h"

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "compactor/js_json.h"
#include "providers/json_util.h"

namespace compactor::serve {
namespace {

std::string Tokens(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;  // stderr closed: nothing else to do with a log line
    off += static_cast<size_t>(n);
  }
}

// Microseconds as milliseconds with two decimals (truncated): 153.27.
double Millis(int64_t micros) {
  int64_t hundredths = micros / 10;
  return static_cast<double>(hundredths) / 100.0;
}

}  // namespace

std::string FormatHuman(const RequestRecord& r) {
  std::string line = fmt::format("{} {} {} in={} out={} compacted={} {}ms", r.method, r.path,
                                 r.status, Tokens(r.tokens_in), Tokens(r.tokens_out),
                                 r.compacted ? "yes" : "no", r.duration_us / 1000);
  if (r.compacted && r.tokens_before && r.tokens_after) {
    line += fmt::format(" tokens={}->{}", *r.tokens_before, *r.tokens_after);
  }
  if (r.attempts > 1) line += fmt::format(" attempts={}", r.attempts);
  if (r.client_closed) line += " client-closed";
  if (!r.error.empty()) line += " error=\"" + r.error + "\"";
  return line;
}

std::string FormatJson(const RequestRecord& r) {
  using Json = nlohmann::ordered_json;
  auto opt = [](const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  Json j;
  j["time"] = FormatIsoTimestamp(r.start_ms);
  j["method"] = r.method;
  j["path"] = r.path;
  j["route"] = r.route;
  j["api"] = r.api.empty() ? Json(nullptr) : Json(r.api);
  j["status"] = r.status;
  j["ms"] = Millis(r.duration_us);
  j["upstreamMs"] = r.upstream_us < 0 ? Json(nullptr) : Json(Millis(r.upstream_us));
  j["attempts"] = r.attempts;
  j["bytesIn"] = r.bytes_in;
  j["bytesOut"] = r.bytes_out;
  j["tokensIn"] = opt(r.tokens_in);
  j["tokensOut"] = opt(r.tokens_out);
  j["compacted"] = r.compacted;
  j["tokensBefore"] = opt(r.tokens_before);
  j["tokensAfter"] = opt(r.tokens_after);
  if (!r.session.empty()) j["session"] = r.session;
  j["clientClosed"] = r.client_closed;
  if (!r.error.empty()) j["error"] = r.error;
  for (const auto& [key, value] : r.extra) {
    Json v = Json::parse(value, nullptr, /*allow_exceptions=*/false);
    j[key] = v.is_discarded() ? Json(value) : v;
  }
  return DumpJson(j);
}

RequestLog::RequestLog(bool json, Sink sink) : json_(json), sink_(std::move(sink)) {}

void RequestLog::Write(const RequestRecord& r) {
  std::string line = json_ ? FormatJson(r) : FormatHuman(r);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  if (sink_) {
    sink_(line);
  } else {
    WriteAll(STDERR_FILENO, line);
  }
}

}  // namespace compactor::serve
