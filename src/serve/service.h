// The service API's router: everything under /compactor/ (docs/api.md).
// Handlers are registered with path patterns; a "{name}" segment matches one
// path segment, and "{id}" segments must be valid session ids
// (ValidSessionId: no path traversal), else the answer is 400
// invalid_session_id. No match: 404 not_found; a path that matches with
// another method: 405 method_not_allowed. Errors are
// {"error":{"code":"...","message":"..."}}.
//
// Authentication (the bearer token on non-loopback addresses) happens before
// the router is asked (serve/server.cc).
//
// Thread safety: Add before the server starts; Dispatch from any thread.
#ifndef COMPACTOR_SRC_SERVE_SERVICE_H_
#define COMPACTOR_SRC_SERVE_SERVICE_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "serve/http_util.h"

namespace compactor::serve {

struct ServiceRequest {
  std::string method;
  std::string path;                                // not decoded
  std::string query;                               // not decoded
  std::multimap<std::string, std::string> params;  // query parameters, decoded
  std::map<std::string, std::string> path_params;  // the pattern's {name} segments
  HeaderList headers;
  std::string body;  // Content-Encoding undone
};

struct ServiceResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HeaderList headers;  // more fields (e.g. Set-Cookie)
};

using ServiceHandler = std::function<void(const ServiceRequest&, ServiceResponse&)>;

// Sets `res` to the JSON error {"error":{"code":code,"message":message}}.
void ServiceError(ServiceResponse& res, int status, std::string_view code,
                  std::string_view message);

class ServiceRouter {
 public:
  // `pattern` starts with "/compactor/"; later registrations of the same
  // method and pattern replace earlier ones.
  void Add(std::string method, std::string_view pattern, ServiceHandler handler);
  // `req.path_params` is filled from the matching pattern.
  void Dispatch(ServiceRequest req, ServiceResponse& res) const;

 private:
  struct RouteEntry {
    std::string method;
    std::vector<std::string> segments;
    ServiceHandler handler;
  };
  std::vector<RouteEntry> routes_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_SERVICE_H_
