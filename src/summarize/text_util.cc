#include "summarize/text_util.h"

#include <simdjson.h>

#include <cstring>
#include <vector>

#include "util/simdjson_alloc.h"
#include "util/utf8.h"

namespace compactor::summarize {
namespace {

// Length of the UTF-8 sequence starting at s[i] (an invalid one: its maximal
// subpart, as Node decodes it) and the UTF-16 units it stands for.
inline void DecodeStep(std::string_view s, size_t i, size_t* len, int* units) {
  uint32_t cp;
  *len = internal::DecodeUtf8(s, i, &cp);
  *units = cp >= 0x10000 ? 2 : 1;
}

}  // namespace

size_t Utf8PrefixForUnits(std::string_view s, int64_t max_units, int64_t* units) {
  int64_t taken = 0;
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      if (taken + 1 > max_units) break;
      ++taken;
      ++i;
      continue;
    }
    size_t len;
    int u;
    DecodeStep(s, i, &len, &u);
    if (taken + u > max_units) break;
    taken += u;
    i += len;
  }
  if (units != nullptr) *units = taken;
  return i;
}

size_t Utf8SuffixStartForUnits(std::string_view s, int64_t max_units) {
  // Walk back over whole characters (continuation bytes belong to the next lead).
  int64_t taken = 0;
  size_t i = s.size();
  while (i > 0) {
    size_t start = i - 1;
    size_t back = 0;
    while (start > 0 && back < 3 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
      --start;
      ++back;
    }
    size_t len;
    int u;
    DecodeStep(s, start, &len, &u);
    if (start + len != i) {  // not a valid sequence ending at i: count the last byte alone
      start = i - 1;
      u = 1;
    }
    if (taken + u > max_units) break;
    taken += u;
    i = start;
  }
  return i;
}

