// UTF-8: the one place for validation, the WHATWG repair, encoding a code
// point and lengths in UTF-16 units (JavaScript's String.length). The reader,
// the estimator, the tokenizer, the summarizers and the JSON writer use these.
#ifndef COMPACTOR_SRC_UTIL_UTF8_H_
#define COMPACTOR_SRC_UTIL_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace compactor::internal {

bool IsValidUtf8(std::string_view s);

// Offset of the first byte of the first invalid sequence, or npos.
size_t FindInvalidUtf8(std::string_view s);

// Decodes the sequence starting at s[i] (i < s.size()). Returns its length in
// bytes and sets *cp to its code point; for an invalid sequence, returns the
// length of its maximal subpart (at least 1), which the WHATWG decoder (Node's
// TextDecoder and Buffer#toString) turns into one U+FFFD, and sets *cp to
// U+FFFD.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp);

// Replaces every invalid sequence by U+FFFD the way Node's UTF-8 decoder
// (WHATWG "maximal subpart") does, so that lines with broken bytes read as pi
// reads them.
std::string ReplaceInvalidUtf8(std::string_view s);

// JavaScript's String.length of the text Node decodes from these bytes: UTF-16
// code units, each maximal invalid subpart one unit (U+FFFD).
int64_t Utf16Length(std::string_view s);

// Utf16Length of a valid UTF-8 string (REQUIRES: valid; any byte string gets
// a count, but invalid input counts as no decoder would).
inline int64_t Utf16LengthValid(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) {
    n += (c & 0xC0) != 0x80;  // one unit per code point...
    n += c >= 0xF0;           // ...two for code points above U+FFFF
  }
  return n;
}

// What one pass over the body of a JSON string (the bytes between its quotes,
// escapes not decoded) tells about it. Every count is of positions compared
// with the two bytes before, so the pass runs on whole vectors: escapes are
// frequent in code and tool output (a `\n` every line), too frequent to visit
// one by one.
struct JsonStringBodyScan {
  int64_t units = 0;          // Utf16LengthValid(body): every byte taken for itself
  int64_t escapes = 0;        // escape sequences (`\n`, `\\`, `\uXXXX`, ...)
  int64_t u_escapes = 0;      // of which `\uXXXX`
  int64_t slash_escapes = 0;  // of which `\/`
  int64_t controls = 0;       // bytes below 0x20
  // Three or more backslashes in a row: the escape counts above are not
  // reliable (a run's parity decides), walk the escapes instead.
  bool long_runs = false;
};
JsonStringBodyScan ScanJsonStringBody(std::string_view body);

// UTF-16 length of the value of a JSON string token, without unescaping.
// `token` starts at the opening quote. Each escape counts as one unit (a
// \uXXXX escape is one UTF-16 unit, so surrogate pairs count two as in JS).
// Returns -1 when the token is not a well-formed string.
int64_t JsonStringTokenUtf16Length(std::string_view token);

// Appends the UTF-8 encoding of a code point (REQUIRES: cp <= 0x10FFFF).
void AppendUtf8(std::string& out, uint32_t cp);

// The UTF-16 code units of a code point: writes one or two and returns how many.
int ToUtf16(uint32_t cp, uint16_t units[2]);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_UTF8_H_

namespace compactor::internal {
// Replaces JSON escapes of unpaired UTF-16 surrogates (\ud83d without its low
// half, which JavaScript writes when a string was cut inside an emoji) by
// \ufffd. The result has the same length, so byte offsets stay valid. Parsers
// that reject lone surrogates (simdjson, nlohmann) can then read the text.
std::string ReplaceLoneSurrogateEscapes(std::string_view json);
bool HasLoneSurrogateEscape(std::string_view json);
}  // namespace compactor::internal
