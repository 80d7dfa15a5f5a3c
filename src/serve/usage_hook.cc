#include "serve/usage_hook.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "util/json_scan.h"

namespace compactor::serve {
namespace {

// The usage an answer reports, as the API names it: every input token the
// model read, and the output tokens. A field absent from a later report
// keeps the earlier value (Anthropic's stream reports the input first, the
// output at the end).
struct Tokens {
  std::optional<int64_t> in, out;
};

// The integer value of member `key` of the object `json`, if it is one.
std::optional<int64_t> IntMember(std::string_view json, std::string_view key) {
  std::string_view v = internal::FindMember(json, key);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < 0) return std::nullopt;
  return n;
}

// The "usage" object of an answer or of a stream event: at the top level
// (non-stream answers, Anthropic's message_delta, Chat's last chunk), in
// "message" (Anthropic's message_start) or in "response" (the Responses
// API's response.completed). Found by scanning members, without parsing the
// rest of the text (a completed response carries the whole answer).
std::string_view UsageObject(std::string_view json) {
  for (std::string_view holder :
       {std::string_view(), std::string_view("message"), std::string_view("response")}) {
    std::string_view in = holder.empty() ? json : internal::FindMember(json, holder);
    std::string_view usage = in.empty() ? in : internal::FindMember(in, "usage");
    if (!usage.empty() && usage.front() == '{') return usage;
  }
  return {};
}

// Reads `usage` (an object) into `t`. Anthropic counts cache reads and writes
// apart from input_tokens; Responses' input_tokens and Chat's prompt_tokens
// include the cached ones.
void ReadUsage(std::string_view usage, Tokens* t) {
  if (auto prompt = IntMember(usage, "prompt_tokens")) t->in = prompt;  // Chat
  if (auto out = IntMember(usage, "completion_tokens")) t->out = out;
  if (auto input = IntMember(usage, "input_tokens")) {
    t->in = *input + IntMember(usage, "cache_read_input_tokens").value_or(0) +
            IntMember(usage, "cache_creation_input_tokens").value_or(0);
  }
  if (auto out = IntMember(usage, "output_tokens")) t->out = out;
}

class UsageExchange : public ExchangeHook {
 public:
  HeadVerdict OnResponseHead(Exchange& /*ex*/, const ResponseHead& head) override {
    ok_ = head.status / 100 == 2;
    stream_ = head.event_stream;
    body_.clear();
    line_.clear();
    too_long_ = false;
    tokens_ = Tokens();
    return HeadVerdict::kRelay;
  }

  bool wants_relayed() const override { return true; }

  void OnRelayed(Exchange& /*ex*/, std::string_view bytes) override {
    if (!ok_ || too_long_) return;
    if (stream_) {
      // Kept and scanned off the client's path: in OnComplete, or in
      // batches once a long stream piled up kScanBatch bytes (scanning each
      // piece as it went by was most of the proxy's own work on a piece).
      body_.append(bytes);
      if (body_.size() >= kScanBatch) ScanKept();
      return;
    }
    // A non-stream answer is kept (bounded) and read in OnComplete.
    if (body_.size() + bytes.size() > kMaxKept) {
      too_long_ = true;
      body_.clear();
      return;
    }
    body_.append(bytes);
  }

  void OnComplete(Exchange& ex) override {
    if (!ok_ || ex.record().status / 100 != 2) return;
    if (stream_) {
      ScanKept();
    } else {
      std::string_view usage = internal::FindMember(body_, "usage");
      if (!usage.empty() && usage.front() == '{') ReadUsage(usage, &tokens_);
    }
    if (tokens_.in) ex.record().tokens_in = tokens_.in;
    if (tokens_.out) ex.record().tokens_out = tokens_.out;
  }

 private:
  // A non-stream answer, or a line of a stream, longer than this is not read.
  static constexpr size_t kMaxKept = size_t{16} << 20;
  static constexpr std::string_view kUsage = "\"usage\"";
  static constexpr size_t kScanBatch = size_t{256} << 10;

  void ScanKept() {
    ScanStream(body_);
    body_.clear();
  }

  // The stream's lines are cut at '\n'; only the "data:" lines that mention
  // usage are read. The rest of a piece costs a search for the word and for
  // its last newline.
  void ScanStream(std::string_view bytes) {
    if (!line_.empty()) {  // a line begun in an earlier piece
      size_t nl = bytes.find('\n');
      if (nl == std::string_view::npos) return Keep(bytes);
      line_.append(bytes.substr(0, nl));
      OnLine(line_);
      line_.clear();
      bytes.remove_prefix(nl + 1);
    }
    size_t last = bytes.rfind('\n');
    std::string_view complete =
        last == std::string_view::npos ? std::string_view() : bytes.substr(0, last + 1);
    for (size_t at = complete.find(kUsage); at != std::string_view::npos;) {
      size_t b = complete.rfind('\n', at);
      b = b == std::string_view::npos ? 0 : b + 1;
      size_t e = complete.find('\n', at);
      OnLine(complete.substr(b, e - b));
      at = complete.find(kUsage, e + 1);
    }
    Keep(last == std::string_view::npos ? bytes : bytes.substr(last + 1));
  }

  void Keep(std::string_view partial) {
    if (line_.size() + partial.size() > kMaxKept) {
      too_long_ = true;
      line_.clear();
      return;
    }
    line_.append(partial);
  }

  void OnLine(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with("data:") || line.find(kUsage) == std::string_view::npos) return;
    line.remove_prefix(5);
    std::string_view usage = UsageObject(line);
    if (!usage.empty()) ReadUsage(usage, &tokens_);
  }

  bool ok_ = false;
  bool stream_ = false;
  bool too_long_ = false;
  std::string body_;  // a non-stream answer, or a stream's bytes not scanned yet
  std::string line_;  // a stream's unfinished line
  Tokens tokens_;
};

class UsageHook : public ProxyHook {
 public:
  std::unique_ptr<ExchangeHook> Begin(Exchange& ex) override {
    if (!IsConversationRequest(ex)) return nullptr;
    return std::make_unique<UsageExchange>();
  }
};

}  // namespace

bool IsGenerationRoute(std::string_view label) {
  return label == "/v1/messages" || label == "/v1/responses" || label == "/v1/chat/completions";
}

bool IsConversationRequest(Exchange& ex) {
  const ProxyRequest& req = ex.request();
  if (req.method != "POST" || req.route.api.empty() || !IsGenerationRoute(req.route.label))
    return false;
  if (ex.client_request_read()) {
    std::shared_ptr<const ClientRequestView> view = ex.client_request();
    return view != nullptr && !view->auxiliary;
  }
  return ex.declares_tools();
}

std::shared_ptr<ProxyHook> NewUsageHook() { return std::make_shared<UsageHook>(); }

}  // namespace compactor::serve
