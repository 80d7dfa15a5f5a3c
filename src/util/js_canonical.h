// JSON.stringify(JSON.parse(x)) written straight from a simdjson DOM element,
// for callers that hold the parsed tree already (no text round trip).
#ifndef COMPACTOR_SRC_UTIL_JS_CANONICAL_H_
#define COMPACTOR_SRC_UTIL_JS_CANONICAL_H_

#include <simdjson.h>

#include <string>

namespace compactor::internal {

// Appends what JsCanonicalJson returns for the text of `e`.
void AppendJsCanonical(std::string& out, simdjson::dom::element e);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_JS_CANONICAL_H_
