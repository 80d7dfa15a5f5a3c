// The call policy: retries with backoff (Retry-After honoured), candidate
// fallback and the summarizer-overflow shrink loop (docs/providers.md).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "compactor/summarizer.h"
#include "providers/stream.h"

namespace compactor {
namespace {

using std::chrono::milliseconds;

// Streamed bytes kept for error reporting and the non-SSE fallback.
constexpr size_t kMaxRawBody = 8 << 20;

// Retry-After as seconds (possibly fractional) or an HTTP date; OpenAI's
// retry-after-ms wins when present.
std::optional<milliseconds> ParseRetryAfter(const std::map<std::string, std::string>& headers,
                                            std::chrono::system_clock::time_point now) {
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && v >= 0 && std::isfinite(v)) {
      return milliseconds(static_cast<int64_t>(std::ceil(v)));
    }
  }
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  const std::string& value = it->second;
  char* end = nullptr;
  double secs = std::strtod(value.c_str(), &end);
  if (end != value.c_str() && *end == '\0' && secs >= 0 && std::isfinite(secs)) {
    return milliseconds(static_cast<int64_t>(std::ceil(secs * 1000)));
  }
  std::tm tm{};
  if (strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) != nullptr) {
    auto when = std::chrono::system_clock::from_time_t(timegm(&tm));
    auto diff = std::chrono::duration_cast<milliseconds>(when - now);
    return std::max(diff, milliseconds(0));
  }
  return std::nullopt;
}

std::string Prefix(const ModelConfig& model) {
  return "model " + model.name + " (" + model.api + "): ";
}

}  // namespace

int64_t EstimateRequestTokens(const LlmRequest& req) {
  int64_t tokens = EstimateTextTokens(req.system_prompt);
  for (const LlmMessage& m : req.messages) {
    for (const LlmPart& p : m.parts) {
      // pi counts an image as 4800 characters.
      tokens += p.kind == LlmPart::Kind::kText ? EstimateTextTokens(p.text) : 1200;
    }
    for (const LlmToolCall& c : m.tool_calls) {
      tokens += EstimateTextTokens(c.name) + EstimateTextTokens(c.arguments_json);
    }
  }
  return tokens;
}

