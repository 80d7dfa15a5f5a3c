#include "compactor/eval.h"
#include "compactor/providers.h"

namespace compactor {
namespace {

class LlmProbeJudge : public ProbeJudge {
 public:
  explicit LlmProbeJudge(std::vector<ModelConfig> candidates)
      : candidates_(std::move(candidates)) {}
  std::string_view name() const override {
    return candidates_.empty() ? std::string_view("llm") : std::string_view(candidates_[0].name);
  }
  Result<double> Score(std::string_view context_text,
                       const ProbeQuestion& question) const override {
    if (candidates_.empty()) return Status::InvalidArgument("no judge model configured");
    JudgePrompt p = BuildJudgePrompt(context_text, question);
    SummaryRequestText text;
    text.system_prompt = p.system_prompt;
    text.user_prompt = p.user_text;
    text.max_tokens = 512;  // the score line plus a short justification
    COMPACTOR_ASSIGN_OR_RETURN(std::string reply,
                               CompleteSummary(candidates_, text, CallOptions{}));
    return ParseJudgeScore(reply);
  }

 private:
  std::vector<ModelConfig> candidates_;
};

}  // namespace

std::unique_ptr<ProbeJudge> NewLlmProbeJudge(std::vector<ModelConfig> candidates) {
  return std::make_unique<LlmProbeJudge>(std::move(candidates));
}

}  // namespace compactor
