// Deterministic sample text for the tokenizer tests and benchmarks: English
// prose, source code, JSON, CJK, emoji, whitespace runs, long words, random
// Unicode. Test support, not in the library; it lives here so that the test
// binary and the benchmark program build the exact same bytes.
#ifndef COMPACTOR_TESTS_SUPPORT_SAMPLE_CORPUS_H_
#define COMPACTOR_TESTS_SUPPORT_SAMPLE_CORPUS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace compactor::tokens {

// splitmix64: identical on every platform, unlike <random>'s distributions.
class SampleRng {
 public:
  explicit SampleRng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  bool Chance(int percent) { return Below(100) < static_cast<size_t>(percent); }

 private:
  uint64_t s_;
};

// Each returns about `bytes` bytes (never splitting a character).
std::string SampleEnglish(SampleRng& rng, size_t bytes);
std::string SampleCode(SampleRng& rng, size_t bytes);
std::string SampleJson(SampleRng& rng, size_t bytes);
std::string SampleCjk(SampleRng& rng, size_t bytes);
std::string SampleEmoji(SampleRng& rng, size_t bytes);
std::string SampleWhitespace(SampleRng& rng, size_t bytes);
// Code points drawn from the whole range (no surrogates) and from a list of
// characters that stress the split patterns (marks, Lt/Lm, U+017F, NEL, ...).
std::string SampleUnicode(SampleRng& rng, size_t bytes);
// Valid text with invalid UTF-8 sprinkled in (truncated and overlong
// sequences, surrogates, stray continuation and F5..FF bytes).
std::string SampleInvalidUtf8(SampleRng& rng, size_t bytes);

struct SampleDoc {
  std::string kind;
  std::string text;
};

// The synthetic part of the golden corpus (~1.5 MB).
std::vector<SampleDoc> SyntheticCorpus(uint64_t seed);

// The benchmark's "mixed" corpus: English, code, JSON and CJK blocks
// interleaved (about 40/35/10/15 % of the bytes).
std::string BenchMixed(size_t bytes);
std::string BenchCjk(size_t bytes);
std::string BenchCode(size_t bytes);

}  // namespace compactor::tokens

#endif  // COMPACTOR_TESTS_SUPPORT_SAMPLE_CORPUS_H_
