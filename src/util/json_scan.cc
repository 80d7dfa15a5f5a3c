#include "util/json_scan.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <system_error>

#include "compactor/js_json.h"
#include "util/utf8.h"

namespace compactor::internal {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// i at an opening quote; returns one past the closing quote. Jumps from quote
// to quote with memchr (strings are most of a session's bytes): a quote ends
// the string unless an odd run of backslashes stands right before it.
size_t SkipString(std::string_view s, size_t i) {
  const size_t body = i + 1;
  size_t from = body;
  while (from < s.size()) {
    const void* hit = std::memchr(s.data() + from, '"', s.size() - from);
    if (hit == nullptr) break;
    const size_t q = static_cast<size_t>(static_cast<const char*>(hit) - s.data());
    size_t backslashes = 0;
    while (q - backslashes > body && s[q - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return q + 1;
    from = q + 1;
  }
  return s.size();
}

// i at the first byte of a value; returns one past its last byte.
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return i;
  char c = s[i];
  if (c == '"') return SkipString(s, i);
  if (c == '{' || c == '[') {
    int depth = 0;
    while (i < s.size()) {
      char d = s[i];
      if (d == '"') {
        i = SkipString(s, i);
        continue;
      }
      if (d == '{' || d == '[') ++depth;
      if (d == '}' || d == ']') {
        --depth;
        if (depth == 0) return i + 1;
      }
      ++i;
    }
    return i;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !IsSpace(s[i])) ++i;
  return i;
}

}  // namespace

std::vector<JsonMember> ScanObjectMembers(std::string_view s) {
  std::vector<JsonMember> out;
  size_t i = SkipSpace(s, 0);
  if (i >= s.size() || s[i] != '{') return out;
  i = SkipSpace(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    JsonMember m;
    m.key_begin = i;
    size_t kend = SkipString(s, i);
    m.raw_key = s.substr(i + 1, kend - i - 2);
    i = SkipSpace(s, kend);
    if (i >= s.size() || s[i] != ':') break;
    i = SkipSpace(s, i + 1);
    m.value_begin = i;
    m.value_end = SkipValue(s, i);
    out.push_back(m);
    i = SkipSpace(s, m.value_end);
    if (i < s.size() && s[i] == ',') i = SkipSpace(s, i + 1);
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> ScanArrayElements(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = SkipSpace(s, 0);
  if (i >= s.size() || s[i] != '[') return out;
  i = SkipSpace(s, i + 1);
  while (i < s.size() && s[i] != ']') {
    size_t end = SkipValue(s, i);
    if (end == i) break;  // not a value: malformed
    out.emplace_back(i, end);
    i = SkipSpace(s, end);
    if (i < s.size() && s[i] == ',') i = SkipSpace(s, i + 1);
  }
  return out;
}

std::string_view FindMember(std::string_view json, std::string_view key) {
  std::string_view found;
  for (const JsonMember& m : ScanObjectMembers(json)) {
    if (m.raw_key == key) found = json.substr(m.value_begin, m.value_end - m.value_begin);
  }
  return found;
}

std::string RemoveMember(std::string_view json, std::string_view key) {
  std::vector<JsonMember> members = ScanObjectMembers(json);
  std::string out;
  size_t copied = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    if (members[k].raw_key != key) continue;
    // Remove "key":value plus the comma that joins it to a neighbour.
    size_t begin = members[k].key_begin, end = members[k].value_end;
    if (k + 1 < members.size()) {
      end = members[k + 1].key_begin;
    } else if (k > 0) {
      begin = members[k - 1].value_end;
    }
    if (begin < copied) begin = copied;
    out.append(json.substr(copied, begin - copied));
    copied = end;
  }
  out.append(json.substr(copied));
  return out;
}

std::string SetMember(std::string_view json, std::string_view key, std::string_view raw_value) {
  std::vector<JsonMember> members = ScanObjectMembers(json);
  for (size_t k = members.size(); k-- > 0;) {
    if (members[k].raw_key == key) {
      std::string out(json.substr(0, members[k].value_begin));
      out += raw_value;
      out += json.substr(members[k].value_end);
      return out;
    }
  }
  size_t close = json.rfind('}');
  if (close == std::string_view::npos) return std::string(json);
  std::string out(json.substr(0, close));
  while (!out.empty() && IsSpace(out.back())) out.pop_back();
  if (!members.empty()) out.push_back(',');
  AppendJsString(out, key);
  out.push_back(':');
  out += raw_value;
  out += json.substr(close);
  return out;
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Whether the integer literal `digits` (no sign, no leading zeros but "0")
// fits simdjson's 64-bit integers: int64 when negative, uint64 otherwise.
bool FitsInteger(std::string_view digits, bool negative) {
  std::string_view limit = negative ? "9223372036854775808" : "18446744073709551615";
  if (digits.size() != limit.size()) return digits.size() < limit.size();
  return digits <= limit;
}

// Whether the JSON number `token` is too large for a double (JSON.parse
// gives Infinity). Decided from its decimal magnitude, locale-free; only the
// 1e308 decade needs an actual conversion. Tiny numbers are not "beyond": they
// round to 0 in simdjson as in JavaScript.
bool BeyondDouble(std::string_view token) {
  size_t i = token.starts_with('-') ? 1 : 0;
  const size_t int_begin = i;
  while (i < token.size() && IsDigit(token[i])) ++i;
  const std::string_view int_part = token.substr(int_begin, i - int_begin);
  std::string_view frac;
  if (i < token.size() && token[i] == '.') {
    const size_t b = ++i;
    while (i < token.size() && IsDigit(token[i])) ++i;
    frac = token.substr(b, i - b);
  }
  int64_t exponent = 0;
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    const bool minus = i < token.size() && token[i] == '-';
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
    for (; i < token.size() && IsDigit(token[i]); ++i) {
      exponent = std::min<int64_t>(exponent * 10 + (token[i] - '0'), 1000000);
    }
    if (minus) exponent = -exponent;
  }
  // The power of ten of the first significant digit.
  int64_t magnitude;
  const size_t lead = int_part.find_first_not_of('0');
  if (lead != std::string_view::npos) {
    magnitude = static_cast<int64_t>(int_part.size() - lead) - 1 + exponent;
  } else {
    const size_t f = frac.find_first_not_of('0');
    if (f == std::string_view::npos) return false;  // zero
    magnitude = -static_cast<int64_t>(f) - 1 + exponent;
  }
  if (magnitude != 308) return magnitude > 308;
  double value = 0;
  const std::string_view body = token.substr(token.starts_with('-') ? 1 : 0);
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  return ec == std::errc::result_out_of_range;
}

}  // namespace

bool ReplaceOutOfRangeNumbers(std::string_view json, std::string* out) {
  std::string result;
  bool changed = false;
  size_t copied = 0;  // json[copied, i) is still to be copied
  size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (c == '"') {
      i = SkipString(json, i);
      continue;
    }
    if (c != '-' && !IsDigit(c)) {
      ++i;
      continue;
    }
    const size_t start = i;
    const bool negative = c == '-';
    if (negative) ++i;
    const size_t int_start = i;
    while (i < json.size() && IsDigit(json[i])) ++i;
    const std::string_view digits = json.substr(int_start, i - int_start);
    bool is_float = false;
    if (i < json.size() && json[i] == '.') {
      is_float = true;
      ++i;
      while (i < json.size() && IsDigit(json[i])) ++i;
    }
    if (i < json.size() && (json[i] == 'e' || json[i] == 'E')) {
      is_float = true;
      ++i;
      if (i < json.size() && (json[i] == '+' || json[i] == '-')) ++i;
      while (i < json.size() && IsDigit(json[i])) ++i;
    }
    const std::string_view token = json.substr(start, i - start);
    std::string replacement;
    if (BeyondDouble(token)) {
      replacement = "null";
    } else if (!is_float && !digits.empty() && !FitsInteger(digits, negative)) {
      replacement = std::string(token) + ".0";
    } else {
      continue;
    }
    result.append(json.substr(copied, start - copied));
    result += replacement;
    copied = i;
    changed = true;
  }
  if (!changed) return false;
  result.append(json.substr(copied));
  *out = std::move(result);
  return true;
}

