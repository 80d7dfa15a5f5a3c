// The registry of built-in strategies: one table, one line per strategy.
// Each strategy file defines the accessor declared here; nothing registers
// itself from a static initializer (a static library drops object files no
// one references, and with them such registrations).
#include <fmt/format.h>

#include "compactor/strategy.h"

namespace compactor {
namespace internal {
const CompactionStrategy& SummaryStrategy();      // summary.cc
const CompactionStrategy& UserPromptsStrategy();  // user_prompts.cc
const CompactionStrategy& NotesStrategy();        // notes.cc
const CompactionStrategy& HandoffStrategy();      // handoff.cc
const CompactionStrategy& MaskStrategy();         // mask.cc
const CompactionStrategy& MaskSummaryStrategy();  // mask_summary.cc
}  // namespace internal

std::span<const CompactionStrategy* const> Strategies() {
  // Help texts and messages list them in this order; the first is the default.
  static const CompactionStrategy* const kTable[] = {
      &internal::SummaryStrategy(),      // pi / oh-my-pi: summary + recent messages verbatim
      &internal::UserPromptsStrategy(),  // Kimi Code / Codex: kept user prompts + summary
      &internal::NotesStrategy(),        // Nominal Code: the notes file is the summary
      &internal::HandoffStrategy(),      // oh-my-pi: a new session from a handoff document
      &internal::MaskStrategy(),         // observation masking: old tool outputs as placeholders
      &internal::MaskSummaryStrategy(),  // masking, then a summary of what is still over budget
  };
  return kTable;
}

const CompactionStrategy& DefaultStrategy() { return *Strategies().front(); }

const CompactionStrategy* FindStrategy(std::string_view name) {
  for (const CompactionStrategy* s : Strategies()) {
    if (s->name() == name) return s;
    for (std::string_view alias : s->aliases()) {
      if (alias == name) return s;
    }
  }
  return nullptr;
}

Result<const CompactionStrategy*> ParseStrategy(std::string_view name) {
  if (const CompactionStrategy* s = FindStrategy(name)) return s;
  return Status::InvalidArgument(
      fmt::format("unknown strategy \"{}\" ({})", name, StrategyNames()));
}

std::string StrategyNames(std::string_view separator) {
  std::string out;
  for (const CompactionStrategy* s : Strategies()) {
    if (!out.empty()) out += separator;
    out += s->name();
  }
  return out;
}

namespace {

// Hands the compaction to the strategy that wrote it (its "method" field).
class RegisteredExpander final : public CompactionExpander {
 public:
  bool Expand(const CompactionOnPath& c, std::vector<ContextMessage>* out) const override {
    const size_t index = c.path[c.path_index];
    std::optional<std::string> method = c.session.StringField(index, "method");
    if (!method) return false;
    const CompactionStrategy* s = FindStrategy(*method);
    return s != nullptr && s->ExpandCompaction(c, out);
  }
};

}  // namespace

const CompactionExpander* StrategyExpander() {
  static const RegisteredExpander kExpander;
  return &kExpander;
}

}  // namespace compactor
