// Shared helpers of the libFuzzer targets (docs/reliability.md, "Fuzzing").
// Each target is one file with LLVMFuzzerTestOneInput; the property checked
// is the sanitizers' (no crash, no leak, no undefined behaviour) plus the
// invariants a target asserts with FUZZ_CHECK.
#ifndef COMPACTOR_FUZZ_FUZZ_UTIL_H_
#define COMPACTOR_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// An invariant of the code under test: a violation is a finding, reported
// like a crash (libFuzzer keeps the input).
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace compactor::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `text` into pieces whose lengths come from `seed`, so one input also
// exercises the buffering across chunk boundaries of the incremental parsers.
template <typename Fn>
void ForEachChunk(std::string_view text, uint8_t seed, Fn&& fn) {
  size_t step = 1 + seed % 64;
  for (size_t at = 0; at < text.size(); at += step) fn(text.substr(at, step));
}

}  // namespace compactor::fuzz

#endif  // COMPACTOR_FUZZ_FUZZ_UTIL_H_
