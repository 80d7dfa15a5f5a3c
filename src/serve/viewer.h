// The web viewer of `compactor serve` at /compactor/ (docs/viewer.md): a
// page, a script and a style sheet embedded in the binary at build time
// (src/serve/viewer/ through cmake/embed_files.cmake; nothing is read from
// disk at run time), served with their content types, validators and a
// strict Content-Security-Policy; and the sign-in that turns the service
// token into a cookie for a browser off loopback.
//
// Thread safety: RegisterViewer before the server starts; the handlers and
// the free functions from any thread.
#ifndef COMPACTOR_SRC_SERVE_VIEWER_H_
#define COMPACTOR_SRC_SERVE_VIEWER_H_

#include <string>
#include <string_view>
#include <vector>

#include "serve/http_util.h"
#include "serve/service.h"

namespace compactor::serve {

// One embedded file of src/serve/viewer/ (the generated viewer_assets.cc).
struct EmbeddedFile {
  std::string_view name;  // "index.html", "viewer.js", ...
  std::string_view body;
};
const std::vector<EmbeddedFile>& ViewerFiles();

// The cookie a signed-in browser carries instead of the Authorization field.
inline constexpr std::string_view kTokenCookie = "compactor_token";

// The value of cookie `name` in the Cookie fields of `headers`, or empty.
std::string CookieValue(const HeaderList& headers, std::string_view name);

// Whether a /compactor/ request is served without the token: the viewer's
// files (they hold no data; the page asks for the token) and the sign-in.
bool IsPublicServicePath(std::string_view method, std::string_view path);

// Registers GET /compactor/ (the page), GET /compactor/assets/{name},
// POST /compactor/v1/login (body {"token":"..."}: checked against `token`,
// answered with an HttpOnly, SameSite=Strict cookie) and POST
// /compactor/v1/logout (clears it). `requires_token`: whether the server
// asks for the token at all (off loopback); on loopback the sign-in answers
// {"required":false} and sets nothing.
void RegisterViewer(ServiceRouter& router, std::string token, bool requires_token);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_VIEWER_H_
