// Character classes of the o200k/cl100k split patterns, per code point, from
// the generated table (scripts/gen_unicode_tables.mjs, Unicode 16.0 like the
// golden reference tiktoken 1.0.22).
#ifndef COMPACTOR_SRC_TOKENS_UNICODE_CLASSES_H_
#define COMPACTOR_SRC_TOKENS_UNICODE_CLASSES_H_

#include <cstddef>
#include <cstdint>

namespace compactor::tokens {

#include "tokens/unicode_classes.inc"

// Keep in sync with scripts/gen_unicode_tables.mjs.
enum CharClass : uint8_t {
  kOther = 0,        // punctuation, symbols, controls, unassigned: [^\s\p{L}\p{N}] minus marks
  kUpper = 1,        // Lu, Lt
  kLower = 2,        // Ll
  kLetterOther = 3,  // Lm, Lo: on both sides of o200k's case split
  kMark = 4,         // Mn, Mc, Me: letter-like in o200k, not \p{L} in either pattern
  kNumber = 5,       // Nd, Nl, No
  kSpace = 6,        // White_Space (Rust's \s), including \r and \n
};

inline CharClass ClassOf(uint32_t cp) {
  return static_cast<CharClass>(kClassStage2[size_t{kClassStage1[cp >> 8]} * 256 + (cp & 0xFF)]);
}

// Decodes one code point of VALID UTF-8 at s (s < end). Returns its length.
inline uint32_t DecodeValid(const uint8_t* s, uint32_t* cp) {
  uint8_t b = s[0];
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  if (b < 0xE0) {
    *cp = ((b & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    return 2;
  }
  if (b < 0xF0) {
    *cp = ((b & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    return 3;
  }
  *cp = ((b & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
  return 4;
}

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_UNICODE_CLASSES_H_
