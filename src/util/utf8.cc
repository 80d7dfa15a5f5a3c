#include "util/utf8.h"

#include <simdjson.h>

#include <cstring>

namespace compactor::internal {

bool IsValidUtf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string ReplaceInvalidUtf8(std::string_view s) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size() + 16);
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    // Expected length and the valid range of the second byte (WHATWG decoder).
    int need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      out += kReplacement;
      ++i;
      continue;
    }
    size_t j = i + 1;
    int got = 0;
    while (got < need && j < n) {
      unsigned char b = p[j];
      unsigned char l = got == 0 ? lo : 0x80, h = got == 0 ? hi : 0xBF;
      if (b < l || b > h) break;
      ++j;
      ++got;
    }
    if (got == need) {
      out.append(reinterpret_cast<const char*>(p + i), j - i);
    } else {
      out += kReplacement;  // the maximal subpart becomes one U+FFFD
    }
    i = j;
  }
  return out;
}

int64_t JsonStringTokenUtf16Length(std::string_view t) {
  if (t.empty() || t[0] != '"') return -1;
  // The token runs from the opening quote to the next structural character,
  // so its last quote closes the string (escaped quotes come before it).
  size_t close = t.find_last_of('"');
  if (close == 0 || close == std::string_view::npos) return -1;
  std::string_view body = t.substr(1, close - 1);
  if (!body.empty() && body.back() == '\\') {
    // `"abc\"` would end in an escaped quote: only valid if the backslash is itself escaped.
    size_t run = 0;
    while (run < body.size() && body[body.size() - 1 - run] == '\\') ++run;
    if (run % 2 == 1) return -1;
  }
  // Branch-free count the compiler vectorizes: one unit per code point, two above U+FFFF.
  int64_t n = Utf16LengthValid(body);
  // Each escape is one unit: `\n` (2 bytes) -> 1, `\uXXXX` (6 bytes) -> 1.
  const char* p = body.data();
  const char* e = p + body.size();
  while (p < e) {
    p = static_cast<const char*>(std::memchr(p, '\\', static_cast<size_t>(e - p)));
    if (!p || p + 1 >= e) break;
    if (p[1] == 'u') {
      n -= 5;
      p += 6;
    } else {
      n -= 1;
      p += 2;
    }
  }
  return n;
}

}  // namespace compactor::internal

namespace compactor::internal {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Code unit of a \uXXXX escape at s[i] (s[i] == '\\'), or -1.
int EscapeUnit(std::string_view s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return -1;
  int v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    int h = HexValue(s[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

template <typename F>
void ForEachLoneSurrogate(std::string_view s, F f) {
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!in_string) {
      if (c == '"') in_string = true;
      continue;
    }
    if (c == '"') {
      in_string = false;
    } else if (c == '\\') {
      int u = EscapeUnit(s, i);
      if (u < 0) {
        ++i;  // a two-character escape
        continue;
      }
      if (u >= 0xD800 && u <= 0xDBFF) {
        int next = EscapeUnit(s, i + 6);
        if (next >= 0xDC00 && next <= 0xDFFF) {
          i += 11;  // a valid pair
          continue;
        }
        f(i);
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        f(i);
      }
      i += 5;
    }
  }
}

}  // namespace

bool HasLoneSurrogateEscape(std::string_view json) {
  bool found = false;
  ForEachLoneSurrogate(json, [&](size_t) { found = true; });
  return found;
}

std::string ReplaceLoneSurrogateEscapes(std::string_view json) {
  std::string out(json);
  ForEachLoneSurrogate(json, [&](size_t i) { out.replace(i, 6, "\\ufffd"); });
  return out;
}

}  // namespace compactor::internal
