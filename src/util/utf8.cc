#include "util/utf8.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "util/kernel.h"

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

int ToUtf16(uint32_t cp, uint16_t units[2]) {
  if (cp >= 0x10000) {
    cp -= 0x10000;
    units[0] = static_cast<uint16_t>(0xD800 + (cp >> 10));
    units[1] = static_cast<uint16_t>(0xDC00 + (cp & 0x3FF));
    return 2;
  }
  units[0] = static_cast<uint16_t>(cp);
  return 1;
}

size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned char c = p[i];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  // Expected continuation bytes and the valid range of the first of them
  // (the WHATWG decoder's bounds: no overlong forms, surrogates or code
  // points above U+10FFFF).
  int need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  uint32_t v = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
    v = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    v = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    v = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    *cp = 0xFFFD;
    return 1;
  }
  size_t j = i + 1;
  for (int got = 0; got < need; ++got, ++j) {
    if (j >= n || p[j] < lo || p[j] > hi) {
      *cp = 0xFFFD;  // the maximal subpart [i, j) becomes one U+FFFD
      return j - i;
    }
    v = (v << 6) | (p[j] & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  *cp = v;
  return j - i;
}

size_t FindInvalidUtf8(std::string_view s) {
  if (IsValidUtf8(s)) return std::string_view::npos;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    // U+FFFD written out (EF BF BD) is valid; a replaced subpart never has 3
    // bytes that decode to it.
    if (cp == 0xFFFD && !(len == 3 && s.compare(i, 3, "\xEF\xBF\xBD") == 0)) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string ReplaceInvalidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (cp == 0xFFFD) {
      out += "\xEF\xBF\xBD";  // an invalid subpart, or U+FFFD itself
    } else {
      out.append(s.data() + i, len);
    }
    i += len;
  }
  return out;
}

int64_t Utf16Length(std::string_view s) {
  if (IsValidUtf8(s)) return Utf16LengthValid(s);
  int64_t units = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    i += DecodeUtf8(s, i, &cp);
    units += cp >= 0x10000 ? 2 : 1;
  }
  return units;
}

namespace {

// Raw per-position counts; with runs of at most two backslashes, a backslash
// after a non-backslash starts an escape and so does the first of a pair.
struct BodyCounts {
  uint64_t units = 0, backslashes = 0, doubled = 0, tripled = 0, u1 = 0, slash1 = 0, controls = 0;
};

// Counts positions [from, to), from >= 2 (two bytes of look-behind). 32-bit
// lane counters over bounded blocks let the compiler vectorize the loop.
void CountRange(const unsigned char* s, size_t from, size_t to, BodyCounts* r) {
  constexpr size_t kBlock = size_t{1} << 20;
  for (size_t start = from; start < to; start += kBlock) {
    const size_t end = std::min(to, start + kBlock);
    uint32_t units = 0, bs = 0, dbl = 0, tri = 0, u = 0, slash = 0, ctl = 0;
    for (size_t i = start; i < end; ++i) {
      const unsigned char c = s[i];
      const uint32_t p1 = s[i - 1] == '\\';
      const uint32_t p2 = s[i - 2] == '\\';
      const uint32_t one = p1 & (p2 ^ 1);  // exactly one backslash before
      units += ((c & 0xC0) != 0x80) + (c >= 0xF0);
      bs += c == '\\';
      dbl += p1 & (c == '\\');
      tri += p1 & p2 & (c == '\\');
      u += one & (c == 'u');
      slash += one & (c == '/');
      ctl += c < 0x20;
    }
    r->units += units;
    r->backslashes += bs;
    r->doubled += dbl;
    r->tripled += tri;
    r->u1 += u;
    r->slash1 += slash;
    r->controls += ctl;
  }
}

#if defined(__AVX2__)
// The same counts, 64 bytes at a time as bit masks.
size_t CountBlocksAvx2(const unsigned char* s, size_t n, BodyCounts* r) {
  auto mask = [](__m256i lo, __m256i hi) {
    return static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(lo))) |
           (static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(hi))) << 32);
  };
  const __m256i k_c0 = _mm256_set1_epi8(static_cast<char>(0xC0));
  const __m256i k_80 = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i k_f0 = _mm256_set1_epi8(static_cast<char>(0xF0));
  const __m256i k_1f = _mm256_set1_epi8(0x1F);
  const __m256i k_bs = _mm256_set1_epi8('\\');
  const __m256i k_u = _mm256_set1_epi8('u');
  const __m256i k_sl = _mm256_set1_epi8('/');
  uint64_t prev = 0;  // backslash mask of the previous block
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const uint64_t cont = mask(_mm256_cmpeq_epi8(_mm256_and_si256(a, k_c0), k_80),
                               _mm256_cmpeq_epi8(_mm256_and_si256(b, k_c0), k_80));
    const uint64_t four = mask(_mm256_cmpeq_epi8(_mm256_max_epu8(a, k_f0), a),
                               _mm256_cmpeq_epi8(_mm256_max_epu8(b, k_f0), b));
    const uint64_t ctl = mask(_mm256_cmpeq_epi8(_mm256_max_epu8(a, k_1f), k_1f),
                              _mm256_cmpeq_epi8(_mm256_max_epu8(b, k_1f), k_1f));
    const uint64_t bs = mask(_mm256_cmpeq_epi8(a, k_bs), _mm256_cmpeq_epi8(b, k_bs));
    const uint64_t p1 = (bs << 1) | (prev >> 63);
    const uint64_t p2 = (bs << 2) | (prev >> 62);
    prev = bs;
    r->units += 64 - static_cast<uint64_t>(__builtin_popcountll(cont)) +
                static_cast<uint64_t>(__builtin_popcountll(four));
    r->controls += static_cast<uint64_t>(__builtin_popcountll(ctl));
    if ((bs | p1) == 0) continue;  // no backslash here or just before
    const uint64_t u = mask(_mm256_cmpeq_epi8(a, k_u), _mm256_cmpeq_epi8(b, k_u));
    const uint64_t sl = mask(_mm256_cmpeq_epi8(a, k_sl), _mm256_cmpeq_epi8(b, k_sl));
    const uint64_t one = p1 & ~p2;
    r->backslashes += static_cast<uint64_t>(__builtin_popcountll(bs));
    r->doubled += static_cast<uint64_t>(__builtin_popcountll(bs & p1));
    r->tripled += static_cast<uint64_t>(__builtin_popcountll(bs & p1 & p2));
    r->u1 += static_cast<uint64_t>(__builtin_popcountll(u & one));
    r->slash1 += static_cast<uint64_t>(__builtin_popcountll(sl & one));
  }
  return i;
}
#endif

}  // namespace

