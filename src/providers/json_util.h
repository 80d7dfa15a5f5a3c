// Small nlohmann helpers shared by the provider sources.
#ifndef COMPACTOR_SRC_PROVIDERS_JSON_UTIL_H_
#define COMPACTOR_SRC_PROVIDERS_JSON_UTIL_H_

#include <nlohmann/json.hpp>
#include <string>

namespace compactor {

// Compact JSON; invalid UTF-8 (tool output, model text) becomes U+FFFD instead of throwing.
inline std::string DumpJson(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace compactor

#endif  // COMPACTOR_SRC_PROVIDERS_JSON_UTIL_H_
