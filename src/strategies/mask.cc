// The "mask" strategy (observation masking): old tool outputs of the context
// replaced by placeholders in place (MaskObservations, prune.h); every
// message stays and no summarizer is called (docs/strategies.md).
#include "compactor/prune.h"
#include "compactor/strategy.h"
#include "strategies/support.h"

namespace compactor {
namespace internal {
namespace {

class Mask final : public CompactionStrategy {
 public:
  std::string_view name() const override { return "mask"; }
  std::string_view description() const override {
    return "observation masking: old tool outputs replaced by placeholders in place (the file is "
           "rewritten, with a backup); no summarizer";
  }
  StrategyNeeds needs() const override { return {}; }
  CompactionOutput output() const override { return CompactionOutput::kRewriteFile; }
  bool summarizes_history() const override { return false; }
  void InitResult(CompactionResult* result) const override { result->masked_outputs = 0; }

  Status Compute(const Session& session, const CompactOptions& o, const Summarizer& /*summarizer*/,
                 ComputedCompaction* out) const override {
    CompactionResult& r = out->result;
    COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc, MeasureContext(session, o, nullptr, &r));
    COMPACTOR_ASSIGN_OR_RETURN(bool below, SkipBelowThreshold(o, &r));
    if (below) return Status::Ok();
    std::optional<size_t> leaf = o.leaf_id ? session.Find(*o.leaf_id) : session.Leaf();
    ApplyOptions apply;
    apply.env = o.env;
    COMPACTOR_ASSIGN_OR_RETURN(MaskResult m, MaskObservations(session, leaf, o.mask, apply));
    if (m.plan.outputs.empty()) {
      r.skipped_reason = m.plan.skipped_reason.empty() ? "nothing to mask" : m.plan.skipped_reason;
      return Status::Ok();
    }
    r.masked_outputs = m.plan.outputs.size();
    r.messages_summarized = 0;
    r.summarized_tokens = m.plan.tokens_saved;
    // Provider usage predates the masking; measure the rebuilt context instead.
    r.tokens_after = mc.est.heuristic_sum - m.plan.tokens_saved;
    r.compacted = true;
    out->rewritten_jsonl = std::move(m.rewritten);
    out->rewrite_plan = std::move(m.plan);
    CheckEffective(o, &r);
    return Status::Ok();
  }
};

}  // namespace

const CompactionStrategy& MaskStrategy() {
  static const Mask kStrategy;
  return kStrategy;
}

}  // namespace internal
}  // namespace compactor
