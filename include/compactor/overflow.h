// Context-overflow detection: decides whether a failed (or suspiciously
// successful) LLM response means "the request did not fit the context window",
// which triggers overflow recovery (compact or shrink, then retry) instead of a
// generic retry. The rules and patterns are those of
// pi's and oh-my-pi's isContextOverflow (pi 0.58.3/0.73.1, oh-my-pi 15.7.2 and
// 18.x), the union of their patterns in one ordered classifier;
// docs/providers.md lists the order and the rules.
//
// Thread safety: every function here is pure and may be called concurrently
// (the compiled patterns are built once, thread-safely).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_OVERFLOW_H_
#define COMPACTOR_INCLUDE_COMPACTOR_OVERFLOW_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct Message;

// What the classifier looks at: the fields of pi's AssistantMessage plus the
// HTTP status when the caller knows it.
struct OverflowInput {
  // "stop", "length", "toolUse", "error", "aborted" (pi's names).
  std::string_view stop_reason;
  // The provider error as surfaced by the client, usually "<status> <body>".
  std::string_view error_message;
  // Usage as the provider reported it (tokens).
  double input = 0, output = 0, cache_read = 0, cache_write = 0;
  // HTTP status of the failed response; 0 = unknown.
  int http_status = 0;
};

// Why a response is (or is not) an overflow.
enum class OverflowReason {
  kNone,              // not an overflow
  kVetoed,            // rate limit / throttling / HTTP 429 wording: never an overflow
  kTokenPattern,      // an error text naming a token/context limit (token evidence)
  kNoBody,            // "400/413 (status code) (no body)" anywhere in the text
  kGenericLimit,      // "exceeds the limit of N" without the word tokens
  kPayloadRejected,   // a byte/media size rejection with no token evidence (not an overflow)
  kUsageOverWindow,   // accepted, but input + cacheRead + cacheWrite > window
  kLengthZeroOutput,  // "length" stop, no output, input >= 0.99 x window (MiMo)
};

std::string_view OverflowReasonName(OverflowReason reason);

struct OverflowVerdict {
  // True when overflow recovery (compaction / shrinking the request) applies.
  bool overflow = false;
  // True when the request was rejected for its byte size (413 and friends):
  // recovery is media reduction (images to markers), not summarization. A bare
  // "413 (no body)" is both an overflow and a payload rejection (dual-flagged;
  // the caller arbitrates with its local headroom).
  bool payload = false;
  OverflowReason reason = OverflowReason::kNone;
  // The pattern (source text) that decided, for diagnostics; empty for usage rules.
  std::string matched;
};

// Classifies one response. `context_window` <= 0 disables the usage rules.
OverflowVerdict ClassifyOverflow(const OverflowInput& input, int64_t context_window = 0);

// ClassifyOverflow(...).overflow.
bool IsContextOverflow(const OverflowInput& input, int64_t context_window = 0);

// The same for a stored assistant message (stopReason, errorMessage, usage).
bool IsContextOverflow(const Message& assistant, int64_t context_window = 0);

// The pattern table as data (for documentation and tests).
enum class OverflowPatternClass {
  kToken,    // token-overflow evidence
  kGeneric,  // overflow, but not token evidence ("exceeds the limit of N")
  kPayload,  // byte/media size rejection
  kVeto,     // never an overflow
  kNoBody,   // the no-body 400/413 rule
};
struct OverflowPattern {
  std::string_view pattern;  // PCRE2 source, compiled caseless
  OverflowPatternClass cls;
  std::string_view provider;  // who it was written for
};
const std::vector<OverflowPattern>& OverflowPatterns();
// Whether row `index` of OverflowPatterns() matches `text` on its own (false
// when the index is out of range or the row failed to compile).
bool OverflowPatternMatches(size_t index, std::string_view text);

// The window learned from an overflowing request of `failed_request_tokens`
// (estimated): floor(0.85 x size). Callers only ever lower a window with it.
int64_t LearnedWindowFromOverflow(int64_t failed_request_tokens);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_OVERFLOW_H_
