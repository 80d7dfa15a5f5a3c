// pi 0.73.1's prepareCompaction over a Session (docs/compatibility.md),
// with Compactor's fixes and keep policies.
#include "compactor/prepare.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "prepare/file_ops_internal.h"
#include "util/two_halves.h"

namespace compactor {
namespace {

// Maps entry indices to their message in the rebuilt context (a flat array
// over entry indices: a long history has tens of thousands).
class ContextIndex {
 public:
  explicit ContextIndex(const SessionContext& context) : context_(context) {
    size_t n = 0;
    for (const ContextMessage& m : context.messages) n = std::max(n, m.entry_index + 1);
    position_.assign(n, -1);
    for (size_t i = 0; i < context.messages.size(); ++i) {
      // A compaction's summary is emitted first and carries the compaction's
      // entry index; it never stands for a path entry in a summarized range.
      if (context.messages[i].role == Role::kCompactionSummary) continue;
      long& p = position_[context.messages[i].entry_index];
      if (p < 0) p = static_cast<long>(i);  // the first message of an entry
    }
  }
  const ContextMessage* Find(size_t entry_index) const {
    long p = Position(entry_index);
    return p < 0 ? nullptr : &context_.messages[static_cast<size_t>(p)];
  }
  // Position of the entry's message in the context, or -1.
  long Position(size_t entry_index) const {
    return entry_index < position_.size() ? position_[entry_index] : -1;
  }

