// oh-my-pi 15.7.2's pruneToolOutputs (docs/strategies.md), with the
// token count pluggable so the same code gives pi-estimate and o200k numbers.
#include "compactor/prune.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "prune/common.h"
#include "util/json_scan.h"

namespace compactor {

namespace internal {

MessageTokenCounter CounterOrDefault(const MessageTokenCounter& counter) {
  return counter ? counter : PiEstimateCounter();
}

std::vector<ToolOutput> CollectToolOutputs(const Session& session,
                                           const std::vector<size_t>& entries,
                                           const std::vector<size_t>& path_positions,
                                           const MessageTokenCounter& count) {
  std::vector<ToolOutput> out;
  for (size_t k = entries.size(); k-- > 0;) {
    const size_t i = entries[k];
    const Entry& e = session.entry(i);
    if (e.type != EntryType::kMessage || e.role != Role::kToolResult) continue;
    ToolOutput t;
    t.entry_index = i;
    t.path_index = path_positions[k];
    t.json = session.MessageJson(i);
    // A message that does not parse still counts (the counter decides how
    // much); its name and call id are then unknown.
    if (auto m = ParseMessage(t.json); m.ok()) t.message = std::move(*m);
    t.tokens = count(t.json);
    t.already_pruned = !FindMember(t.json, "prunedAt").empty();
    out.push_back(std::move(t));
  }
  return out;
}

int64_t QuarterCharTokens(std::string_view text) { return (Utf16Length(text) + 3) / 4; }

bool IsProtectedTool(const std::vector<std::string>& tools, std::string_view name) {
  return std::find(tools.begin(), tools.end(), name) != tools.end();
}

ReplacedOutput Replace(const Session& session, const ToolOutput& t, std::string replacement) {
  ReplacedOutput r;
  r.entry_index = t.entry_index;
  r.path_index = t.path_index;
  r.entry_id = session.entry(t.entry_index).id;
  r.tool_name = t.message.tool_name;
  r.tool_call_id = t.message.tool_call_id;
  r.tokens = t.tokens;
  r.tokens_saved = std::max<int64_t>(0, t.tokens - QuarterCharTokens(replacement));
  r.replacement = std::move(replacement);
  return r;
}

Result<std::optional<size_t>> ResolveLeaf(const Session& session, std::optional<size_t> leaf) {
  if (leaf) {
    if (*leaf >= session.size())
      return Status::InvalidArgument("leaf index " + std::to_string(*leaf) + " out of range (" +
                                     std::to_string(session.size()) + " entries)");
    return leaf;
  }
  return session.Leaf();
}

}  // namespace internal

MessageTokenCounter PiEstimateCounter() {
  return [](std::string_view json) { return EstimateMessageTokens(json); };
}

MessageTokenCounter TokenizerCounter(TextTokenCounter count_text, int64_t image_tokens) {
  return [count_text = std::move(count_text), image_tokens](std::string_view json) -> int64_t {
    auto m = ParseMessage(json);
    if (!m.ok()) return 0;
    if (m->content_is_string) return count_text(m->content_string);
    int64_t n = 0;
    for (const ContentBlock& b : m->content) {
      if (b.kind == ContentBlock::Kind::kText) n += count_text(b.text);
      if (b.kind == ContentBlock::Kind::kImage) n += image_tokens;
    }
    return n;
  };
}

std::string PruneNotice(int64_t tokens) {
  return "[Output truncated - " + std::to_string(tokens) + " tokens]";
}

Result<RewritePlan> PlanPrune(const Session& session, std::optional<size_t> leaf,
                              const PruneOptions& options) {
  COMPACTOR_ASSIGN_OR_RETURN(std::optional<size_t> resolved, internal::ResolveLeaf(session, leaf));
  RewritePlan plan;
  if (!resolved) {
    plan.skipped_reason = "empty session";
    return plan;
  }
  std::vector<size_t> path = session.PathTo(*resolved);
  std::vector<size_t> positions(path.size());
  for (size_t k = 0; k < path.size(); ++k) positions[k] = k;
  if (options.only_in_context) {
    ContextOptions co;
    co.leaf_id = session.entry(*resolved).id;
    COMPACTOR_ASSIGN_OR_RETURN(SessionContext ctx, BuildSessionContext(session, co));
    std::unordered_set<size_t> visible;
    for (const ContextMessage& m : ctx.messages)
      if (m.role == Role::kToolResult) visible.insert(m.entry_index);
    std::vector<size_t> kept_entries, kept_positions;
    for (size_t k = 0; k < path.size(); ++k) {
      if (!visible.count(path[k])) continue;
      kept_entries.push_back(path[k]);
      kept_positions.push_back(k);
    }
    path = std::move(kept_entries);
    positions = std::move(kept_positions);
  }
  const MessageTokenCounter count = internal::CounterOrDefault(options.count_tokens);
  std::vector<internal::ToolOutput> outputs =
      internal::CollectToolOutputs(session, path, positions, count);

  // Newest to oldest; everything seen adds to the window, candidates included.
  int64_t accumulated = 0;
  std::vector<ReplacedOutput> candidates;
  for (internal::ToolOutput& t : outputs) {
    plan.scanned++;
    const int64_t before = accumulated;
    accumulated += t.tokens;
    if (t.already_pruned) {
      plan.already_pruned++;
      continue;
    }
    if (before < options.protect_tokens ||
        internal::IsProtectedTool(options.protected_tools, t.message.tool_name) ||
        t.tokens < options.min_prune_tokens) {
      plan.kept++;
      continue;
    }
    ReplacedOutput r = internal::Replace(session, t, PruneNotice(t.tokens));
    plan.candidate_savings += r.tokens_saved;
    candidates.push_back(std::move(r));
  }
  plan.candidate_count = candidates.size();
  if (candidates.empty()) {
    plan.skipped_reason = "no candidates outside the protected window";
    return plan;
  }
  if (plan.candidate_savings < options.minimum_savings) {
    plan.skipped_reason = "savings " + std::to_string(plan.candidate_savings) +
                          " below the minimum " + std::to_string(options.minimum_savings);
    return plan;
  }
  std::reverse(candidates.begin(), candidates.end());
  plan.outputs = std::move(candidates);
  plan.tokens_saved = plan.candidate_savings;
  return plan;
}

}  // namespace compactor
