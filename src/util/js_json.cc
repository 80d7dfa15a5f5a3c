#include "compactor/js_json.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "util/js_canonical.h"
#include "util/json_scan.h"
#include "util/utf8.h"

namespace compactor {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// True when one of the 8 bytes of `w` is '"', '\\' or below 0x20: the bytes
// JSON.stringify escapes. Exact as to whether there is one (the zero-byte
// test's borrows only run upwards from a true match), which byte it is is
// left to the byte loop.
inline bool WordNeedsEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t backslash = w ^ (kOnes * '\\');
  const uint64_t zero_quote = (quote - kOnes) & ~quote;
  const uint64_t zero_backslash = (backslash - kOnes) & ~backslash;
  const uint64_t control = (w - kOnes * 0x20) & ~w;
  return ((zero_quote | zero_backslash | control) & kHigh) != 0;
}

// Most strings (message text, code) need no escape, or few: runs without
// one are skipped eight bytes at a time and appended whole, rather than
// examined byte by byte (the providers write every string of a large request
// through here to estimate it).
void AppendValidJsString(std::string& out, std::string_view s) {
  out.push_back('"');
  const char* p = s.data();
  const size_t n = s.size();
  size_t run = 0;  // start of the pending unescaped run
  size_t i = 0;
  while (i < n) {
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (WordNeedsEscape(w)) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = static_cast<unsigned char>(p[i]);
    const char* esc = nullptr;
    char buf[7];
    if (c == '"') {
      esc = "\\\"";
    } else if (c == '\\') {
      esc = "\\\\";
    } else if (c < 0x20) {
      switch (c) {
        case '\b':
          esc = "\\b";
          break;
        case '\t':
          esc = "\\t";
          break;
        case '\n':
          esc = "\\n";
          break;
        case '\f':
          esc = "\\f";
          break;
        case '\r':
          esc = "\\r";
          break;
        default:
          buf[0] = '\\', buf[1] = 'u', buf[2] = '0', buf[3] = '0';
          buf[4] = kHex[c >> 4], buf[5] = kHex[c & 15], buf[6] = 0;
          esc = buf;
      }
    } else {
      ++i;
      continue;
    }
    out.append(p + run, i - run);
    out += esc;
    run = ++i;
  }
  out.append(p + run, n - run);
  out.push_back('"');
}

// True for keys JavaScript treats as array indices (ordered first, ascending).
bool IsArrayIndexKey(std::string_view k, uint64_t* value) {
  if (k.empty() || k.size() > 10) return false;
  if (k.size() > 1 && k[0] == '0') return false;
  uint64_t v = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v >= 4294967295ull) return false;
  *value = v;
  return true;
}

void AppendCanonical(std::string& out, simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::ARRAY: {
      out.push_back('[');
      bool first = true;
      simdjson::dom::array arr;
      if (e.get(arr)) break;
      for (simdjson::dom::element child : arr) {
        if (!first) out.push_back(',');
        first = false;
        AppendCanonical(out, child);
      }
      out.push_back(']');
      break;
    }
    case element_type::OBJECT: {
      struct Field {
        std::string_view key;
        simdjson::dom::element value;
        bool index;
        uint64_t index_value;
      };
      std::vector<Field> fields;
      simdjson::dom::object obj;
      if (e.get(obj)) break;
      for (auto field : obj) {
        auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const Field& f) { return f.key == field.key; });
        if (it != fields.end()) {
          it->value = field.value;  // duplicate key: last value, first position
          continue;
        }
        uint64_t iv = 0;
        bool idx = IsArrayIndexKey(field.key, &iv);
        fields.push_back({field.key, field.value, idx, iv});
      }
      std::stable_partition(fields.begin(), fields.end(), [](const Field& f) { return f.index; });
      auto index_end =
          std::find_if(fields.begin(), fields.end(), [](const Field& f) { return !f.index; });
      std::sort(fields.begin(), index_end,
                [](const Field& a, const Field& b) { return a.index_value < b.index_value; });
      out.push_back('{');
      bool first = true;
      for (const Field& f : fields) {
        if (!first) out.push_back(',');
        first = false;
        AppendValidJsString(out, f.key);
        out.push_back(':');
        AppendCanonical(out, f.value);
      }
      out.push_back('}');
      break;
    }
    case element_type::STRING: {
      std::string_view sv;
      if (!e.get(sv)) AppendValidJsString(out, sv);
      break;
    }
    case element_type::INT64: {
      int64_t v = 0;
      if (!e.get(v)) AppendJsNumber(out, static_cast<double>(v));
      break;
    }
    case element_type::UINT64: {
      uint64_t v = 0;
      if (!e.get(v)) AppendJsNumber(out, static_cast<double>(v));
      break;
    }
    case element_type::DOUBLE: {
      double v = 0;
      if (!e.get(v)) AppendJsNumber(out, v);
      break;
    }
    case element_type::BOOL: {
      bool v = false;
      if (!e.get(v)) out += v ? "true" : "false";
      break;
    }
    case element_type::NULL_VALUE:
      out += "null";
      break;
  }
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool ReadDigits(std::string_view s, size_t& i, int count, int* out) {
  int v = 0;
  for (int k = 0; k < count; ++k, ++i) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

namespace internal {

void AppendJsCanonical(std::string& out, simdjson::dom::element e) { AppendCanonical(out, e); }

}  // namespace internal

void AppendJsString(std::string& out, std::string_view s) {
  if (internal::IsValidUtf8(s)) {
    AppendValidJsString(out, s);
  } else {
    AppendValidJsString(out, internal::ReplaceInvalidUtf8(s));
  }
}

void AppendJsNumber(std::string& out, double v) {
  if (std::isnan(v) || std::isinf(v)) {
    out += "null";
    return;
  }
  if (v == 0) {
    out.push_back('0');
    return;
  }
  if (v < 0) {
    out.push_back('-');
    v = -v;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::from_chars(sci.data() + epos + (sci[epos + 1] == '+' ? 2 : 1), sci.data() + sci.size(),
                  exp10);
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<size_t>(n));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    int e = n - 1;
    out.push_back(e < 0 ? '-' : '+');
    out += std::to_string(e < 0 ? -e : e);
  }
}

