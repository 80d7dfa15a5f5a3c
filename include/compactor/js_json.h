// JSON text exactly as JavaScript's JSON.stringify prints it
// (escapes, number formatting). Used wherever Compactor writes entries that pi
// must read back byte-identically, and where pi's estimate measures
// JSON.stringify output (tool-call arguments).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_JS_JSON_H_
#define COMPACTOR_INCLUDE_COMPACTOR_JS_JSON_H_

#include <string>
#include <string_view>

#include "compactor/status.h"

namespace compactor {

// Appends `s` (UTF-8) as a quoted JSON string with JavaScript's escaping.
// Invalid UTF-8 is written as U+FFFD.
void AppendJsString(std::string& out, std::string_view s);
// Appends a number as JavaScript's Number.prototype.toString (NaN/Infinity -> null).
void AppendJsNumber(std::string& out, double v);
std::string JsNumber(double v);

// Re-serializes arbitrary JSON text as JSON.stringify(JSON.parse(text)) would:
// no whitespace, integer-like keys first in ascending order, duplicate keys
// collapsed (last value, first position), JavaScript escapes and numbers.
Result<std::string> JsCanonicalJson(std::string_view json);
// UTF-16 length of JsCanonicalJson(json), without building the string when the
// input is already canonical (the common case for files written by pi).
Result<int64_t> JsCanonicalLength(std::string_view json);

// Date.parse for the ISO-8601 forms pi writes ("2026-11-22T13:00:07.434Z" and
// offsets such as "+02:00"); NaN when unparsable.
double ParseIsoTimestampMs(std::string_view iso);
// ms since epoch -> "YYYY-MM-DDTHH:MM:SS.mmmZ"
std::string FormatIsoTimestamp(int64_t ms);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_JS_JSON_H_
