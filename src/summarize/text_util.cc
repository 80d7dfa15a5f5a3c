#include "summarize/text_util.h"

#include <cstring>

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

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ReadHex4(std::string_view s, size_t i, uint32_t* v) {
  if (i + 4 > s.size()) return false;
  uint32_t r = 0;
  for (size_t k = 0; k < 4; ++k) {
    int h = HexValue(s[i + k]);
    if (h < 0) return false;
    r = r * 16 + static_cast<uint32_t>(h);
  }
  *v = r;
  return true;
}

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// End (exclusive) of the string literal starting at s[i] == '"', or npos.
size_t StringEnd(std::string_view s, size_t i) {
  size_t k = i + 1;
  while (true) {
    // Tool-call arguments hold whole files: jump from quote to quote (memchr)
    // and check that the quote is not escaped (an even run of backslashes).
    k = s.find('"', k);
    if (k == std::string_view::npos) return k;
    size_t backslashes = 0;
    for (size_t b = k; b > i + 1 && s[b - 1] == '\\'; --b) ++backslashes;
    if (backslashes % 2 == 0) return k + 1;
    ++k;
  }
}

// End (exclusive) of the JSON value starting at s[i], or npos.
size_t ValueEnd(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  char c = s[i];
  if (c == '"') return StringEnd(s, i);
  if (c == '{' || c == '[') {
    int depth = 0;
    for (size_t k = i; k < s.size(); ++k) {
      char d = s[k];
      if (d == '"') {
        size_t e = StringEnd(s, k);
        if (e == std::string_view::npos) return e;
        k = e - 1;
      } else if (d == '{' || d == '[') {
        ++depth;
      } else if (d == '}' || d == ']') {
        if (--depth == 0) return k + 1;
      }
    }
    return std::string_view::npos;
  }
  size_t k = i;
  while (k < s.size() && s[k] != ',' && s[k] != '}' && s[k] != ']' && !IsSpace(s[k])) ++k;
  return k == i ? std::string_view::npos : k;
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

std::string UnescapeJsonString(std::string_view b) {
  std::string out;
  out.reserve(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    char c = b[i];
    if (c != '\\' || i + 1 >= b.size()) {
      out += c;
      continue;
    }
    char e = b[++i];
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        uint32_t v;
        if (!ReadHex4(b, i + 1, &v)) {
          out += "\xEF\xBF\xBD";
          break;
        }
        i += 4;
        if (v >= 0xD800 && v <= 0xDBFF) {
          uint32_t lo;
          if (i + 2 < b.size() && b[i + 1] == '\\' && b[i + 2] == 'u' && ReadHex4(b, i + 3, &lo) &&
              lo >= 0xDC00 && lo <= 0xDFFF) {
            i += 6;
            internal::AppendUtf8(out, 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
          } else {
            out += "\xEF\xBF\xBD";
          }
        } else if (v >= 0xDC00 && v <= 0xDFFF) {
          out += "\xEF\xBF\xBD";
        } else {
          internal::AppendUtf8(out, v);
        }
        break;
      }
      default:
        out += e;
        break;  // \" \\ \/
    }
  }
  return out;
}

void ForEachJsonEntry(std::string_view s,
                      const std::function<void(std::string_view, std::string_view)>& fn) {
  size_t i = SkipSpace(s, 0);
  if (i >= s.size()) return;
  if (s[i] == '"') {
    size_t end = StringEnd(s, i);
    if (end == std::string_view::npos) return;
    std::string text = UnescapeJsonString(s.substr(i + 1, end - i - 2));
    // Object.entries on a string: one entry per UTF-16 unit; we go per character.
    size_t k = 0;
    int index = 0;
    std::string value;
    while (k < text.size()) {
      size_t len;
      int u;
      DecodeStep(text, k, &len, &u);
      value.assign(1, '"');
      std::string_view ch(text.data() + k, len);
      if (ch == "\"" || ch == "\\") value += '\\';
      value += ch;
      value += '"';
      std::string key = std::to_string(index++);
      fn(key, value);
      k += len;
    }
    return;
  }
  bool is_array = s[i] == '[';
  if (!is_array && s[i] != '{') return;
  char close = is_array ? ']' : '}';
  ++i;
  int index = 0;
  while (true) {
    i = SkipSpace(s, i);
    if (i >= s.size() || s[i] == close) return;
    std::string key;
    if (is_array) {
      key = std::to_string(index++);
    } else {
      if (s[i] != '"') return;
      size_t kend = StringEnd(s, i);
      if (kend == std::string_view::npos) return;
      key = UnescapeJsonString(s.substr(i + 1, kend - i - 2));
      i = SkipSpace(s, kend);
      if (i >= s.size() || s[i] != ':') return;
      i = SkipSpace(s, i + 1);
    }
    size_t vend = ValueEnd(s, i);
    if (vend == std::string_view::npos) return;
    fn(key, s.substr(i, vend - i));
    i = SkipSpace(s, vend);
    if (i < s.size() && s[i] == ',') ++i;
  }
}

std::optional<std::string> JsonStringMember(std::string_view json, std::string_view key) {
  size_t i = SkipSpace(json, 0);
  if (i >= json.size() || json[i] != '{') return std::nullopt;
  std::optional<std::string> result;
  ForEachJsonEntry(json, [&](std::string_view k, std::string_view v) {
    // Duplicate keys: the last one wins, as JSON.parse does.
    if (k != key) return;
    if (!v.empty() && v.front() == '"' && v.size() >= 2) {
      result = UnescapeJsonString(v.substr(1, v.size() - 2));
    } else {
      result.reset();
    }
  });
  return result;
}

}  // namespace compactor::summarize
