// Cut-point selection: pi 0.73.1's findCutPoint (with Compactor's fixes unless
// pi_quirks is set) and the other keep policies.
#include <algorithm>

#include "compactor/prepare.h"

namespace compactor {
namespace {

bool IsMessage(const CutEntry& e) { return e.type == EntryType::kMessage; }

bool IsValidCutPoint(const CutEntry& e) {
  if (e.type == EntryType::kBranchSummary || e.type == EntryType::kCustomMessage) return true;
  if (!IsMessage(e)) return false;
  switch (e.role) {
    case Role::kUser:
    case Role::kAssistant:
    case Role::kBashExecution:
    case Role::kCustom:
    case Role::kBranchSummary:
    case Role::kCompactionSummary:
      return true;
    default:
      return false;
  }
}

bool IsTurnStart(const CutEntry& e) {
  if (e.type == EntryType::kBranchSummary || e.type == EntryType::kCustomMessage) return true;
  return IsMessage(e) && (e.role == Role::kUser || e.role == Role::kBashExecution);
}

bool IsUserMessage(const CutEntry& e) { return IsMessage(e) && e.role == Role::kUser; }

// Entries that put a message into the context (pi's getMessageFromEntry minus compactions).
bool ProducesMessage(const CutEntry& e) {
  return IsMessage(e) || e.type == EntryType::kCustomMessage || e.type == EntryType::kBranchSummary;
}

// A cut that neither starts the kept part with a tool result nor leaves a
// tool result behind its call: the first message entry at or after `c` is not
// a tool result (an assistant cut keeps its own results after it).
bool IsPairSafeCut(std::span<const CutEntry> entries, size_t c, size_t end) {
  if (!IsValidCutPoint(entries[c])) return false;
  for (size_t k = c; k < end; ++k) {
    if (IsMessage(entries[k])) return entries[k].role != Role::kToolResult;
  }
  return true;
}

// pi's step 4: metadata entries directly before the cut move into the kept part.
// pi stops only at `message` and `compaction` entries, so it also pulls in
// custom_message and branch_summary entries.
size_t PullBackPi(std::span<const CutEntry> entries, size_t cut, size_t start) {
  while (cut > start) {
    const CutEntry& prev = entries[cut - 1];
    if (prev.type == EntryType::kCompaction || prev.type == EntryType::kMessage) break;
    --cut;
  }
  return cut;
}

// Compactor's own policies stop at any entry that enters the context (newest pi's rule).
size_t PullBackMetadata(std::span<const CutEntry> entries, size_t cut, size_t start) {
  while (cut > start) {
    const CutEntry& prev = entries[cut - 1];
    if (prev.type == EntryType::kCompaction || ProducesMessage(prev)) break;
    --cut;
  }
  return cut;
}

// pi's step 5, with the Q1 fix unless `pi_quirks`: whether the cut starts a
// turn is decided by the first message entry at or after the (pulled-back)
// cut, so a settings entry in front of a kept user message is not a split.
CutPoint Classify(std::span<const CutEntry> entries, size_t cut, size_t start, bool pi_quirks,
                  bool empty_prefix_is_no_split) {
  bool starts_with_user = IsUserMessage(entries[cut]);
  if (!pi_quirks && !starts_with_user) {
    for (size_t k = cut; k < entries.size(); ++k) {
      if (IsMessage(entries[k])) {
        starts_with_user = entries[k].role == Role::kUser;
        break;
      }
    }
  }
  CutPoint r;
  r.first_kept_index = cut;
  if (starts_with_user) return r;
  r.turn_start_index = FindTurnStartIndex(entries, cut, start);
  r.is_split_turn = r.turn_start_index.has_value();
  if (empty_prefix_is_no_split && r.is_split_turn && *r.turn_start_index == cut) {
    r.is_split_turn = false;
    r.turn_start_index.reset();
  }
  return r;
}

CutPoint KeepEverything(size_t start) { return CutPoint{start, std::nullopt, false}; }

}  // namespace

std::vector<size_t> FindValidCutPoints(std::span<const CutEntry> entries, size_t start,
                                       size_t end) {
  std::vector<size_t> cuts;
  end = std::min(end, entries.size());
  for (size_t i = start; i < end; ++i) {
    if (IsValidCutPoint(entries[i])) cuts.push_back(i);
  }
  return cuts;
}

std::optional<size_t> FindTurnStartIndex(std::span<const CutEntry> entries, size_t index,
                                         size_t start) {
  if (entries.empty()) return std::nullopt;
  index = std::min(index, entries.size() - 1);
  for (size_t i = index + 1; i-- > start;) {
    if (IsTurnStart(entries[i])) return i;
  }
  return std::nullopt;
}

CutPoint FindCutPoint(std::span<const CutEntry> entries, size_t start, size_t end,
                      int64_t keep_recent_tokens, const CutOptions& options) {
  end = std::min(end, entries.size());
  std::vector<size_t> cuts = FindValidCutPoints(entries, start, end);
  if (cuts.empty()) return KeepEverything(start);
  size_t cut = cuts.front();
  int64_t accumulated = 0;
  for (size_t i = end; i-- > start;) {
    if (!IsMessage(entries[i])) continue;  // pi counts only `message` entries
    accumulated += entries[i].tokens;
    if (accumulated >= keep_recent_tokens) {
      auto it = std::lower_bound(cuts.begin(), cuts.end(), i);
      if (it != cuts.end()) {
        cut = *it;
      } else if (!options.pi_quirks) {
        // Q7: the budget was crossed on tool results after the last cut point.
        // pi keeps everything (nothing is ever summarized); keep the least instead.
        cut = cuts.back();
      }
      break;
    }
  }
  cut = PullBackPi(entries, cut, start);
  return Classify(entries, cut, start, options.pi_quirks, /*empty_prefix_is_no_split=*/false);
}

CutPoint FindCutPointLastTurns(std::span<const CutEntry> entries, size_t start, size_t end,
                               int turns) {
  end = std::min(end, entries.size());
  if (turns < 1) turns = 1;
  int seen = 0;
  for (size_t i = end; i-- > start;) {
    if (!IsTurnStart(entries[i])) continue;
    if (++seen == turns) {
      size_t cut = PullBackMetadata(entries, i, start);
      return Classify(entries, cut, start, /*pi_quirks=*/false, /*empty_prefix_is_no_split=*/true);
    }
  }
  return KeepEverything(start);
}

CutPoint FindCutPointLastMessages(std::span<const CutEntry> entries, size_t start, size_t end,
                                  int messages) {
  end = std::min(end, entries.size());
  if (messages < 1) messages = 1;
  int seen = 0;
  std::optional<size_t> candidate;
  for (size_t i = end; i-- > start;) {
    if (ProducesMessage(entries[i]) && ++seen == messages) {
      candidate = i;
      break;
    }
  }
  if (!candidate) return KeepEverything(start);
  // Move earlier to the nearest safe cut: keeping one message more beats an
  // orphaned tool result.
  for (size_t c = *candidate + 1; c-- > start;) {
    if (IsPairSafeCut(entries, c, end)) {
      size_t cut = PullBackMetadata(entries, c, start);
      return Classify(entries, cut, start, /*pi_quirks=*/false, /*empty_prefix_is_no_split=*/true);
    }
  }
  return KeepEverything(start);
}

int64_t OpencodeTailBudget(int64_t usable_tokens) {
  int64_t quarter = usable_tokens > 0 ? usable_tokens / 4 : 0;
  return std::min<int64_t>(8000, std::max<int64_t>(2000, quarter));
}

CutPoint FindCutPointOpencode(std::span<const CutEntry> entries, size_t start, size_t end,
                              int64_t budget, int turns) {
  end = std::min(end, entries.size());
  if (start >= end) return KeepEverything(start);
  if (turns < 1) turns = 1;
  // suffix[i - start] = Σ tokens of [i, end).
  std::vector<int64_t> suffix(end - start + 1, 0);
  for (size_t i = end; i-- > start;) suffix[i - start] = suffix[i - start + 1] + entries[i].tokens;
  auto tail = [&](size_t i) { return suffix[i - start]; };

  std::vector<size_t> users;
  for (size_t i = start; i < end; ++i) {
    if (IsUserMessage(entries[i])) users.push_back(i);
  }
  auto finish = [&](size_t c) {
    size_t cut = PullBackMetadata(entries, c, start);
    return Classify(entries, cut, start, /*pi_quirks=*/false, /*empty_prefix_is_no_split=*/true);
  };
  int available = static_cast<int>(std::min<size_t>(users.size(), static_cast<size_t>(turns)));
  for (int k = available; k >= 1; --k) {
    size_t u = users[users.size() - static_cast<size_t>(k)];
    if (tail(u) <= budget) return finish(u);
  }
  // The newest turn alone is over budget: start later inside it.
  size_t lo = users.empty() ? start : users.back() + 1;
  std::optional<size_t> last_safe;
  for (size_t c = lo; c < end; ++c) {
    if (!IsPairSafeCut(entries, c, end)) continue;
    if (tail(c) <= budget) return finish(c);
    last_safe = c;
  }
  if (last_safe) return finish(*last_safe);
  if (!users.empty()) return finish(users.back());
  return KeepEverything(start);
}

}  // namespace compactor
