// Hand-written pre-tokenizers (the fast path) for the o200k_base and
// cl100k_base split patterns. Each reproduces leftmost-first regex matching of
// openai/tiktoken's patterns (tiktoken_ext/openai_public.py) with the backtracking worked
// out per alternative; tests/tokens/pretokenize_test.cc checks them against
// PCRE2 running the literal patterns (pcre2_splitter.h).
//
// Input must be valid UTF-8 (see utf8.h). Pieces tile the input: every
// position starts a match of some alternative.
#ifndef COMPACTOR_SRC_TOKENS_PRETOKENIZE_H_
#define COMPACTOR_SRC_TOKENS_PRETOKENIZE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "compactor/tokenizer.h"
#include "tokens/unicode_classes.h"

namespace compactor::tokens {

namespace internal {

inline constexpr size_t kFail = ~size_t{0};

struct Ch {
  uint32_t cp;
  uint8_t cls;
  uint8_t len;
};

inline bool IsLetter(uint8_t cls) { return cls >= kUpper && cls <= kLetterOther; }
// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
inline bool IsUpperish(uint8_t cls) { return cls == kUpper || cls == kLetterOther || cls == kMark; }
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]
inline bool IsLowerish(uint8_t cls) { return cls >= kLower && cls <= kMark; }
// [^\s\p{L}\p{N}]
inline bool IsOtherNs(uint8_t cls) { return cls == kOther || cls == kMark; }
inline bool IsCrLf(uint32_t cp) { return cp == '\r' || cp == '\n'; }
// [^\r\n\p{L}\p{N}]
inline bool IsPre(const Ch& c) { return !IsLetter(c.cls) && c.cls != kNumber && !IsCrLf(c.cp); }

class ScannerBase {
 public:
  ScannerBase(std::string_view text)
      : s_(reinterpret_cast<const uint8_t*>(text.data())), n_(text.size()) {}

 protected:
  [[gnu::always_inline]] Ch At(size_t i) const {
    uint8_t b = s_[i];
    if (b < 0x80) return {b, kClassStage2[b], 1};  // block 0 is stage 2's first block
    uint32_t cp;
    uint32_t len = DecodeValid(s_ + i, &cp);
    return {cp, static_cast<uint8_t>(ClassOf(cp)), static_cast<uint8_t>(len)};
  }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d) at e: its end, or e when absent. Both
  // patterns use the same set. Case-insensitive matching uses simple case
  // folding, under which s also matches U+017F LATIN SMALL LETTER LONG S.
  size_t Contraction(size_t e) const {
    if (e + 1 >= n_ || s_[e] != '\'') return e;
    uint8_t c = s_[e + 1];
    switch (c | 0x20) {  // only 'X' and 'x' map to 'x' among all bytes, for letters
      case 's':
      case 't':
      case 'm':
      case 'd':
        return e + 2;
      case 'r':
      case 'v':
        return (e + 2 < n_ && (s_[e + 2] | 0x20) == 'e') ? e + 3 : e;
      case 'l':
        return (e + 2 < n_ && (s_[e + 2] | 0x20) == 'l') ? e + 3 : e;
      default:
        break;
    }
    if (c == 0xC5 && e + 2 < n_ && s_[e + 2] == 0xBF) return e + 3;  // U+017F
    return e;
  }

  // Whitespace alternatives at p (a \s character), after every other one
  // failed. `end_takes_all`: cl100k's \s++$ comes before \s*[\r\n].
  size_t Whitespace(size_t p, bool end_takes_all) const {
    size_t i = p, last_start = p, last_newline_end = kFail;
    while (i < n_) {
      Ch d = At(i);
      if (d.cls != kSpace) break;
      last_start = i;
      i += d.len;
      if (IsCrLf(d.cp)) last_newline_end = i;
    }
    if (end_takes_all && i == n_) return i;                  // \s++$
    if (last_newline_end != kFail) return last_newline_end;  // \s*[\r\n]+ (backtracks to last)
    if (i == n_) return i;                                   // \s+(?!\S) at the end
    if (last_start > p) return last_start;                   // \s+(?!\S): all but the last
    return i;                                                // \s+ / \s: a single character
  }

  const uint8_t* s_;
  size_t n_;
};

class O200kScanner : public ScannerBase {
 public:
  using ScannerBase::ScannerBase;

  template <typename F>
  void Run(F&& on_piece) const {
    size_t p = 0;
    while (p < n_) {
      size_t e = Next(p);
      on_piece(s_ + p, e - p);
      p = e;
    }
  }

