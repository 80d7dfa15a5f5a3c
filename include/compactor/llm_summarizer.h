// The Summarizer (summarizer.h) backed by configured LLM models: the prompt
// builder's text sent through CompleteSummary (providers.h) with its retries,
// candidate fallback and overflow shrinking.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_LLM_SUMMARIZER_H_
#define COMPACTOR_INCLUDE_COMPACTOR_LLM_SUMMARIZER_H_

#include <memory>
#include <vector>

#include "compactor/providers.h"
#include "compactor/summarizer.h"

namespace compactor {

struct LlmSummarizerOptions {
  // The primary model first, then the fallbacks. REQUIRES: not empty.
  std::vector<ModelConfig> candidates;
  // Transport, clock, retry policy, environment and cancellation. A null
  // `windows` gets a memory owned by the summarizer (learned windows persist
  // across its calls).
  CallOptions call;
  // Sizes the default output caps (0.8 x reserve for a summary, 0.5 x reserve
  // for a turn prefix; summarizer.h DefaultMaxOutputTokens).
  int64_t reserve_tokens = kDefaultReserveTokens;
};

// Summarize() builds the prompt (BuildSummaryPrompt), bounded by the request's
// max_input_tokens or, when that is 0, by the primary model's context window
// minus the output cap; on an overflow the prompt is rebuilt from the messages
// at 0.7, 0.5 and 0.35 of its size (oldest parts dropped first). The request's
// is_cancelled is honoured alongside the options' cancellation. name() is the
// primary model's provider name ("anthropic", "openai-chat", ...).
// Errors: kInvalidArgument when `candidates` is empty (at Summarize time).
std::unique_ptr<Summarizer> NewLlmSummarizer(LlmSummarizerOptions options);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_LLM_SUMMARIZER_H_
