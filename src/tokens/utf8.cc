#include "tokens/utf8.h"

#include <cstdint>
#include <cstring>

namespace compactor::tokens {
namespace {

// Length of the valid sequence starting at s[i] (1..4), or 0 when invalid. On
// 0, *valid_prefix is the length of the maximal subpart (>= 1) that the
// WHATWG decoder replaces with one U+FFFD.
size_t SequenceLength(const uint8_t* s, size_t n, size_t i, size_t* valid_prefix) {
  uint8_t b = s[i];
  size_t need;
  uint8_t lower = 0x80, upper = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lower = 0xA0;
    if (b == 0xED) upper = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lower = 0x90;
    if (b == 0xF4) upper = 0x8F;  // <= U+10FFFF
  } else {
    *valid_prefix = 1;
    return 0;
  }
  size_t j = i + 1;
  for (size_t k = 0; k < need; ++k, ++j) {
    if (j >= n || s[j] < lower || s[j] > upper) {
      *valid_prefix = j - i;
      return 0;
    }
    lower = 0x80;
    upper = 0xBF;
  }
  return need + 1;
}

}  // namespace

size_t FindInvalidUtf8(std::string_view sv) {
  const auto* s = reinterpret_cast<const uint8_t*>(sv.data());
  size_t n = sv.size();
  size_t i = 0;
  while (i < n) {
    // ASCII runs dominate session text: skip 8 bytes at a time.
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    size_t prefix;
    size_t len = SequenceLength(s, n, i, &prefix);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string RepairUtf8(std::string_view sv) {
  const auto* s = reinterpret_cast<const uint8_t*>(sv.data());
  size_t n = sv.size();
  std::string out;
  out.reserve(n + 16);
  size_t i = 0;
  while (i < n) {
    size_t prefix;
    size_t len = SequenceLength(s, n, i, &prefix);
    if (len == 0) {
      out.append("\xEF\xBF\xBD");
      i += prefix;
    } else {
      out.append(sv.data() + i, len);
      i += len;
    }
  }
  return out;
}

}  // namespace compactor::tokens
