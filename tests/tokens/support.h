// Shared helpers for the tokenizer tests.
#ifndef COMPACTOR_TESTS_TOKENS_SUPPORT_H_
#define COMPACTOR_TESTS_TOKENS_SUPPORT_H_

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "compactor/tokenizer.h"

namespace compactor::tokens::testing {

// Under CI (CI=true) missing set-up is a failure, not a skip.
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// One tokenizer per encoding per process, loaded through the normal search
// order (the build tree's vocab/ is its last step). Null when absent; `why`
// then holds Load's message.
inline const Tokenizer* SharedTokenizer(Encoding encoding, std::string* why) {
  static std::mutex mu;
  static std::map<Encoding, std::unique_ptr<Tokenizer>> loaded;
  static std::map<Encoding, std::string> errors;
  std::lock_guard<std::mutex> lock(mu);
  if (!loaded.count(encoding) && !errors.count(encoding)) {
    auto t = Tokenizer::Load(encoding);
    if (t.ok()) {
      loaded[encoding] = std::move(t).value();
    } else {
      errors[encoding] = t.status().ToString();
    }
  }
  if (errors.count(encoding)) {
    *why = errors[encoding];
    return nullptr;
  }
  return loaded[encoding].get();
}

}  // namespace compactor::tokens::testing

// Skips (or, under CI, fails) when the vocabulary is not installed.
#define COMPACTOR_LOAD_TOKENIZER_OR_SKIP(var, encoding)                                       \
  std::string var##_why;                                                                      \
  const ::compactor::Tokenizer* var =                                                         \
      ::compactor::tokens::testing::SharedTokenizer(encoding, &var##_why);                    \
  if (var == nullptr) {                                                                       \
    if (::compactor::tokens::testing::InCi()) FAIL() << var##_why;                            \
    GTEST_SKIP() << "vocabulary not installed (run scripts/install_vocab.sh): " << var##_why; \
  }

#endif  // COMPACTOR_TESTS_TOKENS_SUPPORT_H_
