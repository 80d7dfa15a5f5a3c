// pi's token estimate: ceil(UTF-16 code units / 4) per message, with pi's
// per-role rules (pi 0.73.1's estimateTokens; docs/session-format.md). This is
// the default token count
// everywhere; exact tokenizers live in tokenizer.h.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_ESTIMATE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_ESTIMATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/context.h"
#include "compactor/message.h"
#include "compactor/tokenizer.h"

namespace compactor {

// Characters pi charges per image block in toolResult and custom messages.
inline constexpr int64_t kImageEstimateChars = 4800;

// Number of UTF-16 code units of a UTF-8 string (JavaScript's string.length).
// Each invalid sequence (its maximal subpart) counts as one U+FFFD, as Node
// decodes it (TextDecoder, Buffer#toString).
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
  // The estimate of each message, in context order (reused by preparation so
  // no message is measured twice).
  std::vector<int64_t> per_message;
};

// pi's estimateContextTokens over the rebuilt context.
ContextEstimate EstimateContextTokens(const std::vector<ContextMessage>& messages);

// Tokens charged per image block by the exact counters (oh-my-pi's rule).
inline constexpr int64_t kImageExactTokens = 1200;

// How message tokens are counted: pi's chars/4 estimate (the default, and the
// only way to match pi's numbers) or an exact tokenizer applied to the same
// fragments pi's estimate measures (oh-my-pi's o200k rule: text, thinking,
// tool-call name + JSON arguments, bash command + output, summaries; 1200 per
// image; other roles 0). Cheap to copy; thread-safe.
class TokenCounter {
 public:
  TokenCounter() = default;  // the estimate
  explicit TokenCounter(std::shared_ptr<const Tokenizer> tokenizer);
  // "estimate", "o200k", "cl100k" (also "o200k_base", "cl100k_base"). Loaded
  // tokenizers are cached for the life of the process.
  static Result<TokenCounter> FromName(std::string_view name, const VocabOptions& vocab = {});

  bool exact() const { return tokenizer_ != nullptr; }
  std::string_view name() const;
  int64_t Message(std::string_view message_json) const;
  int64_t Message(const compactor::Message& message) const;
  int64_t Text(std::string_view text) const;

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;
};

// The context size right now (pi's getContextUsage rule): provider usage is
// trusted only when a valid assistant message follows the latest compaction
// on the path; otherwise the usage predates the compaction and the size is the
// estimate of the rebuilt messages alone.
ContextEstimate EstimateCurrentContextTokens(const Session& session, const SessionContext& context,
                                             const TokenCounter& counter);

// estimateContextTokens with another counter for the message estimates.
ContextEstimate EstimateContextTokens(const std::vector<ContextMessage>& messages,
                                      const TokenCounter& counter);

// The same over messages of `session`, taking each stored message's estimate
// from the index when the session was loaded with
// LoadOptions::message_observer = TokenEstimateObserver() (identical numbers,
// no second read).
ContextEstimate EstimateContextTokens(const Session& session,
                                      const std::vector<ContextMessage>& messages,
                                      const TokenCounter& counter);

// The observer that measures pi's estimate of every message while a session
// is indexed (LoadOptions::message_observer). A static object: never null,
// thread-safe, lives as long as the program.
const MessageObserver* TokenEstimateObserver();

// counter.Message() of one message, from the index when it was measured there.
int64_t EntryMessageTokens(const Session& session, size_t entry_index, const TokenCounter& counter);
int64_t ContextMessageTokens(const Session& session, const ContextMessage& message,
                             const TokenCounter& counter);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_ESTIMATE_H_
