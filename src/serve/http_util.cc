#include "serve/http_util.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "providers/json_util.h"

namespace compactor::serve {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool ParsePort(std::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0 || v > 65535) return false;
  *port = v;
  return true;
}

// Query parameter names whose values are credentials in some API or other.
bool SecretName(std::string_view name) {
  std::string n = ToLower(name);
  static constexpr std::array<std::string_view, 7> kWords = {
      "key", "token", "secret", "auth", "password", "signature", "sig"};
  return std::any_of(kWords.begin(), kWords.end(),
                     [&](std::string_view w) { return n.find(w) != std::string::npos; });
}

std::string_view AnthropicErrorType(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    default:
      return status < 500 ? "invalid_request_error" : "api_error";
  }
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

std::string_view HeaderValue(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return {};
}

bool HasHeader(const HeaderList& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return EqualsIgnoreCase(h.first, name); });
}

void RemoveHeader(HeaderList& headers, std::string_view name) {
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [&](const auto& h) { return EqualsIgnoreCase(h.first, name); }),
                headers.end());
}

bool IsHopByHop(std::string_view name, const std::vector<std::string>& connection_tokens) {
  static constexpr std::array<std::string_view, 6> kFixed = {
      "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"};
  for (std::string_view f : kFixed) {
    if (EqualsIgnoreCase(name, f)) return true;
  }
  if (StartsWithIgnoreCase(name, "proxy-")) return true;
  return std::any_of(connection_tokens.begin(), connection_tokens.end(),
                     [&](const std::string& t) { return EqualsIgnoreCase(name, t); });
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls `fn` with each item of a comma-separated list, trimmed; stops when
// it returns true, and says whether it did.
template <typename Fn>
bool AnyListItem(std::string_view list, Fn&& fn) {
  while (true) {
    size_t comma = list.find(',');
    if (fn(TrimOws(list.substr(0, comma)))) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

bool ListHasToken(std::string_view value, std::string_view token) {
  return AnyListItem(value, [&](std::string_view item) { return EqualsIgnoreCase(item, token); });
}

std::vector<std::string> ConnectionTokens(const HeaderList& headers) {
  std::vector<std::string> tokens;
  for (const auto& [n, v] : headers) {
    if (!EqualsIgnoreCase(n, "connection")) continue;
    AnyListItem(v, [&](std::string_view token) {
      if (!token.empty()) tokens.push_back(ToLower(token));
      return false;
    });
  }
  return tokens;
}

HeaderList EndToEnd(const HeaderList& headers) {
  std::vector<std::string> tokens = ConnectionTokens(headers);
  HeaderList out;
  out.reserve(headers.size());
  for (const auto& h : headers) {
    if (!IsHopByHop(h.first, tokens)) out.push_back(h);
  }
  return out;
}

Result<ListenAddress> ParseListen(std::string_view text) {
  ListenAddress a;
  size_t colon;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("--listen \"" + std::string(text) +
                                     "\": expected [IPV6]:PORT");
    }
    a.host = std::string(text.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::InvalidArgument("--listen \"" + std::string(text) + "\": expected HOST:PORT");
    }
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) {
      return Status::InvalidArgument("--listen \"" + std::string(text) +
                                     "\": write IPv6 addresses as [ADDRESS]:PORT");
    }
  }
  if (a.host.empty() || !ParsePort(text.substr(colon + 1), &a.port)) {
    return Status::InvalidArgument("--listen \"" + std::string(text) +
                                   "\": expected HOST:PORT with a port from 0 to 65535");
  }
  return a;
}

bool IsLoopbackHost(std::string_view host) {
  if (EqualsIgnoreCase(host, "localhost")) return true;
  std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    static const in6_addr kLoop = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoop.s6_addr));
  }
  return false;
}

Result<std::string> NormalizeUpstream(std::string_view url) {
  std::string u(TrimOws(url));
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("upstream \"" + RedactUrl(u) + "\": " + std::string(why));
  };
  size_t scheme_end = u.find("://");
  if (scheme_end == std::string::npos) return bad("expected http://HOST[:PORT][/PATH]");
  std::string scheme = ToLower(std::string_view(u).substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") return bad("only http and https are supported");
  if (u.find_first_of("?#") != std::string::npos) return bad("no query or fragment allowed");
  if (u.find_first_of(" \t\r\n") != std::string::npos) return bad("contains white space");
  size_t host_begin = scheme_end + 3;
  size_t host_end = u.find('/', host_begin);
  if (host_end == std::string::npos) host_end = u.size();
  if (host_end == host_begin) return bad("no host");
  while (!u.empty() && u.back() == '/' && u.size() > host_end) u.pop_back();
  return scheme + u.substr(scheme_end);
}

