// Small text helpers shared by the summarizers: cutting UTF-8 text at a length
// in UTF-16 units (JavaScript string semantics; the length itself is
// internal::Utf16Length in util/utf8.h) and a walk over the canonical JSON of
// tool-call arguments (on simdjson On-Demand).
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
// UTF-8, values as their raw JSON text, a view into `json`, without
// surrounding whitespace), each element of an array (keys "0", "1", ...), or
// each character of a string (as JavaScript's Object.entries would; the value
// is the character as a JSON string). Other values (numbers, true, false,
// null) and malformed text (also trailing text after the value) produce
// nothing; nothing is reported before the whole text has been read. Escaped
// lone surrogates (which JavaScript writes) read as U+FFFD. `fn` may parse
// JSON itself (JsonStringValue, ForEachJsonEntry).
void ForEachJsonEntry(std::string_view json,
                      const std::function<void(std::string_view key, std::string_view value)>& fn);

// The text a JSON string (e.g. a raw value from ForEachJsonEntry) stands for,
// unescaped; escaped lone surrogates become U+FFFD. nullopt when `json` is
// not one well-formed JSON string.
std::optional<std::string> JsonStringValue(std::string_view json);

}  // namespace compactor::summarize

#endif  // COMPACTOR_SRC_SUMMARIZE_TEXT_UTIL_H_
