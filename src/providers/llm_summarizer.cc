// Adapter from the Summarizer interface to the provider call policy.
#include "compactor/llm_summarizer.h"

#include <cmath>

namespace compactor {
namespace {

class LlmSummarizer : public Summarizer {
 public:
  explicit LlmSummarizer(LlmSummarizerOptions options) : options_(std::move(options)) {
    if (!options_.call.windows) options_.call.windows = std::make_shared<WindowMemory>();
  }

  std::string_view name() const override {
    return options_.candidates.empty() ? std::string_view("llm")
                                       : std::string_view(options_.candidates.front().api);
  }

  Result<std::string> Summarize(const SummaryRequest& request) const override {
    if (options_.candidates.empty()) {
      return Status::InvalidArgument("no summarizer model configured");
    }
    COMPACTOR_RETURN_IF_ERROR(CheckSummarizable(request));
    SummaryRequest req = request;
    SummaryKind kind = EffectiveKind(req);
    if (req.max_output_tokens <= 0) {
      req.max_output_tokens = DefaultMaxOutputTokens(kind, options_.reserve_tokens);
    }
    const ModelConfig& primary = options_.candidates.front();
    if (primary.max_output_tokens > 0) {
      req.max_output_tokens = std::min(req.max_output_tokens, primary.max_output_tokens);
    }
    if (req.max_input_tokens <= 0 && primary.context_window > 0) {
      int64_t room = primary.context_window - req.max_output_tokens;
      if (room > 0) req.max_input_tokens = room;
    }
    COMPACTOR_ASSIGN_OR_RETURN(SummaryPrompt prompt, BuildSummaryPrompt(req));
    SummaryRequestText text;
    text.system_prompt = prompt.system_prompt;
    text.user_prompt = prompt.user_text;
    text.max_tokens = prompt.max_output_tokens;
    text.thinking_level = req.thinking_level;

    const int64_t full_tokens =
        EstimateTextTokens(text.system_prompt) + EstimateTextTokens(text.user_prompt);
    ShrinkFunction shrink = [req, text,
                             full_tokens](double fraction) -> Result<SummaryRequestText> {
      SummaryRequest smaller = req;
      smaller.max_input_tokens =
          static_cast<int64_t>(std::floor(fraction * static_cast<double>(full_tokens)));
      COMPACTOR_ASSIGN_OR_RETURN(SummaryPrompt p, BuildSummaryPrompt(smaller));
      SummaryRequestText out = text;
      out.user_prompt = std::move(p.user_text);
      return out;
    };

    CallOptions call = options_.call;
    if (request.is_cancelled) {
      auto outer = call.is_cancelled;
      auto inner = request.is_cancelled;
      call.is_cancelled = [outer, inner] { return (outer && outer()) || inner(); };
    }
    return CompleteSummary(options_.candidates, text, call, shrink);
  }

 private:
  LlmSummarizerOptions options_;
};

}  // namespace

std::unique_ptr<Summarizer> NewLlmSummarizer(LlmSummarizerOptions options) {
  return std::make_unique<LlmSummarizer>(std::move(options));
}

}  // namespace compactor