std::string JoinUpstream(std::string_view root, std::string_view target) {
  std::string out(root);
  if (target.empty() || target.front() != '/') out.push_back('/');
  out.append(target);
  return out;
}

std::string RedactUrl(std::string_view url) {
  size_t scheme_end = url.find("://");
  size_t host_begin = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  size_t path = url.find_first_of("/?#", host_begin);
  std::string_view authority = url.substr(
      host_begin, path == std::string_view::npos ? url.size() - host_begin : path - host_begin);
  size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, host_begin));
  out += "***@";
  out += url.substr(host_begin + at + 1);
  return out;
}

std::string RedactTarget(std::string_view target) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  std::string_view rest = target.substr(q + 1);
  bool first = true;
  while (true) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    if (!first) out.push_back('&');
    first = false;
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && SecretName(pair.substr(0, eq))) {
      out.append(pair.substr(0, eq + 1));
      out.append("REDACTED");
    } else {
      out.append(pair);
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return out;
}

std::string RedactSecrets(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const std::string& s : secrets) {
    if (s.size() < 4) continue;
    size_t pos = 0;
    while ((pos = out.find(s, pos)) != std::string::npos) {
      out.replace(pos, s.size(), "[REDACTED]");
      pos += 10;
    }
  }
  return out;
}

std::vector<std::string> CredentialsIn(const HeaderList& headers) {
  static constexpr std::array<std::string_view, 6> kNames = {
      "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"};
  std::vector<std::string> out;
  for (const auto& [n, v] : headers) {
    std::string_view name = n;  // a structured binding cannot be captured (C++20 / clang 14)
    bool secret = std::any_of(kNames.begin(), kNames.end(),
                              [&](std::string_view k) { return EqualsIgnoreCase(name, k); });
    if (!secret || v.empty()) continue;
    out.push_back(v);
    size_t space = v.find(' ');
    if (space != std::string::npos)
      out.emplace_back(TrimOws(std::string_view(v).substr(space + 1)));
  }
  return out;
}

bool ValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

Route ClassifyPath(std::string_view path) {
  struct Known {
    std::string_view path;
    std::string_view api;
  };
  static constexpr std::array<Known, 7> kKnown = {{
      {"/v1/messages", "anthropic"},
      {"/v1/messages/count_tokens", "anthropic"},
      {"/v1/responses", "openai-responses"},
      {"/v1/responses/compact", "openai-responses"},
      {"/v1/chat/completions", "openai-chat"},
      {"/v1/models", ""},
      {"/", ""},
  }};
  if (path == "/compactor" || path.rfind("/compactor/", 0) == 0) {
    return {RouteKind::kService, "/compactor", ""};
  }
  if (path == "/healthz") return {RouteKind::kHealth, "/healthz", ""};
  if (path == "/metrics") return {RouteKind::kMetrics, "/metrics", ""};
  for (const Known& k : kKnown) {
    if (path == k.path) return {RouteKind::kProxy, k.path, k.api};
  }
  return {RouteKind::kProxy, "other", ""};
}

std::string ErrorBody(std::string_view api, int status, std::string_view code,
                      std::string_view message) {
  nlohmann::ordered_json j;
  if (api == "anthropic") {
    j["type"] = "error";
    j["error"] = {{"type", AnthropicErrorType(status)}, {"message", message}};
  } else if (api.rfind("openai", 0) == 0) {
    std::string_view type = status >= 500 ? "server_error" : "invalid_request_error";
    j["error"] = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}};
  } else {
    j["error"] = {{"code", code}, {"message", message}};
  }
  return DumpJson(j);
}

bool IsHttpToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
  });
}

bool IsSafeFieldValue(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

std::string_view ReasonPhrase(int status) {
  // RFC 9110 section 15, and the codes the proxy relays from model APIs
  // (429 from RFC 6585, 499 as nginx names it, 529 as Anthropic does).
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    case 529:
      return "Overloaded";
    default:
      return "";
  }
}

}  // namespace compactor::serve