  size_t Next(size_t p) const {
    Ch c = At(p);
    size_t q = p + c.len;
    bool letterish = c.cls >= kUpper && c.cls <= kMark;
    bool pre = IsPre(c) && q < n_;
    size_t r;
    // [^\r\n\p{L}\p{N}]?[upper-ish]*[lower-ish]+(contraction)?
    if (pre && (r = CaseLower(q)) != kFail) return r;
    if (letterish && (r = CaseLower(p)) != kFail) return r;
    // [^\r\n\p{L}\p{N}]?[upper-ish]+[lower-ish]*(contraction)?
    if (pre && (r = CaseUpper(q)) != kFail) return r;
    if (letterish && (r = CaseUpper(p)) != kFail) return r;
    // \p{N}{1,3}
    if (c.cls == kNumber) {
      size_t i = q;
      for (int k = 0; k < 2 && i < n_; ++k) {
        Ch d = At(i);
        if (d.cls != kNumber) break;
        i += d.len;
      }
      return i;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n/]*
    size_t start = kFail;
    if (c.cp == ' ' && q < n_ && IsOtherNs(At(q).cls)) {
      start = q;
    } else if (IsOtherNs(c.cls)) {
      start = p;
    }
    if (start != kFail) {
      size_t i = start;
      while (i < n_) {
        Ch d = At(i);
        if (!IsOtherNs(d.cls)) break;
        i += d.len;
      }
      while (i < n_ && (s_[i] == '\r' || s_[i] == '\n' || s_[i] == '/')) ++i;
      return i;
    }
    return Whitespace(p, /*end_takes_all=*/false);
  }

 private:
  size_t LowerRun(size_t i) const {
    while (i < n_) {
      Ch d = At(i);
      if (!IsLowerish(d.cls)) break;
      i += d.len;
    }
    return i;
  }

  // [upper-ish]*[lower-ish]+ from q. The greedy star backs off until a
  // lower-ish character follows: either the run stops at an Ll (then the plus
  // takes the whole lower-ish run), or the plus takes just the last Lm/Lo/M of
  // the run.
  size_t CaseLower(size_t q) const {
    size_t i = q, last_both_end = kFail;
    while (i < n_) {
      Ch d = At(i);
      if (d.cls == kUpper) {
        i += d.len;
      } else if (d.cls == kLetterOther || d.cls == kMark) {
        i += d.len;
        last_both_end = i;
      } else if (d.cls == kLower) {
        return Contraction(LowerRun(i + d.len));
      } else {
        break;
      }
    }
    return last_both_end == kFail ? kFail : Contraction(last_both_end);
  }

  // [upper-ish]+[lower-ish]* from q: both greedy, no backtracking needed.
  size_t CaseUpper(size_t q) const {
    size_t i = q;
    while (i < n_) {
      Ch d = At(i);
      if (!IsUpperish(d.cls)) break;
      i += d.len;
    }
    if (i == q) return kFail;
    return Contraction(LowerRun(i));
  }
};

class Cl100kScanner : public ScannerBase {
 public:
  using ScannerBase::ScannerBase;

  template <typename F>
  void Run(F&& on_piece) const {
    size_t p = 0;
    while (p < n_) {
      size_t e = Next(p);
      on_piece(s_ + p, e - p);
      p = e;
    }
  }

  size_t Next(size_t p) const {
    Ch c = At(p);
    size_t q = p + c.len;
    // '(?i:[sdmt]|ll|ve|re)
    if (c.cp == '\'') {
      size_t e = Contraction(p);
      if (e != p) return e;
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++
    if (IsLetter(c.cls)) return LetterRun(q);
    if (IsPre(c) && q < n_) {
      Ch d = At(q);
      if (IsLetter(d.cls)) return LetterRun(q + d.len);
    }
    // \p{N}{1,3}+
    if (c.cls == kNumber) {
      size_t i = q;
      for (int k = 0; k < 2 && i < n_; ++k) {
        Ch d = At(i);
        if (d.cls != kNumber) break;
        i += d.len;
      }
      return i;
    }
    //  ?[^\s\p{L}\p{N}]++[\r\n]*+
    size_t start = kFail;
    if (c.cp == ' ' && q < n_ && IsOtherNs(At(q).cls)) {
      start = q;
    } else if (IsOtherNs(c.cls)) {
      start = p;
    }
    if (start != kFail) {
      size_t i = start;
      while (i < n_) {
        Ch d = At(i);
        if (!IsOtherNs(d.cls)) break;
        i += d.len;
      }
      while (i < n_ && (s_[i] == '\r' || s_[i] == '\n')) ++i;
      return i;
    }
    return Whitespace(p, /*end_takes_all=*/true);
  }

 private:
  size_t LetterRun(size_t i) const {
    while (i < n_) {
      Ch d = At(i);
      if (!IsLetter(d.cls)) break;
      i += d.len;
    }
    return i;
  }
};

}  // namespace internal

// Calls on_piece(const uint8_t* data, size_t size) for each piece of `text`
// (valid UTF-8) in order.
template <typename F>
void SplitPieces(Encoding encoding, std::string_view text, F&& on_piece) {
  if (encoding == Encoding::kO200kBase) {
    internal::O200kScanner(text).Run(on_piece);
  } else {
    internal::Cl100kScanner(text).Run(on_piece);
  }
}

// Convenience for tests and tools.
std::vector<std::string_view> SplitFast(Encoding encoding, std::string_view text);

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_PRETOKENIZE_H_