namespace {

// Entries of one JSON text, collected before any callback runs: the callbacks
// may parse JSON themselves (JsonStringValue), which would reuse this thread's
// parser under a live document.
struct Entry {
  std::string key;
  std::string_view value;  // a view into the caller's text
};

// simdjson wants SIMDJSON_PADDING readable bytes after the text; tool-call
// arguments are copied into one reused buffer per thread.
simdjson::ondemand::parser& ThreadParser(std::string_view json, const char** data,
                                         size_t* capacity) {
  thread_local simdjson::ondemand::parser parser;
  thread_local simdjson::padded_string buffer;
  internal::GrowPadded(buffer, json.size());
  internal::ReserveOnDemand(parser, json.size());
  std::memcpy(buffer.data(), json.data(), json.size());
  *data = buffer.data();
  *capacity = buffer.size() + simdjson::SIMDJSON_PADDING;
  return parser;
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `token` (a view into the parser's copy at `base`) as the same bytes of the
// caller's `json`, without the whitespace simdjson's raw spans carry after
// the value. The caller's bytes, not the copy's, because a retry replaces
// lone surrogate escapes in the copy, and values must come out as written.
std::string_view Original(std::string_view json, const char* base, std::string_view token) {
  size_t begin = static_cast<size_t>(token.data() - base);
  size_t end = begin + token.size();
  while (end > begin && IsJsonSpace(json[end - 1])) --end;
  return json.substr(begin, end - begin);
}

// The raw JSON text of `value`, whatever its type.
simdjson::error_code RawValue(simdjson::ondemand::value value, std::string_view* raw) {
  simdjson::ondemand::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object object;
    if (auto error = value.get_object().get(object)) return error;
    return object.raw_json().get(*raw);
  }
  if (type == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array array;
    if (auto error = value.get_array().get(array)) return error;
    return array.raw_json().get(*raw);
  }
  *raw = value.raw_json_token();
  return simdjson::SUCCESS;
}

// Reads the document `json` (already copied to `data`) as `Read` decides, and
// again with lone surrogate escapes read as U+FFFD when simdjson refused them
// (JavaScript writes them when a string was cut inside an emoji). The repair
// keeps every length, so spans into the copy still map onto `json`.
template <typename Read>
simdjson::error_code ParseWithRepair(std::string_view json, const Read& read) {
  const char* data;
  size_t capacity;
  simdjson::ondemand::parser* parser = &ThreadParser(json, &data, &capacity);
  simdjson::ondemand::document doc;
  simdjson::error_code error = parser->iterate(data, json.size(), capacity).get(doc);
  if (!error) error = read(doc, data);
  if (error != simdjson::STRING_ERROR || !internal::HasLoneSurrogateEscape(json)) return error;
  std::string repaired = internal::ReplaceLoneSurrogateEscapes(json);
  parser = &ThreadParser(repaired, &data, &capacity);
  error = parser->iterate(data, json.size(), capacity).get(doc);
  return error ? error : read(doc, data);
}

// True when nothing but whitespace follows the value just read (simdjson
// 3.0's document has no at_end(); its location is out of bounds at the end).
bool AtEnd(simdjson::ondemand::document& doc) {
  const char* location;
  return doc.current_location().get(location) != simdjson::SUCCESS;
}

// The members of an object or the elements of an array. Any error (malformed
// JSON, trailing text) fails the whole text: partial results are dropped.
simdjson::error_code ReadContainer(simdjson::ondemand::document& doc, std::string_view json,
                                   const char* data, std::vector<Entry>* out) {
  out->clear();
  simdjson::ondemand::json_type type;
  if (auto error = doc.type().get(type)) return error;
  if (type == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array array;
    if (auto error = doc.get_array().get(array)) return error;
    int index = 0;
    for (auto element : array) {
      simdjson::ondemand::value value;
      std::string_view raw;
      if (auto error = std::move(element).get(value)) return error;
      if (auto error = RawValue(value, &raw)) return error;
      out->push_back({std::to_string(index++), Original(json, data, raw)});
    }
  } else if (type == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object object;
    if (auto error = doc.get_object().get(object)) return error;
    for (auto member : object) {
      simdjson::ondemand::field field;
      std::string_view key, raw;
      if (auto error = std::move(member).get(field)) return error;
      if (auto error = field.unescaped_key().get(key)) return error;
      if (auto error = RawValue(field.value(), &raw)) return error;
      out->push_back({std::string(key), Original(json, data, raw)});
    }
  } else {
    return simdjson::INCORRECT_TYPE;
  }
  return AtEnd(doc) ? simdjson::SUCCESS : simdjson::TRAILING_CONTENT;
}

// The unescaped text of a document that is one JSON string.
simdjson::error_code ReadString(simdjson::ondemand::document& doc, std::string* out) {
  std::string_view text;
  if (auto error = doc.get_string().get(text)) return error;
  *out = text;  // the parser's buffer: copied before anything parses again
  return AtEnd(doc) ? simdjson::SUCCESS : simdjson::TRAILING_CONTENT;
}

// Object.entries on a string: one entry per character (JavaScript goes per
// UTF-16 unit; we keep characters whole), keys "0", "1", ..., values the
// character as a JSON string with quotes and backslashes escaped.
void ForEachCharacter(std::string_view text,
                      const std::function<void(std::string_view, std::string_view)>& fn) {
  std::string value;
  size_t k = 0;
  int index = 0;
  while (k < text.size()) {
    size_t len;
    int units;
    DecodeStep(text, k, &len, &units);
    std::string_view ch = text.substr(k, len);
    value.assign(1, '"');
    if (ch == "\"" || ch == "\\") value += '\\';
    value += ch;
    value += '"';
    fn(std::to_string(index++), value);
    k += len;
  }
}

bool StartsWithQuote(std::string_view json) {
  size_t i = 0;
  while (i < json.size() && IsJsonSpace(json[i])) ++i;
  return i < json.size() && json[i] == '"';
}

}  // namespace

void ForEachJsonEntry(std::string_view json,
                      const std::function<void(std::string_view, std::string_view)>& fn) {
  if (StartsWithQuote(json)) {
    if (std::optional<std::string> text = JsonStringValue(json)) ForEachCharacter(*text, fn);
    return;
  }
  // Collected first, then reported: `fn` may parse JSON itself
  // (JsonStringValue), which reuses this thread's parser and buffer.
  std::vector<Entry> entries;
  entries.reserve(8);  // tool-call arguments have a few members
  simdjson::error_code error =
      ParseWithRepair(json, [&](simdjson::ondemand::document& doc, const char* data) {
        return ReadContainer(doc, json, data, &entries);
      });
  if (error) return;
  for (const Entry& e : entries) fn(e.key, e.value);
}

std::optional<std::string> JsonStringValue(std::string_view json) {
  if (!StartsWithQuote(json)) return std::nullopt;
  std::string text;
  simdjson::error_code error = ParseWithRepair(
      json, [&](simdjson::ondemand::document& doc, const char*) { return ReadString(doc, &text); });
  if (error) return std::nullopt;
  return text;
}

}  // namespace compactor::summarize
