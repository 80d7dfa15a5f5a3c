// HTTP vocabulary of the proxy: header lists, hop-by-hop headers (RFC 9110
// section 7.6.1), listen addresses, upstream URLs, routes, the APIs' error
// shapes and redaction. Pure functions; safe from any thread.
#ifndef COMPACTOR_SRC_SERVE_HTTP_UTIL_H_
#define COMPACTOR_SRC_SERVE_HTTP_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compactor/status.h"

namespace compactor::serve {

// Header fields in the order they are sent; names keep their spelling.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);
std::string ToLower(std::string_view s);

// A token (RFC 9110 section 5.6.2): a method or a field name.
bool IsHttpToken(std::string_view s);
// A field value that can be written as is: no control character but tab
// (a CR, LF or NUL would let a reader split the message differently).
bool IsSafeFieldValue(std::string_view value);

// `s` without leading and trailing spaces and tabs (HTTP's optional white
// space around field values and list items).
std::string_view TrimOws(std::string_view s);
// A comma-separated field value (Connection, Transfer-Encoding) lists
// `token` (case-insensitive).
bool ListHasToken(std::string_view value, std::string_view token);

// The first value of `name` (case-insensitive), or empty.
std::string_view HeaderValue(const HeaderList& headers, std::string_view name);
bool HasHeader(const HeaderList& headers, std::string_view name);
// Removes every field named `name`.
void RemoveHeader(HeaderList& headers, std::string_view name);

// Whether a field is hop-by-hop for a proxy: Connection, Keep-Alive, TE,
// Trailer, Transfer-Encoding, Upgrade, Proxy-* and every name the message's
// Connection fields list (`connection_tokens`, lower case).
bool IsHopByHop(std::string_view name, const std::vector<std::string>& connection_tokens);
// The lower-cased names listed by the Connection fields of `headers`.
std::vector<std::string> ConnectionTokens(const HeaderList& headers);
// `headers` without hop-by-hop fields.
HeaderList EndToEnd(const HeaderList& headers);

// A listen address: "HOST:PORT", "[IPV6]:PORT"; port 0..65535 (0 = any free port).
struct ListenAddress {
  std::string host;
  int port = 0;
};
Result<ListenAddress> ParseListen(std::string_view text);
// 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(std::string_view host);

// An upstream root: "http(s)://HOST[:PORT][/PREFIX]" without query or
// fragment; a trailing '/' is dropped. kInvalidArgument naming the problem.
Result<std::string> NormalizeUpstream(std::string_view url);
// The URL a request target goes to: root + target ("/v1/messages?beta=true").
std::string JoinUpstream(std::string_view root, std::string_view target);
// `url` with any user:password@ part replaced by "***@" (for messages).
std::string RedactUrl(std::string_view url);
// A request target for logs: values of query parameters whose names suggest
// a credential (key, token, secret, auth, password, signature, sig) become
// "REDACTED".
std::string RedactTarget(std::string_view target);
// `text` with every occurrence of each non-empty secret (at least 4 bytes)
// replaced by "[REDACTED]".
std::string RedactSecrets(std::string_view text, const std::vector<std::string>& secrets);
// Credentials a request carries in its headers (Authorization and
// Proxy-Authorization values and their bearer tokens, x-api-key, api-key,
// x-goog-api-key, Cookie), for RedactSecrets.
std::vector<std::string> CredentialsIn(const HeaderList& headers);

// A session id that may name a file: 1..128 bytes of [A-Za-z0-9._-], not
// starting with '.' (no "..", no path separators, no hidden files).
bool ValidSessionId(std::string_view id);

// Equality of two secrets in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Where a request path goes.
enum class RouteKind {
  kProxy,    // forwarded to the upstream
  kService,  // /compactor/... (the service API and the viewer)
  kHealth,   // GET /healthz
  kMetrics,  // GET /metrics
};

struct Route {
  RouteKind kind = RouteKind::kProxy;
  // A bounded label for metrics and logs: the known path ("/v1/messages"),
  // "/compactor", or "other".
  std::string_view label;
  // The registered provider API the path belongs to ("anthropic",
  // "openai-responses", "openai-chat"), or empty.
  std::string_view api;
};
// `path` is the target without its query.
Route ClassifyPath(std::string_view path);

// The reason phrase of a status code ("Not Found"), or "" for a code
// without a registered one (a status line may carry an empty phrase).
std::string_view ReasonPhrase(int status);

// A JSON error body in the shape of `api` (empty: the service's shape):
//   anthropic:  {"type":"error","error":{"type":T,"message":M}}
//   openai-*:   {"error":{"message":M,"type":T,"param":null,"code":CODE}}
//   service:    {"error":{"code":CODE,"message":M}}
// T is derived from `status` (e.g. 413 request_too_large / invalid_request_error,
// 502 api_error / server_error, 504 timeout_error / server_error).
std::string ErrorBody(std::string_view api, int status, std::string_view code,
                      std::string_view message);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_HTTP_UTIL_H_
