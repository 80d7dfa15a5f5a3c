#include "support/pcre2_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

namespace compactor::tokens {
namespace {

// openai/tiktoken's cl100k_base and o200k_base split patterns
// (tiktoken_ext/openai_public.py), verbatim.
constexpr std::string_view kCl100kPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s)";

constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n/]*)"
    R"(|\s*[\r\n]+)"
    R"(|\s+(?!\S))"
    R"(|\s+)";

}  // namespace

std::string_view SplitPattern(Encoding encoding) {
  return encoding == Encoding::kO200kBase ? kO200kPattern : kCl100kPattern;
}

struct Pcre2Splitter::State {
  pcre2_code* code = nullptr;
  pcre2_match_data* match = nullptr;
  bool jit = false;
  ~State() {
    if (match) pcre2_match_data_free(match);
    if (code) pcre2_code_free(code);
  }
};

Pcre2Splitter::Pcre2Splitter(std::unique_ptr<State> state) : state_(std::move(state)) {}
Pcre2Splitter::~Pcre2Splitter() = default;

Result<std::unique_ptr<Pcre2Splitter>> Pcre2Splitter::Create(Encoding encoding) {
  return CreateForPattern(SplitPattern(encoding));
}

Result<std::unique_ptr<Pcre2Splitter>> Pcre2Splitter::CreateForPattern(std::string_view pattern) {
  auto state = std::make_unique<State>();
  int error = 0;
  PCRE2_SIZE offset = 0;
  // DOLLAR_ENDONLY: Rust's $ (cl100k's \s++$) is the end of the text only.
  state->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr);
  if (state->code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(error, buf, sizeof(buf));
    return Status::Internal("pcre2_compile failed at " + std::to_string(offset) + ": " +
                            reinterpret_cast<char*>(buf));
  }
  state->jit = pcre2_jit_compile(state->code, PCRE2_JIT_COMPLETE) == 0;
  state->match = pcre2_match_data_create_from_pattern(state->code, nullptr);
  return std::unique_ptr<Pcre2Splitter>(new Pcre2Splitter(std::move(state)));
}

std::vector<std::string_view> Pcre2Splitter::Split(std::string_view text) {
  std::vector<std::string_view> out;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    // NO_UTF_CHECK: the caller guarantees validity; otherwise every call would
    // re-validate the rest of the subject (quadratic).
    int rc = pcre2_match(state_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, state_->match,
                         nullptr);
    if (rc < 0) break;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state_->match);
    if (ov[1] == ov[0]) {  // cannot happen with the split patterns; avoid looping
      ++pos;
      continue;
    }
    out.push_back(text.substr(ov[0], ov[1] - ov[0]));
    pos = ov[1];
  }
  return out;
}

bool Pcre2Splitter::MatchesAtStart(std::string_view text) {
  int rc = pcre2_match(state_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                       PCRE2_NO_UTF_CHECK | PCRE2_ANCHORED, state_->match, nullptr);
  return rc >= 0;
}

}  // namespace compactor::tokens