namespace {

// The largest prefix of `s` not splitting a UTF-8 sequence, at most n bytes.
size_t Utf8Floor(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

constexpr std::string_view kOmittedMarker =
    "[... earlier conversation omitted to fit the summarizer's context window ...]\n\n";

}  // namespace

void WindowMemory::RecordOverflow(const std::string& model, int64_t failed_tokens) {
  int64_t learned = LearnedWindowFromOverflow(failed_tokens);
  if (learned <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(model);
  if (it == windows_.end() || learned < it->second) windows_[model] = learned;
}

std::optional<int64_t> WindowMemory::Get(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(model);
  if (it == windows_.end()) return std::nullopt;
  return it->second;
}

bool CallOptions::Cancelled() const {
  return (cancel_flag != nullptr && cancel_flag->load(std::memory_order_relaxed)) ||
         (is_cancelled && is_cancelled());
}

Result<std::string> ReadApiKey(const ModelConfig& model, const CallOptions& options) {
  if (model.api_key_env.empty()) return std::string();
  std::optional<std::string> value = EnvOrDefault(options.env)->GetEnvVar(model.api_key_env);
  if (!value || value->empty()) {
    return Status::FailedPrecondition(Prefix(model) + "environment variable " + model.api_key_env +
                                      " is not set (it must hold the API key)");
  }
  return std::move(*value);
}

CallOutcome CallModel(const ModelConfig& model, const LlmRequest& request,
                      const CallOptions& options) {
  CallOutcome out;
  std::shared_ptr<HttpTransport> transport =
      options.transport ? options.transport : NewCurlTransport();
  Env* env = EnvOrDefault(options.env);
  std::function<bool()> cancelled = [&options] { return options.Cancelled(); };

  // The key is read now, used for this call only, and never stored.
  Result<std::string> key_or = ReadApiKey(model, options);
  if (!key_or.ok()) {
    out.result = key_or.status();
    out.failure.auth = true;
    return out;
  }
  std::string key = std::move(key_or).value();
  auto built = BuildProviderRequest(model, request, key);
  if (!built.ok()) {
    out.result = built.status();
    return out;
  }
  HttpRequest http = std::move(built).value();
  const ProviderApi& api = **ApiOf(model);  // known: it built the request
  const bool streaming = model.stream && api.streams();
  http.cancel_flag = options.cancel_flag;
  http.is_cancelled = options.is_cancelled;

  for (int attempt = 0;; ++attempt) {
    if (cancelled()) {
      out.result = Status::Cancelled(Prefix(model) + "request cancelled");
      return out;
    }
    out.attempts = attempt + 1;
    CallFailure failure;
    Status status;
    // Streaming: events are decoded as they arrive; the raw bytes are kept
    // (bounded) in case the answer is an error body or plain JSON after all.
    std::optional<providers::StreamDecoder> decoder;
    std::string raw;
    if (streaming) {
      decoder.emplace(model);
      http.on_data = [&decoder, &raw](std::string_view chunk) {
        decoder->Feed(chunk);
        if (raw.size() < kMaxRawBody) raw.append(chunk.substr(0, kMaxRawBody - raw.size()));
        return true;
      };
    }
    auto sent = transport->Send(http);
    if (sent.ok() && streaming) sent->body = raw;
    if (!sent.ok()) {
      if (sent.status().code() == StatusCode::kCancelled || cancelled()) {
        out.result = Status::Cancelled(Prefix(model) + "request cancelled");
        out.failure = {};
        return out;
      }
      status = Status::Unavailable(Prefix(model) + RedactSecret(sent.status().message(), key));
      failure.retryable = true;
    } else if (sent->status >= 200 && sent->status < 300) {
      auto parsed = streaming && decoder->saw_events() ? decoder->Finish()
                                                       : ParseProviderResponse(model, sent->body);
      if (!parsed.ok()) {
        status = Status::Unavailable(Prefix(model) + RedactSecret(parsed.status().message(), key));
        failure.retryable = true;
      } else {
        LlmResponse r = std::move(parsed).value();
        r.http_status = sent->status;
        OverflowInput in;
        in.stop_reason = r.stop_reason;
        in.error_message = r.error_message;
        in.input = static_cast<double>(r.usage.input);
        in.output = static_cast<double>(r.usage.output);
        in.cache_read = static_cast<double>(r.usage.cache_read);
        in.cache_write = static_cast<double>(r.usage.cache_write);
        OverflowVerdict v = ClassifyOverflow(in, model.context_window);
        if (v.overflow || v.payload) {
          failure.overflow = v;
          std::string why =
              !r.error_message.empty()
                  ? r.error_message
                  : "usage " +
                        std::to_string(r.usage.input + r.usage.cache_read + r.usage.cache_write) +
                        " tokens exceeds the context window of " +
                        std::to_string(model.context_window);
          status =
              Status::Unavailable(Prefix(model) + "context overflow: " + RedactSecret(why, key));
        } else if (r.stop_reason == "error") {
          status = Status::Unavailable(Prefix(model) + RedactSecret(r.error_message, key));
          failure.retryable = r.transient;
        } else {
          if (options.on_attempt) options.on_attempt(model.name, attempt, Status::Ok());
          out.result = std::move(r);
          out.failure = {};
          return out;
        }
      }
    } else {
      ProviderError e = api.ReadError(sent->status, RedactSecret(sent->body, key));
      const std::string& desc = e.message;
      failure.http_status = sent->status;
      failure.retry_after = ParseRetryAfter(
          sent->headers, std::chrono::system_clock::time_point(milliseconds(env->NowMs())));
      if (e.overflow.overflow || e.overflow.payload) failure.overflow = e.overflow;
      failure.auth = e.auth;
      failure.retryable = e.retryable;
      status = Status::Unavailable(Prefix(model) + desc);
    }
    if (options.on_attempt) options.on_attempt(model.name, attempt, status);
    out.result = status;
    out.failure = failure;
    if (!failure.retryable || attempt >= options.retry.max_retries) return out;
    milliseconds wait = failure.retry_after
                            ? *failure.retry_after
                            : options.retry.base_delay * (int64_t{1} << std::min(attempt, 20));
    if (wait > options.retry.max_wait) {
      out.failure.wait_too_long = true;
      out.result =
          Status::Unavailable(status.message() + " (retry in " +
                              std::to_string(wait.count() / 1000) + " s exceeds the wait limit)");
      return out;
    }
    if (!env->SleepMs(wait.count(), cancelled)) {
      out.result = Status::Cancelled(Prefix(model) + "request cancelled");
      out.failure = {};
      return out;
    }
  }
}

ShrinkFunction DefaultShrinker(const SummaryRequestText& original) {
  return [original](double fraction) -> Result<SummaryRequestText> {
    if (!(fraction > 0 && fraction < 1)) {
      return Status::InvalidArgument("shrink fraction must be in (0, 1)");
    }
    SummaryRequestText out = original;
    const std::string& prompt = original.user_prompt;
    size_t target = static_cast<size_t>(std::floor(fraction * static_cast<double>(prompt.size())));
    constexpr std::string_view kOpen = "<conversation>\n";
    constexpr std::string_view kClose = "\n</conversation>";
    size_t close = prompt.find(kClose);
    if (prompt.starts_with(kOpen) && close != std::string::npos) {
      // Keep the newest part of the conversation: it matters most to whoever
      // continues the work, and the instructions after the tags stay whole.
      std::string_view body(prompt.data() + kOpen.size(), close - kOpen.size());
      size_t overhead = prompt.size() - body.size() + kOmittedMarker.size();
      if (target <= overhead) {
        return Status::FailedPrecondition("summarizer input cannot shrink further");
      }
      size_t keep = std::min(body.size(), target - overhead);
      size_t start = body.size() - keep;
      while (start < body.size() && (static_cast<unsigned char>(body[start]) & 0xC0) == 0x80) {
        ++start;
      }
      // Prefer to start at a part boundary ("\n\n[") when one is near.
      size_t boundary = body.find("\n\n[", start);
      if (boundary != std::string_view::npos && boundary - start < keep / 4) start = boundary + 2;
      out.user_prompt = std::string(kOpen) + std::string(kOmittedMarker) +
                        std::string(body.substr(start)) + prompt.substr(close);
      return out;
    }
    if (target < 64) return Status::FailedPrecondition("summarizer input cannot shrink further");
    constexpr std::string_view kCut = "\n\n[... middle omitted to fit the context window ...]\n\n";
    size_t half = (target - std::min(target, kCut.size())) / 2;
    size_t head = Utf8Floor(prompt, half);
    size_t tail_start = prompt.size() - half;
    while (tail_start < prompt.size() &&
           (static_cast<unsigned char>(prompt[tail_start]) & 0xC0) == 0x80) {
      ++tail_start;
    }
    out.user_prompt = prompt.substr(0, head) + std::string(kCut) + prompt.substr(tail_start);
    return out;
  };
}

namespace {

LlmRequest ToLlmRequest(const SummaryRequestText& text) {
  LlmRequest req;
  req.system_prompt = text.system_prompt;
  req.messages.push_back(LlmMessage::UserText(text.user_prompt));
  req.max_tokens = text.max_tokens;
  req.thinking_level = text.thinking_level;
  return req;
}

Status AcceptSummary(const ModelConfig& model, const LlmResponse& r) {
  if (r.stop_reason == "length") {
    return Status::Unavailable(Prefix(model) +
                               "summary was cut off by the output token limit (unusable)");
  }
  if (r.text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::Unavailable(Prefix(model) + "summary is empty");
  }
  return Status::Ok();
}

}  // namespace

Result<LlmResponse> CompleteWithRecovery(std::span<const ModelConfig> candidates,
                                         const LlmRequest& original, const CallOptions& options,
                                         const RequestShrinker& shrink,
                                         const ResponseAcceptor& accept) {
  if (candidates.empty()) return Status::InvalidArgument("no model configured");
  const int64_t original_tokens = EstimateRequestTokens(original);
  Status last = Status::Unavailable("no model answered");

  for (const ModelConfig& model : candidates) {
    if (options.Cancelled()) return Status::Cancelled("request cancelled");
    LlmRequest request = original;
    // A window learned from an earlier overflow shrinks the input up front.
    if (options.windows && shrink) {
      if (auto learned = options.windows->Get(model.name);
          learned && original_tokens > *learned && original_tokens > 0) {
        auto smaller = shrink(static_cast<double>(*learned) / static_cast<double>(original_tokens));
        if (smaller.ok()) {
          request = std::move(smaller).value();
          StripImagesToMarkers(request);
        }
      }
    }
    size_t shrinks = 0;
    while (true) {
      CallOutcome outcome = CallModel(model, request, options);
      if (outcome.result.ok()) {
        Status accepted = accept ? accept(model, *outcome.result) : Status::Ok();
        if (accepted.ok()) return std::move(outcome.result).value();
        last = accepted;
        break;  // an unusable answer: the next candidate may do better
      }
      Status st = outcome.result.status();
      if (st.code() == StatusCode::kCancelled) return st;
      last = st;
      const OverflowVerdict& v = outcome.failure.overflow;
      if (!(v.overflow || v.payload)) break;  // auth, long wait, exhausted retries, other errors
      if (v.overflow && options.windows) {
        options.windows->RecordOverflow(model.name, EstimateRequestTokens(request));
      }
      if (shrinks >= std::size(kShrinkFractions) || !shrink) {
        last = Status::Unavailable(st.message() + " (still too large after " +
                                   std::to_string(shrinks) + " smaller attempts)");
        break;
      }
      double fraction = kShrinkFractions[shrinks++];
      auto smaller = shrink(fraction);
      if (!smaller.ok()) {
        last = Status::Unavailable(st.message() + " (" + smaller.status().message() + ")");
        break;
      }
      request = std::move(smaller).value();
      // Media is what byte-size rejections are about, and a summarizer gains
      // little from pixels: markers keep the position without the bytes.
      StripImagesToMarkers(request);
    }
  }
  return last;
}

Result<std::string> CompleteSummary(std::span<const ModelConfig> candidates,
                                    const SummaryRequestText& text, const CallOptions& options,
                                    const ShrinkFunction& shrink_in) {
  if (candidates.empty()) return Status::InvalidArgument("no summarizer model configured");
  ShrinkFunction shrink = shrink_in ? shrink_in : DefaultShrinker(text);
  RequestShrinker request_shrink = [&shrink](double fraction) -> Result<LlmRequest> {
    COMPACTOR_ASSIGN_OR_RETURN(SummaryRequestText smaller, shrink(fraction));
    return ToLlmRequest(smaller);
  };
  COMPACTOR_ASSIGN_OR_RETURN(LlmResponse response,
                             CompleteWithRecovery(candidates, ToLlmRequest(text), options,
                                                  request_shrink, &AcceptSummary));
  return std::move(response.text);
}

}  // namespace compactor