 private:
  const SessionContext& context_;
  std::vector<long> position_;
};

// pi's getMessageFromEntryForCompaction: the message an entry contributes to a
// summarized range (compactions and metadata contribute none).
std::optional<ContextMessage> MessageFor(const Session& session, const ContextIndex& index,
                                         size_t entry_index) {
  const Entry& e = session.entry(entry_index);
  switch (e.type) {
    case EntryType::kMessage:
    case EntryType::kCustomMessage:
    case EntryType::kBranchSummary: {
      if (const ContextMessage* m = index.Find(entry_index)) return *m;
      ContextMessage m;
      m.entry_index = entry_index;
      if (e.type == EntryType::kMessage) {
        m.role = e.role;
        m.stored = session.MessageJson(entry_index);
        return m;
      }
      if (e.type == EntryType::kBranchSummary) {
        // The context skips empty branch summaries; pi's preparation does not.
        m.role = Role::kBranchSummary;
        m.owned = MakeBranchSummaryJson(session.StringField(entry_index, "summary").value_or(""),
                                        e.from_id, e.timestamp_ms);
        return m;
      }
      return std::nullopt;  // every custom_message on the path is in the context
    }
    default:
      return std::nullopt;
  }
}

// The number of tool-call blocks the loader counted in this stored message,
// or -1 when it did not measure it.
int64_t KnownToolCallBlocks(const Session& session, const ContextMessage& m) {
  if (!m.owned.empty() || m.entry_index >= session.size()) return -1;
  const Entry& e = session.entry(m.entry_index);
  if (m.stored.data() != session.MessageJson(m.entry_index).data()) return -1;
  return e.tool_call_blocks;
}

// The file operations of the assistant messages in `lists`. Sets, so the
// order messages are read in does not matter: a long history is split
// between two threads.
void CollectFileOps(Env* env, const Session& session,
                    std::initializer_list<const std::vector<ContextMessage>*> lists, FileOps& ops) {
  struct Job {
    std::string_view json;
    bool known_tool_calls;  // the index counted tool-call blocks: no pre-filter
  };
  std::vector<Job> jobs;
  size_t bytes = 0;
  auto add = [&ops](std::string_view tool, std::string_view path) {
    internal::AddFileOp(tool, std::string(path), ops);
  };
  for (const auto* list : lists) {
    for (const ContextMessage& m : *list) {
      if (m.role != Role::kAssistant) continue;
      int64_t blocks = KnownToolCallBlocks(session, m);
      if (blocks == 0) continue;
      // The index pass read the calls already: no second parse.
      if (blocks > 0 && session.ForEachFileCall(m.entry_index, add)) continue;
      jobs.push_back({m.json(), blocks > 0});
      bytes += m.json().size();
    }
  }
  constexpr size_t kParallelBytes = 8u << 20;
  FileOps second;
  env = EnvOrDefault(env);
  internal::RunInTwoHalves(
      env, jobs.size(), bytes >= kParallelBytes && env->HardwareThreads() >= 2,
      [&jobs](size_t i) { return jobs[i].json.size(); },
      [&](size_t from, size_t to, int half) {
        FileOps& out = half == 0 ? ops : second;
        for (size_t i = from; i < to; ++i) {
          if (jobs[i].known_tool_calls) {
            internal::ExtractFileOpsFromToolCallJson(jobs[i].json, out);
          } else {
            ExtractFileOpsFromJson(jobs[i].json, out);
          }
        }
      });
  ops.read.merge(second.read);
  ops.written.merge(second.written);
  ops.edited.merge(second.edited);
}

CutPoint SelectCut(std::span<const CutEntry> cut_entries, size_t start, size_t end,
                   KeepPolicy policy, const PrepareOptions& options) {
  const CompactionSettings& s = options.settings;
  switch (policy) {
    case KeepPolicy::kRecentTokens:
      return FindCutPoint(cut_entries, start, end, s.keep_recent_tokens,
                          CutOptions{.pi_quirks = options.pi_quirks});
    case KeepPolicy::kLastTurns:
      return FindCutPointLastTurns(cut_entries, start, end, s.keep_turns);
    case KeepPolicy::kLastMessages:
      return FindCutPointLastMessages(cut_entries, start, end, s.keep_messages);
    case KeepPolicy::kOpencode: {
      int64_t usable = s.context_window > 0 ? s.context_window - s.reserve_tokens : 0;
      return FindCutPointOpencode(cut_entries, start, end, OpencodeTailBudget(usable));
    }
  }
  return FindCutPoint(cut_entries, start, end, s.keep_recent_tokens);
}

}  // namespace

std::vector<CutEntry> MakeCutEntries(const Session& session, const std::vector<size_t>& path,
                                     const SessionContext& context, size_t from,
                                     const TokenCounter& counter,
                                     const std::vector<int64_t>* context_estimates) {
  ContextIndex index(context);
  std::vector<CutEntry> out(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    const Entry& e = session.entry(path[i]);
    CutEntry& c = out[i];
    c.type = e.type;
    c.role = e.type == EntryType::kMessage ? e.role : Role::kOther;
    if (i < from) continue;  // before the boundary: never measured
    long pos = context_estimates ? index.Position(path[i]) : -1;
    if (pos >= 0 && static_cast<size_t>(pos) < context_estimates->size()) {
      c.tokens = (*context_estimates)[static_cast<size_t>(pos)];
    } else if (e.type == EntryType::kMessage) {
      c.tokens = EntryMessageTokens(session, path[i], counter);
    } else if (e.type == EntryType::kCustomMessage || e.type == EntryType::kBranchSummary) {
      if (const ContextMessage* m = index.Find(path[i]))
        c.tokens = ContextMessageTokens(session, *m, counter);
    }
  }
  return out;
}

Result<PrepareResult> PrepareCompaction(const Session& session, const PrepareOptions& options) {
  ContextOptions copts;
  copts.leaf_id = options.leaf_id;
  COMPACTOR_ASSIGN_OR_RETURN(SessionContext context, BuildSessionContext(session, copts));
  return PrepareCompaction(session, std::move(context), options);
}

Result<PrepareResult> PrepareCompaction(const Session& session, SessionContext context,
                                        const PrepareOptions& options) {
  // Only the settings preparation reads: the strategy name is checked where
  // it is resolved (the registry, above this module; docs/architecture.md).
  COMPACTOR_RETURN_IF_ERROR(ValidateSettingRanges(options.settings));
  const KeepPolicy policy = options.settings.keep_policy;
  TokenCounter counter;
  if (options.counter) {
    counter = *options.counter;
  } else {
    COMPACTOR_ASSIGN_OR_RETURN(
        counter, TokenCounter::FromName(TokenizerSettingName(options.settings.tokenizer)));
  }
  PrepareResult result;
  result.context = std::move(context);
  result.estimate = EstimateContextTokens(session, result.context.messages, counter);
  const std::vector<size_t>& path = result.context.path;

  if (path.empty()) {
    result.skip = PrepareSkip::kEmptySession;
    result.skip_reason = "Nothing to compact (session is empty)";
    return result;
  }
  if (session.entry(path.back()).type == EntryType::kCompaction) {
    result.skip = PrepareSkip::kAlreadyCompacted;
    result.skip_reason = "Already compacted";
    return result;
  }

  CompactionPreparation prep;
  prep.keep_policy = policy;
  prep.settings = options.settings;

  // The previous compaction: the range to summarize starts at what it kept.
  std::optional<size_t> prev;
  for (size_t i = path.size(); i-- > 0;) {
    if (session.entry(path[i]).type == EntryType::kCompaction) {
      prev = i;
      break;
    }
  }
  size_t boundary = 0;
  if (prev) {
    size_t prev_entry = path[*prev];
    prep.previous_compaction_entry_index = prev_entry;
    prep.previous_summary = session.StringField(prev_entry, "summary");
    std::string_view kept_id = session.entry(prev_entry).first_kept_entry_id;
    boundary = *prev + 1;
    for (size_t i = 0; i < path.size(); ++i) {
      if (session.entry(path[i]).id == kept_id) {
        boundary = i;
        break;
      }
    }
  }
  prep.boundary_start_path_index = boundary;
  prep.tokens_before = result.estimate.tokens;

  std::vector<CutEntry> cut_entries = MakeCutEntries(session, path, result.context, boundary,
                                                     counter, &result.estimate.per_message);
  CutPoint cut = SelectCut(cut_entries, boundary, path.size(), policy, options);
  prep.first_kept_path_index = cut.first_kept_index;
  prep.first_kept_entry_index = path[cut.first_kept_index];
  prep.first_kept_entry_id = session.entry(prep.first_kept_entry_index).id;
  prep.turn_start_path_index = cut.turn_start_index;
  prep.is_split_turn = cut.is_split_turn;

  ContextIndex index(result.context);
  size_t history_end = cut.is_split_turn ? *cut.turn_start_index : cut.first_kept_index;
  for (size_t i = boundary; i < history_end; ++i) {
    if (auto m = MessageFor(session, index, path[i])) {
      prep.messages_to_summarize_tokens += cut_entries[i].tokens;
      prep.messages_to_summarize.push_back(std::move(*m));
    }
  }
  if (cut.is_split_turn) {
    for (size_t i = *cut.turn_start_index; i < cut.first_kept_index; ++i) {
      if (auto m = MessageFor(session, index, path[i])) {
        prep.turn_prefix_tokens += cut_entries[i].tokens;
        prep.turn_prefix_messages.push_back(std::move(*m));
      }
    }
  }
  for (size_t i = cut.first_kept_index; i < path.size(); ++i) {
    const Entry& e = session.entry(path[i]);
    if (e.type == EntryType::kMessage || e.type == EntryType::kCustomMessage ||
        (e.type == EntryType::kBranchSummary && index.Find(path[i]))) {
      prep.kept_tokens += cut_entries[i].tokens;
      ++prep.kept_messages;
    }
  }

  if (prep.messages_to_summarize.empty() && prep.turn_prefix_messages.empty() &&
      !options.pi_quirks) {
    // Q3/Q6: pi returns an empty preparation and a manual /compact then
    // summarizes nothing; report it instead.
    result.skip = PrepareSkip::kNothingToCompact;
    result.skip_reason = "Nothing to compact (session too small)";
    return result;
  }

  // File operations: cumulative from the previous pi-generated compaction,
  // then the tool calls of both summarized ranges.
  if (prev && !session.entry(path[*prev]).from_hook) {
    SeedFileOpsFromDetails(session.FieldJson(path[*prev], "details"), prep.file_ops);
  }
  CollectFileOps(options.env, session, {&prep.messages_to_summarize, &prep.turn_prefix_messages},
                 prep.file_ops);
  prep.file_lists = ComputeFileLists(prep.file_ops);
  result.preparation = std::move(prep);
  return result;
}

}  // namespace compactor
