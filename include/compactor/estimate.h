// pi's token estimate: ceil(UTF-16 code units / 4) per message, with pi's
// per-role rules (pi-session-format.md §11). This is the default token count
// everywhere; exact tokenizers live in tokenizer.h.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_ESTIMATE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_ESTIMATE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "compactor/context.h"
#include "compactor/message.h"

namespace compactor {

// Characters pi charges per image block in toolResult and custom messages.
inline constexpr int64_t kImageEstimateChars = 4800;

// Number of UTF-16 code units of a UTF-8 string (JavaScript's string.length).
// Invalid sequences count as U+FFFD (1 unit each), as Node decodes them.
int64_t Utf16Length(std::string_view utf8);

// pi's estimateTokens(message) on a message's raw JSON. Never fails: unreadable
// JSON counts 0.
int64_t EstimateMessageTokens(std::string_view message_json);
int64_t EstimateMessageTokens(const Message& message);

// pi's calculateContextTokens: totalTokens || input + output + cacheRead + cacheWrite.
double CalculateContextTokens(const Usage& usage);

struct ContextEstimate {
  int64_t heuristic_sum = 0;    // Σ estimate over all messages
  double tokens = 0;            // usageTokens + trailingTokens
  double usage_tokens = 0;      // from the last valid assistant usage, 0 if none
  int64_t trailing_tokens = 0;  // Σ estimate of messages after it (or of all)
  std::optional<size_t> last_usage_index;
};

// pi's estimateContextTokens over the rebuilt context.
ContextEstimate EstimateContextTokens(const std::vector<ContextMessage>& messages);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_ESTIMATE_H_
