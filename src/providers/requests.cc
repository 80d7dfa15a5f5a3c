// The provider-neutral request functions of providers.h: each goes through
// the model's API (provider_api.h); the rest is shared by every API.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "providers/stream.h"

namespace compactor {

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
  auto api = ApiOf(model);
  return api.ok() ? (*api)->EndpointUrl(model) : model.base_url;
}

Result<HttpRequest> BuildProviderRequest(const ModelConfig& model, const LlmRequest& request,
                                         std::string_view api_key) {
  COMPACTOR_ASSIGN_OR_RETURN(const ProviderApi* api, ApiOf(model));
  return api->BuildRequest(model, request, api_key);
}

Result<LlmResponse> ParseProviderResponse(const ModelConfig& model, std::string_view body) {
  COMPACTOR_ASSIGN_OR_RETURN(const ProviderApi* api, ApiOf(model));
  return api->ParseResponse(model, body);
}

Result<LlmResponse> ParseProviderStream(const ModelConfig& model, std::string_view sse_body) {
  providers::StreamDecoder decoder(model);
  decoder.Feed(sse_body);
  return decoder.Finish();
}

namespace {

constexpr size_t kMaxErrorBody = 4000;   // bytes of a JSON or text body echoed
constexpr size_t kMaxPageSummary = 200;  // bytes of an HTML page's summary
constexpr size_t kMinPartialSecret = 4;  // shorter key fragments say nothing

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

size_t FindCaseless(std::string_view text, std::string_view what, size_t from = 0) {
  if (what.size() > text.size()) return std::string_view::npos;
  for (size_t i = from; i + what.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < what.size() && Lower(text[i + k]) == what[k]) ++k;
    if (k == what.size()) return i;
  }
  return std::string_view::npos;
}

// Proxies and gateways answer with HTML pages; JSON and plain text are echoed.
bool LooksLikeHtml(std::string_view body) {
  if (body.empty() || body.front() != '<') return false;
  std::string_view head = body.substr(0, 512);
  return FindCaseless(head, "<!doctype html") != std::string_view::npos ||
         FindCaseless(head, "<html") != std::string_view::npos ||
         FindCaseless(head, "<head") != std::string_view::npos ||
         FindCaseless(head, "<title") != std::string_view::npos ||
         FindCaseless(head, "<body") != std::string_view::npos;
}

// The text between <tag ...> and </tag>, or empty.
std::string_view ElementText(std::string_view html, std::string_view open, std::string_view close) {
  size_t at = FindCaseless(html, open);
  if (at == std::string_view::npos) return {};
  size_t gt = html.find('>', at);
  if (gt == std::string_view::npos) return {};
  size_t end = FindCaseless(html, close, gt + 1);
  if (end == std::string_view::npos) return {};
  return html.substr(gt + 1, end - gt - 1);
}

// Markup removed, the common entities decoded, runs of white space made one
// space: a single readable line.
std::string CleanText(std::string_view html) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'},  {"&lt;", '<'},    {"&gt;", '>'},   {"&quot;", '"'},
      {"&#39;", '\''}, {"&apos;", '\''}, {"&nbsp;", ' '}, {"&#160;", ' '}};
  std::string out;
  bool in_tag = false;
  for (size_t i = 0; i < html.size(); ++i) {
    char c = html[i];
    if (in_tag) {
      in_tag = c != '>';
      if (!in_tag && !out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    if (c == '<') {
      in_tag = true;
      continue;
    }
    if (c == '&') {
      for (const auto& [name, ch] : kEntities) {
        if (FindCaseless(html.substr(i, name.size()), name) == 0) {
          c = ch;
          i += name.size() - 1;
          break;
        }
      }
    }
    if (c == ' ' || static_cast<unsigned char>(c) < 0x20) {  // white space, controls
      if (!out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence.
std::string CutUtf8(std::string text, size_t max) {
  if (text.size() <= max) return text;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  text.resize(n);
  return text + "...";
}

// An HTML error page as one line: its <title> (else <h1>, else its text).
std::string SummarizeHtml(std::string_view html) {
  std::string summary = CleanText(ElementText(html, "<title", "</title"));
  if (summary.empty()) summary = CleanText(ElementText(html, "<h1", "</h1"));
  if (summary.empty()) {
    std::string_view body = ElementText(html, "<body", "</body");
    if (body.empty()) body = html;
    summary = CleanText(body.substr(0, 64 * kMaxPageSummary));  // enough for the 200 bytes
  }
  if (summary.empty()) return "(HTML error page)";
  return CutUtf8(std::move(summary), kMaxPageSummary) + " (HTML error page)";
}

// Any line break of a non-JSON text body becomes a space: one line per error.
std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string DescribeHttpFailure(int status, std::string_view raw_body, std::string_view secret) {
  // The key goes before anything is cut or summarised, so no cut can leave a
  // part of it behind (and RedactSecret catches a key the transport cut).
  const std::string redacted = RedactSecret(std::string(raw_body), secret);
  std::string_view body = redacted;
  size_t b = body.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return std::to_string(status) + " status code (no body)";
  body = body.substr(b);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' ')) {
    body.remove_suffix(1);
  }
  std::string text;
  if (LooksLikeHtml(body)) {
    text = SummarizeHtml(body);
  } else if (body.front() == '{' || body.front() == '[') {
    text = CutUtf8(std::string(body), kMaxErrorBody);  // JSON as sent, pi style
  } else {
    text = CutUtf8(OneLine(body), kMaxErrorBody);
  }
  return RedactSecret(std::to_string(status) + " " + text, secret);
}

std::string RedactSecret(std::string text, std::string_view secret) {
  if (secret.size() < kMinPartialSecret) return text;
  constexpr std::string_view kMark = "[redacted]";
  size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), kMark);
    pos += kMark.size();
  }
  // A text cut inside the key (a capped body, a cut message) ends with the
  // key's beginning; "..." after it is a cut's own mark.
  std::string_view tail = text;
  if (tail.ends_with("...")) tail.remove_suffix(3);
  for (size_t n = std::min(secret.size() - 1, tail.size()); n >= kMinPartialSecret; --n) {
    if (tail.ends_with(secret.substr(0, n))) {
      text.replace(tail.size() - n, n, kMark);
      break;
    }
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
