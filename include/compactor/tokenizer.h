// Exact, tiktoken-compatible byte-pair encoders for OpenAI's o200k_base and
// cl100k_base (docs/tokenizers.md). The chars/4 estimate in estimate.h stays
// the default; these give exact counts for users who cut close to a limit and
// for oh-my-pi's o200k-defined pruning.
//
// Accuracy: Encode() returns the same ids as tiktoken's encode_ordinary (npm
// tiktoken 1.0.22, OpenAI's Rust core) for any input; the test suite checks
// this id for id. Invalid UTF-8 is first replaced by U+FFFD per maximal
// subpart (the WHATWG decoder, i.e. what Node does when it reads the text),
// because tiktoken only ever sees Unicode strings.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_TOKENIZER_H_
#define COMPACTOR_INCLUDE_COMPACTOR_TOKENIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/env.h"
#include "compactor/status.h"

namespace compactor {

class Tokenizer;
namespace tokens {
class RankTable;
// The rank table behind a tokenizer (src/tokens; tests and benchmarks).
const RankTable& RankTableOf(const Tokenizer& tokenizer);
}  // namespace tokens

enum class Encoding {
  kO200kBase,   // GPT-4o, GPT-4.1, o-series, GPT-5; oh-my-pi's thresholds
  kCl100kBase,  // GPT-4, GPT-3.5-turbo
};

// "o200k_base" / "cl100k_base": also the vocabulary file stem (<name>.cvocab,
// the binary form; <name>.tiktoken, the source).
std::string_view EncodingName(Encoding encoding);

// Accepts "o200k", "o200k_base", "cl100k", "cl100k_base".
Result<Encoding> ParseEncoding(std::string_view name);

// The environment variable naming a vocabulary directory (search step 2).
inline constexpr char kVocabDirEnv[] = "COMPACTOR_VOCAB_DIR";

struct VocabOptions {
  // Explicit directory holding the vocabulary (<name>.cvocab or
  // <name>.tiktoken; the CLI's --vocab-dir). When set, it is searched first.
  // Empty: not used.
  std::string dir;
  // Where kVocabDirEnv is read and the files are found, read and mapped;
  // null = Env::Default(). Tests pass an Env without the variable to stay
  // hermetic.
  Env* env = nullptr;
  // For a .tiktoken file only: check its sha256 against the pin from
  // openai/tiktoken before use (about 10 ms for o200k). A mismatch is an
  // error: a wrong file would give silently wrong counts. A binary .cvocab
  // file records the sha256 of its source, checked against the pin, and is
  // always checked against its own checksum.
  bool verify_sha256 = true;
};

// The directories Load() tries, in order (docs/tokenizers.md):
//   1. options.dir (--vocab-dir), if not empty;
//   2. $COMPACTOR_VOCAB_DIR, if set (as options.env reports it);
//   3. <E>/../share/compactor/vocab, where E is the directory of the running
//      executable (/proc/self/exe, symlinks resolved): an install tree, where
//      `cmake --install` puts the binary vocabularies next to bin/;
//   4. <E>/vocab: the build tree, where the build converts what
//      scripts/install_vocab.sh fetched;
//   5. and 6. the same two relative to the shared library holding this code,
//      when the library is one (dladdr) and lives elsewhere.
// Nothing is fixed at configure time, so a build or install tree can be
// moved. Paths are lexically normalized; duplicates are left out. Reads the
// environment and /proc; thread-safe.
std::vector<std::string> VocabSearchPath(const VocabOptions& options);

// The shell command that installs the vocabulary, for error messages.
inline constexpr char kInstallVocabCommand[] = "scripts/install_vocab.sh [DIR]";

class Tokenizer {
 public:
  // Takes the first directory along VocabSearchPath(options) that holds
  // <EncodingName>.cvocab, which is mapped and used in place (about 1 ms for
  // o200k: a header check and a checksum of the mapped tables), or else
  // <EncodingName>.tiktoken, which is parsed into tables in memory (~60 ms
  // for o200k). kNotFound names every directory searched and the install
  // command; kCorruption, naming the file, for a bad, truncated or unexpected
  // file (docs/tokenizers.md, "Binary vocabulary format").
  static Result<std::unique_ptr<Tokenizer>> Load(Encoding encoding,
                                                 const VocabOptions& options = {});

  // One process-wide instance per encoding and options, loaded on first use
  // and kept until exit: what code that counts in many places (thresholds,
  // cut points, pruning, budgets) should call. Thread-safe. Errors are not
  // remembered, so a later call retries (after the vocabulary is installed).
  static Result<std::shared_ptr<const Tokenizer>> Shared(Encoding encoding,
                                                         const VocabOptions& options = {});

  // Builds the tables in memory from the content of a .tiktoken file already
  // in memory (~60 ms for o200k). The sha256 is checked when `verify_sha256`.
  static Result<std::unique_ptr<Tokenizer>> FromTiktoken(Encoding encoding,
                                                         std::string_view file_content,
                                                         bool verify_sha256 = true);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  Encoding encoding() const;
  // Number of ordinary (non-special) tokens.
  size_t vocab_size() const;
  // Path of the file this tokenizer was loaded from (a .cvocab or a
  // .tiktoken; "" for FromTiktoken).
  const std::string& source_path() const;

  // tiktoken's encode_ordinary: special-token text such as "<|endoftext|>" is
  // encoded as ordinary text. Thread-safe.
  std::vector<uint32_t> Encode(std::string_view text) const;

  // Number of tokens Encode(text) would return, without building the ids.
  // Thread-safe and meant to be called from several threads at once: it keeps
  // a small per-thread cache of multi-token pieces.
  size_t Count(std::string_view text) const;

  // The bytes of the tokens, concatenated. Special token ids decode to their
  // text ("<|endoftext|>"). kInvalidArgument names the first unknown id.
  Result<std::string> Decode(std::span<const uint32_t> ids) const;

  struct Impl;

 private:
  friend const tokens::RankTable& tokens::RankTableOf(const Tokenizer& tokenizer);
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_TOKENIZER_H_