JsonStringBodyScan ScanJsonStringBody(std::string_view body) {
#ifndef COMPACTOR_KERNEL
  // The copy of this function compiled for the active CPU kernel, if any.
  if (auto* kernel = ActiveKernel().scan_json_string_body) {
    JsonStringBodyScan out;
    kernel(body, &out);
    return out;
  }
#endif
  JsonStringBodyScan out;
  const auto* s = reinterpret_cast<const unsigned char*>(body.data());
  const size_t n = body.size();
  if (n == 0) return out;
  BodyCounts r;
  size_t done = 0;
#if defined(__AVX2__)
  done = CountBlocksAvx2(s, n, &r);
#endif
  // The first two positions (the opening quote before them is no backslash),
  // then the rest with two bytes of look-behind.
  for (size_t i = done; i < n && i < 2; ++i) {
    const unsigned char c = s[i];
    const bool p1 = i >= 1 && s[i - 1] == '\\';
    r.units += ((c & 0xC0) != 0x80) + (c >= 0xF0);
    r.backslashes += c == '\\';
    r.doubled += p1 && c == '\\';
    r.u1 += p1 && c == 'u';
    r.slash1 += p1 && c == '/';
    r.controls += c < 0x20;
  }
  if (n > 2) CountRange(s, std::max<size_t>(done, 2), n, &r);
  out.units = static_cast<int64_t>(r.units);
  out.escapes = static_cast<int64_t>(r.backslashes - r.doubled);
  out.u_escapes = static_cast<int64_t>(r.u1);
  out.slash_escapes = static_cast<int64_t>(r.slash1);
  out.controls = static_cast<int64_t>(r.controls);
  out.long_runs = r.tripled != 0;
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
  JsonStringBodyScan scan = ScanJsonStringBody(body);
  if (!scan.long_runs) {
    // `\n` (2 bytes) is one unit, `\uXXXX` (6 bytes) one.
    return scan.units - scan.escapes - 4 * scan.u_escapes;
  }
  // Long backslash runs: walk the escapes one by one.
  int64_t n = scan.units;
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

#ifdef COMPACTOR_KERNEL
extern "C" void COMPACTOR_KERNEL_ENTRY(scan_json_string_body)(
    std::string_view body, compactor::internal::JsonStringBodyScan* out) {
  *out = compactor::internal::ScanJsonStringBody(body);
}
#endif
