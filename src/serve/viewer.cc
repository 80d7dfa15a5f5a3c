#include "serve/viewer.h"

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

namespace compactor::serve {
namespace {

constexpr std::string_view kRoot = "/compactor";

// Scripts, styles and data from this origin only; no inline code, no
// frames, no plug-ins, no form posts elsewhere.
constexpr std::string_view kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

std::string_view ContentTypeOf(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// FNV-1a of every embedded file: the files change only with the binary, so
// one validator for all of them is exact.
std::string BuildTag() {
  uint64_t h = 1469598103934665603ull;
  for (const EmbeddedFile& f : ViewerFiles()) {
    for (char c : f.body) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

const EmbeddedFile* FindFile(std::string_view name) {
  for (const EmbeddedFile& f : ViewerFiles()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void SecurityHeaders(ServiceResponse& res) {
  res.headers.emplace_back("Content-Security-Policy", std::string(kCsp));
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
  res.headers.emplace_back("X-Frame-Options", "DENY");
}

// Answers with an embedded file. The page is revalidated on every load
// (its links carry the build tag); the assets it links, addressed with
// ?v=TAG, are immutable for that tag.
void ServeFile(const ServiceRequest& req, ServiceResponse& res, std::string_view name,
               const std::string& tag, const std::string& page) {
  const EmbeddedFile* f = FindFile(name);
  if (f == nullptr || (name == "index.html" && page.empty())) {
    return ServiceError(res, 404, "not_found", "no such viewer file: " + std::string(name));
  }
  const std::string etag = "\"" + tag + "\"";
  SecurityHeaders(res);
  res.headers.emplace_back("ETag", etag);
  auto v = req.params.find("v");
  bool versioned = v != req.params.end() && v->second == tag;
  res.headers.emplace_back("Cache-Control",
                           versioned ? "public, max-age=31536000, immutable" : "no-cache");
  res.content_type = std::string(ContentTypeOf(name));
  if (HeaderValue(req.headers, "if-none-match") == etag) {
    res.status = 304;
    res.body.clear();
    return;
  }
  res.status = 200;
  res.body = name == "index.html" ? page : std::string(f->body);
}

std::string PageWithTag(const std::string& tag) {
  const EmbeddedFile* f = FindFile("index.html");
  if (f == nullptr) return "";
  std::string page(f->body);
  constexpr std::string_view kMark = "@BUILD_TAG@";
  for (size_t pos = page.find(kMark); pos != std::string::npos; pos = page.find(kMark, pos)) {
    page.replace(pos, kMark.size(), tag);
    pos += tag.size();
  }
  return page;
}

std::string TokenCookie(std::string_view value, bool clear) {
  std::string c = std::string(kTokenCookie) + "=" + std::string(value) +
                  "; Path=/compactor; HttpOnly; SameSite=Strict";
  c += clear ? "; Max-Age=0" : "; Max-Age=2592000";  // 30 days
  return c;
}

// A token fits in a cookie value (RFC 6265 cookie-octet) as it is.
bool CookieSafe(std::string_view v) {
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\') return false;
  }
  return !v.empty();
}

}  // namespace

std::string CookieValue(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (!EqualsIgnoreCase(n, "cookie")) continue;
    std::string_view rest = v;
    while (!rest.empty()) {
      size_t semi = rest.find(';');
      std::string_view pair = rest.substr(0, semi);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name)
        return std::string(pair.substr(eq + 1));
      if (semi == std::string_view::npos) break;
      rest.remove_prefix(semi + 1);
    }
  }
  return "";
}

bool IsPublicServicePath(std::string_view method, std::string_view path) {
  if (method == "POST") return path == "/compactor/v1/login" || path == "/compactor/v1/logout";
  if (method != "GET" && method != "HEAD") return false;
  return path == kRoot || path == "/compactor/" || path.rfind("/compactor/assets/", 0) == 0;
}

void RegisterViewer(ServiceRouter& router, std::string token, bool requires_token) {
  const std::string tag = BuildTag();
  const std::string page = PageWithTag(tag);
  auto index = [tag, page](const ServiceRequest& req, ServiceResponse& res) {
    ServeFile(req, res, "index.html", tag, page);
  };
  router.Add("GET", "/compactor", index);
  router.Add("GET", "/compactor/", index);
  router.Add("GET", "/compactor/assets/{name}",
             [tag, page](const ServiceRequest& req, ServiceResponse& res) {
               ServeFile(req, res, req.path_params.at("name"), tag, page);
             });
  router.Add(
      "POST", "/compactor/v1/login",
      [token = std::move(token), requires_token](const ServiceRequest& req, ServiceResponse& res) {
        res.content_type = "application/json";
        if (!requires_token) {
          res.body = R"({"required":false})";
          return;
        }
        auto body = nlohmann::json::parse(req.body, nullptr, false);
        std::string given;
        if (body.is_object() && body.contains("token") && body["token"].is_string())
          given = body["token"].get<std::string>();
        if (given.empty() || !ConstantTimeEquals(given, token) || !CookieSafe(token)) {
          return ServiceError(res, 401, "unauthorized",
                              "wrong token: the token is the value of "
                              "COMPACTOR_SERVE_TOKEN where compactor serve runs");
        }
        res.headers.emplace_back("Set-Cookie", TokenCookie(token, false));
        res.headers.emplace_back("Cache-Control", "no-store");
        res.body = R"({"required":true})";
      });
  router.Add("POST", "/compactor/v1/logout", [](const ServiceRequest&, ServiceResponse& res) {
    res.headers.emplace_back("Set-Cookie", TokenCookie("", true));
    res.content_type = "application/json";
    res.body = "{}";
  });
}

}  // namespace compactor::serve
