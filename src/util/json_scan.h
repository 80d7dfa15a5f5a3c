// A minimal scanner over JSON text that is already known to be valid: it finds
// the members of the outermost object with their exact byte spans, so entries
// can be edited (migration) or echoed without re-serializing anything else.
#ifndef COMPACTOR_SRC_UTIL_JSON_SCAN_H_
#define COMPACTOR_SRC_UTIL_JSON_SCAN_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compactor/status.h"

namespace compactor::internal {

struct JsonMember {
  std::string_view raw_key;  // the key token without quotes, still escaped
  size_t key_begin = 0;      // offset of the key's opening quote
  size_t value_begin = 0;    // offset of the first byte of the value
  size_t value_end = 0;      // one past the last byte of the value
};

// Members of the object `json` (leading/trailing whitespace allowed). Returns
// an empty vector when `json` is not an object.
std::vector<JsonMember> ScanObjectMembers(std::string_view json);

// The elements of the array `json` as [begin, end) byte offsets (leading and
// trailing whitespace allowed). Empty when `json` is not an array.
std::vector<std::pair<size_t, size_t>> ScanArrayElements(std::string_view json);

// The raw value of member `key` (compared with the escaped key text), or an
// empty view. With duplicate keys the last one wins, as in JSON.parse.
std::string_view FindMember(std::string_view json, std::string_view key);

// `json` with member `key` removed (all occurrences).
std::string RemoveMember(std::string_view json, std::string_view key);
// `json` with the value of member `key` replaced (last occurrence), or the
// member appended at the end when absent. `raw_value` is JSON text.
std::string SetMember(std::string_view json, std::string_view key, std::string_view raw_value);

// Numbers simdjson rejects but JSON.parse reads, rewritten to what JSON.parse
// makes of them: integers beyond 64 bits get a fraction (".0", so they parse
// as the nearest double, like JavaScript's), magnitudes beyond a double become
// null (JavaScript's Infinity, which JSON.stringify prints as null). Strings
// are left alone. Returns false (and leaves `out` alone) when there is none.
bool ReplaceOutOfRangeNumbers(std::string_view json, std::string* out);

// A text simdjson refused with `error` (non-zero) made parseable the way
// JSON.parse reads it (lone surrogate escapes, out-of-range numbers); false
// when no repair applies.
bool RepairForJsonParse(std::string_view json, int error, std::string* out);

// The deepest nesting of objects and arrays an entry may have. Walks over a
// value (estimates, canonical JSON, message parsing, nlohmann's dump and
// copies) recurse once per level, so a deeper line is refused before any of
// them sees it; pi's own JSON.stringify gives up at a similar depth.
inline constexpr size_t kMaxJsonNesting = 1024;

// True when objects and arrays in `json` nest deeper than `limit` levels
// (brackets inside strings do not count). Text with at most `limit` opening
// brackets is accepted by a single counting pass (no branch per byte), so the
// check costs little on ordinary lines. `json` need not be valid JSON.
bool JsonNestingExceeds(std::string_view json, size_t limit);

// "JSON nested deeper than 1024 levels": the one wording of the refusal, for
// session lines and every other JSON read from outside.
std::string JsonTooDeepMessage();

// nlohmann's parse (no exceptions) of JSON from outside the session files:
// settings, provider replies and stream events, tool arguments, probe facts.
// nlohmann parses deep text without recursion, but its dump(), copies and
// comparisons recurse once per level, so text nested deeper than
// kMaxJsonNesting is refused before it is parsed, as session lines are. The
// nesting is scanned here and only here, so callers need no check of their
// own. Errors, told apart by code:
//   kUnsupported      valid or not, nested too deep: JsonTooDeepMessage()
//   kInvalidArgument  not JSON: "invalid JSON"
// `Json` is nlohmann::json or nlohmann::ordered_json (a template, so this
// module needs no nlohmann).
template <class Json>
Result<Json> ParseJsonWithinLimit(std::string_view text, bool ignore_comments = false) {
  if (JsonNestingExceeds(text, kMaxJsonNesting)) return Status::Unsupported(JsonTooDeepMessage());
  Json doc =
      Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false, ignore_comments);
  if (doc.is_discarded()) return Status::InvalidArgument("invalid JSON");
  return doc;
}

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_JSON_SCAN_H_