std::string JsNumber(double v) {
  std::string s;
  AppendJsNumber(s, v);
  return s;
}

Result<std::string> JsCanonicalJson(std::string_view json) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  auto err = parser.parse(json.data(), json.size(), true).get(root);
  std::string repaired;
  // Lone surrogates survive as U+FFFD (JavaScript would print \udxxx: 5 more units each);
  // numbers beyond simdjson's range read as JSON.parse reads them.
  if (err && internal::RepairForJsonParse(json, err, &repaired)) {
    err = parser.parse(repaired.data(), repaired.size(), true).get(root);
  }
  if (err) return Status::Corruption(std::string("invalid JSON: ") + simdjson::error_message(err));
  std::string out;
  out.reserve(json.size());
  AppendCanonical(out, root);
  return out;
}

Result<int64_t> JsCanonicalLength(std::string_view json) {
  COMPACTOR_ASSIGN_OR_RETURN(std::string canonical, JsCanonicalJson(json));
  return internal::Utf16LengthValid(canonical);
}

double ParseIsoTimestampMs(std::string_view s) {
  const double kNaN = std::nan("");
  size_t i = 0;
  int year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0, ms = 0;
  bool negative_year = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    negative_year = s[i] == '-';
    ++i;
    if (!ReadDigits(s, i, 6, &year)) return kNaN;
  } else if (!ReadDigits(s, i, 4, &year)) {
    return kNaN;
  }
  if (negative_year) year = -year;
  if (i < s.size() && s[i] == '-') {
    ++i;
    if (!ReadDigits(s, i, 2, &month)) return kNaN;
    if (i < s.size() && s[i] == '-') {
      ++i;
      if (!ReadDigits(s, i, 2, &day)) return kNaN;
    }
  }
  int offset_min = 0;
  if (i < s.size() && s[i] == 'T') {
    ++i;
    if (!ReadDigits(s, i, 2, &hour) || i >= s.size() || s[i] != ':') return kNaN;
    ++i;
    if (!ReadDigits(s, i, 2, &minute)) return kNaN;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!ReadDigits(s, i, 2, &second)) return kNaN;
      if (i < s.size() && s[i] == '.') {
        ++i;
        int frac = 0, digits = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          if (digits < 3) frac = frac * 10 + (s[i] - '0');
          ++digits;
          ++i;
        }
        if (digits == 0) return kNaN;
        for (int d = digits; d < 3; ++d) frac *= 10;
        ms = frac;
      }
    }
    // A date-time without an offset is local time in JavaScript; pi always writes "Z",
    // and Compactor reads offset-less times as UTC (documented in docs/session-format.md).
    if (i < s.size() && s[i] == 'Z') {
      ++i;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      int sign = s[i] == '-' ? -1 : 1;
      ++i;
      int oh = 0, om = 0;
      if (!ReadDigits(s, i, 2, &oh) || i >= s.size() || s[i] != ':') return kNaN;
      ++i;
      if (!ReadDigits(s, i, 2, &om)) return kNaN;
      offset_min = sign * (oh * 60 + om);
    }
  }
  if (i != s.size()) return kNaN;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 24 || minute > 59 || second > 59)
    return kNaN;
  if (hour == 24 && (minute || second || ms)) return kNaN;
  int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t t = ((days * 24 + hour) * 60 + minute - offset_min) * 60 + second;
  return static_cast<double>(t * 1000 + ms);
}

std::string FormatIsoTimestamp(int64_t ms) {
  int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int millis = static_cast<int>(ms - secs * 1000);
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  // civil_from_days
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<long long>(y),
                m, d, static_cast<int>(rem / 3600), static_cast<int>(rem / 60 % 60),
                static_cast<int>(rem % 60), millis);
  return buf;
}

}  // namespace compactor
