// The reference pre-tokenizer: PCRE2 (JIT) running the literal upstream split
// patterns from openai/tiktoken. Slower than the hand-written scanners in
// src/tokens/pretokenize.h, which tests compare against it.
//
// Known difference from tiktoken (Rust regex), rare and documented in
// docs/tokenizers.md: PCRE2 10.42 has Unicode 14 tables (tiktoken 1.0.22: 16).
#ifndef COMPACTOR_TESTS_SUPPORT_PCRE2_SPLITTER_H_
#define COMPACTOR_TESTS_SUPPORT_PCRE2_SPLITTER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "compactor/status.h"
#include "compactor/tokenizer.h"

namespace compactor::tokens {

// The exact upstream patterns.
std::string_view SplitPattern(Encoding encoding);

class Pcre2Splitter {
 public:
  static Result<std::unique_ptr<Pcre2Splitter>> Create(Encoding encoding);
  // Same for any pattern (tests probe character classes with it).
  static Result<std::unique_ptr<Pcre2Splitter>> CreateForPattern(std::string_view pattern);
  ~Pcre2Splitter();

  // Pieces of valid UTF-8 `text` (successive non-overlapping matches). Not
  // thread-safe: one instance per thread.
  std::vector<std::string_view> Split(std::string_view text);
  // Whether the pattern matches at the very start of `text` (anchored).
  bool MatchesAtStart(std::string_view text);

 private:
  struct State;
  explicit Pcre2Splitter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace compactor::tokens

#endif  // COMPACTOR_TESTS_SUPPORT_PCRE2_SPLITTER_H_
