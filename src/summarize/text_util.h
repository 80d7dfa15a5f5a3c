// Small text helpers shared by the summarizers: cutting UTF-8 text at a length
// in UTF-16 units (JavaScript string semantics; the length itself is
// internal::Utf16Length in util/utf8.h) and a scanner over the canonical JSON
// of tool-call arguments.
#ifndef COMPACTOR_SRC_SUMMARIZE_TEXT_UTIL_H_
#define COMPACTOR_SRC_SUMMARIZE_TEXT_UTIL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace compactor::summarize {

// The longest prefix of `s` holding at most `max_units` UTF-16 units without
// splitting a character; `*units` receives its length in units.
size_t Utf8PrefixForUnits(std::string_view s, int64_t max_units, int64_t* units);

// The shortest suffix start of `s` holding at most `max_units` units.
size_t Utf8SuffixStartForUnits(std::string_view s, int64_t max_units);

// Calls fn(key, raw_value) for each member of a JSON object (keys unescaped to
// UTF-8, values as their raw JSON text), each element of an array (keys "0",
// "1", ...), or each character of a string (as JavaScript's Object.entries
// would). Other values and malformed text produce nothing.
void ForEachJsonEntry(std::string_view json,
                      const std::function<void(std::string_view key, std::string_view value)>& fn);

// The string value of a top-level member of a JSON object, unescaped; nullopt
// when absent or not a string.
std::optional<std::string> JsonStringMember(std::string_view json, std::string_view key);

// Unescapes the body of a JSON string literal (without the quotes). Lone
// surrogates become U+FFFD.
std::string UnescapeJsonString(std::string_view body);

}  // namespace compactor::summarize

#endif  // COMPACTOR_SRC_SUMMARIZE_TEXT_UTIL_H_