bool RepairForJsonParse(std::string_view json, int error, std::string* out) {
  // Both repairs whenever they apply: simdjson reports only the first problem,
  // and versions differ in which error a huge integer gives (NUMBER_ERROR,
  // BIGINT_ERROR from 3.7).
  if (error == 0) return false;
  std::string text(json);
  bool repaired = false;
  if (HasLoneSurrogateEscape(text)) {
    text = ReplaceLoneSurrogateEscapes(text);
    repaired = true;
  }
  std::string numbers;
  if (ReplaceOutOfRangeNumbers(text, &numbers)) {
    text = std::move(numbers);
    repaired = true;
  }
  if (!repaired) return false;
  *out = std::move(text);
  return true;
}

std::string JsonTooDeepMessage() {
  return "JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels";
}

bool JsonNestingExceeds(std::string_view json, size_t limit) {
  // Every session line passes here, so the bracket count is written to
  // vectorize: '[' and '{' differ only in bit 0x20, and byte counters over
  // blocks too short to overflow them let the compiler count 16 or 32 bytes
  // per instruction (3.5x faster than a size_t count per byte; docs/benchmarks.md).
  constexpr size_t kBlock = 224;  // a multiple of 32, at most 255
  const auto* p = reinterpret_cast<const unsigned char*>(json.data());
  const auto* const end = p + json.size();
  size_t openers = 0;
  for (; static_cast<size_t>(end - p) >= kBlock; p += kBlock) {
    unsigned char block = 0;
    for (size_t i = 0; i < kBlock; ++i) block += static_cast<unsigned char>((p[i] | 0x20) == '{');
    openers += block;
  }
  for (; p < end; ++p) openers += static_cast<size_t>((*p | 0x20) == '{');
  if (openers <= limit) return false;
  // Enough brackets to matter: count depth outside strings. Iterative by
  // design (this guards the recursive walks).
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char ch = json[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      if (++depth > limit) return true;
    } else if ((ch == '}' || ch == ']') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace compactor::internal
