#include "serve/service.h"

#include <utility>

namespace compactor::serve {
namespace {

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    size_t slash = path.find('/');
    out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return out;
}

bool IsParam(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

void ServiceError(ServiceResponse& res, int status, std::string_view code,
                  std::string_view message) {
  res.status = status;
  res.content_type = "application/json";
  res.body = ErrorBody("", status, code, message);
}

void ServiceRouter::Add(std::string method, std::string_view pattern, ServiceHandler handler) {
  std::vector<std::string> segments = Segments(pattern);
  for (RouteEntry& r : routes_) {
    if (r.method == method && r.segments == segments) {
      r.handler = std::move(handler);
      return;
    }
  }
  routes_.push_back({std::move(method), std::move(segments), std::move(handler)});
}

void ServiceRouter::Dispatch(ServiceRequest req, ServiceResponse& res) const {
  std::vector<std::string> segments = Segments(req.path);
  bool other_method = false;
  for (const RouteEntry& r : routes_) {
    if (r.segments.size() != segments.size()) continue;
    std::map<std::string, std::string> params;
    bool match = true;
    for (size_t i = 0; i < segments.size() && match; ++i) {
      if (IsParam(r.segments[i])) {
        params[r.segments[i].substr(1, r.segments[i].size() - 2)] = segments[i];
      } else {
        match = r.segments[i] == segments[i];
      }
    }
    if (!match) continue;
    bool same_method = r.method == req.method || (r.method == "GET" && req.method == "HEAD");
    if (!same_method) {
      other_method = true;
      continue;
    }
    auto id = params.find("id");
    if (id != params.end() && !ValidSessionId(id->second)) {
      return ServiceError(res, 400, "invalid_session_id",
                          "session ids are 1 to 128 characters of A-Z a-z 0-9 . _ - "
                          "and do not start with '.'");
    }
    req.path_params = std::move(params);
    return r.handler(req, res);
  }
  if (other_method) {
    return ServiceError(res, 405, "method_not_allowed",
                        req.method + " is not allowed on " + req.path);
  }
  ServiceError(res, 404, "not_found", "no such service path: " + req.path);
}

}  // namespace compactor::serve
