// The "mask-summary" strategy: old tool outputs masked as the mask strategy
// masks them (PlanMask: its placeholders and keep rules), and only when the
// masked context is still over the trigger threshold the oldest part
// summarized (pi's cut, measured on the masked messages; the summarizer reads
// the original outputs). Recorded as ONE compaction entry appended at the
// leaf; ExpandCompaction rebuilds Compactor's view from it, pi reads its
// summary and firstKeptEntryId (docs/strategies.md, "mask-summary").
#include <simdjson.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/policy.h"
#include "compactor/prune.h"
#include "compactor/strategy.h"
#include "strategies/support.h"
#include "util/json_scan.h"

namespace compactor {
namespace internal {
namespace {

constexpr std::string_view kName = "mask-summary";

// The entry's summary when nothing was summarized and no earlier compaction
// has a summary to carry: what pi shows above the (unmasked) history.
constexpr std::string_view kNothingSummarized =
    "Nothing was summarized. Compactor shows older tool outputs of this conversation as "
    "placeholders; the full history follows.";

// Tool-result entry id -> the placeholder its content becomes.
using Placeholders = std::unordered_map<std::string, std::string>;

std::string MaskedMessageJson(std::string_view message_json, std::string_view placeholder) {
  std::string content = R"([{"type":"text","text":)";
  AppendJsString(content, placeholder);
  content += "}]";
  return SetMember(message_json, "content", content);
}

// Replaces the content of the tool results named in `masked` by their placeholder.
void ApplyMasks(const Session& s, const Placeholders& masked, std::vector<ContextMessage>* msgs) {
  for (ContextMessage& m : *msgs) {
    if (m.role != Role::kToolResult || !m.origin.empty()) continue;
    auto it = masked.find(std::string(s.entry(m.entry_index).id));
    if (it == masked.end()) continue;
    std::string json = MaskedMessageJson(m.json(), it->second);
    m.owned = std::move(json);
  }
}

// Puts the stored (unmasked) message back: the summarizer reads the outputs.
void Unmask(const Session& s, std::vector<ContextMessage>* msgs) {
  for (ContextMessage& m : *msgs) {
    if (m.role != Role::kToolResult || m.owned.empty() || !m.origin.empty()) continue;
    m.owned.clear();
    m.stored = s.MessageJson(m.entry_index);
  }
}

// Compactor's view of the path up to the compaction, from `before` (its view
// at the compaction's parent): when something was summarized, the summary
// message and the messages from `first_kept` on; else every message. Earlier
// compactions' messages before the cut are covered by the new summary.
std::vector<ContextMessage> View(const Session& s, const std::vector<size_t>& path,
                                 const std::vector<ContextMessage>& before,
                                 std::optional<ContextMessage> summary, std::string_view first_kept,
                                 const Placeholders& masked) {
  std::vector<ContextMessage> out;
  if (!summary) {
    out = before;
  } else {
    std::unordered_map<size_t, size_t> position;  // entry index -> path position
    size_t kept_at = path.size();
    for (size_t i = 0; i < path.size(); ++i) {
      position[path[i]] = i;
      if (kept_at == path.size() && s.entry(path[i]).id == first_kept) kept_at = i;
    }
    out.push_back(std::move(*summary));
    for (const ContextMessage& m : before) {
      if (s.entry(m.entry_index).type == EntryType::kCompaction) continue;
      auto it = position.find(m.entry_index);
      if (it != position.end() && it->second >= kept_at) out.push_back(m);
    }
  }
  ApplyMasks(s, masked, &out);
  return out;
}

// {"id","placeholder"} pairs of the entry's details.masked; false when unreadable.
bool ReadDetails(std::string_view details, bool* summarized, Placeholders* masked) {
  if (details.empty()) return false;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(details.data(), details.size()).get(root)) return false;
  simdjson::dom::array list;
  if (root["summarized"].get(*summarized) || root["masked"].get(list)) return false;
  for (simdjson::dom::element e : list) {
    std::string_view id, text;
    if (e["id"].get(id) || e["placeholder"].get(text)) return false;
    (*masked)[std::string(id)] = std::string(text);
  }
  return true;
}

// The file lists of an earlier compaction's details (carried when nothing new
// is summarized, so pi's next compaction still sees them).
FileLists ReadFileLists(std::string_view details) {
  FileLists f;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (details.empty() || parser.parse(details.data(), details.size()).get(root)) return f;
  auto read = [&](const char* key, std::vector<std::string>* out) {
    simdjson::dom::array a;
    if (root[key].get(a)) return;
    for (simdjson::dom::element e : a) {
      std::string_view v;
      if (!e.get(v)) out->emplace_back(v);
    }
  };
  read("readFiles", &f.read_files);
  read("modifiedFiles", &f.modified_files);
  return f;
}

std::string MaskedDetails(const FileLists& files, bool summarized, const RewritePlan& plan) {
  std::string extra = summarized ? ",\"summarized\":true" : ",\"summarized\":false";
  extra += ",\"masked\":[";
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (i) extra += ",";
    extra += "{\"id\":";
    AppendJsString(extra, plan.outputs[i].entry_id);
    extra += ",\"placeholder\":";
    AppendJsString(extra, plan.outputs[i].replacement);
    extra += "}";
  }
  extra += "]";
  return DetailsJson(files, extra);
}

// Whether the masked context still fires the trigger. An unknown window
// (settings.context_window = 0) gives no budget: masking alone is done.
Result<bool> OverBudget(const CompactOptions& o, int64_t masked_tokens) {
  if (o.settings.context_window <= 0) return false;
  COMPACTOR_ASSIGN_OR_RETURN(
      TriggerDecision d,
      ShouldCompact(static_cast<double>(masked_tokens), o.settings.context_window, o.settings));
  return d.compact;
}

class MaskSummary final : public CompactionStrategy {
 public:
  std::string_view name() const override { return kName; }
  std::string_view description() const override {
    return "old tool outputs as placeholders, then the oldest part summarized only while the "
           "context is still over the threshold; one appended entry";
  }
  StrategyNeeds needs() const override { return {.summarizer = true}; }
  CompactionOutput output() const override { return CompactionOutput::kAppendEntry; }
  void InitResult(CompactionResult* result) const override { result->masked_outputs = 0; }

  Status Compute(const Session& session, const CompactOptions& o, const Summarizer& summarizer,
                 ComputedCompaction* out) const override {
    CompactionResult& r = out->result;
    COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc,
                               MeasureContext(session, o, StrategyExpander(), &r));
    COMPACTOR_ASSIGN_OR_RETURN(bool below, SkipBelowThreshold(o, &r));
    if (below) return Status::Ok();
    const std::vector<size_t>& path = mc.ctx.path;
    if (path.empty()) {
      r.skipped_reason = "empty session";
      return Status::Ok();
    }
    if (session.entry(path.back()).type == EntryType::kCompaction) {
      r.skipped_reason = "already compacted";
      return Status::Ok();
    }
    COMPACTOR_ASSIGN_OR_RETURN(RewritePlan plan, PlanMask(session, path.back(), o.mask));
    Placeholders masked;
    for (const ReplacedOutput& x : plan.outputs) masked[x.entry_id] = x.replacement;
    SessionContext masked_ctx = mc.ctx;
    ApplyMasks(session, masked, &masked_ctx.messages);
    const int64_t masked_tokens =
        EstimateContextTokens(session, masked_ctx.messages, mc.counter).heuristic_sum;
    COMPACTOR_ASSIGN_OR_RETURN(bool over, OverBudget(o, masked_tokens));

    CompactionEntryFields f;
    f.tokens_before = r.tokens_before;
    f.from_hook = false;
    std::string preserve;
    std::optional<ContextMessage> summary_message;
    FileLists files;
    PrepareResult pr;
    if (over) {
      PrepareOptions po;
      po.settings = o.settings;
      po.leaf_id = o.leaf_id;
      po.pi_quirks = o.pi_quirks;
      po.counter = mc.counter;
      po.env = o.env;
      // The cut by pi's rules over the masked sizes: only what masking left
      // over the keep budget is summarized.
      COMPACTOR_ASSIGN_OR_RETURN(pr, PrepareCompaction(session, masked_ctx, po));
    }
    if (CompactionPreparation* prep = pr.preparation ? &*pr.preparation : nullptr) {
      if (CancelledByHook(session, *prep, o, name(), &r)) return Status::Ok();
      if (prep->previous_summary == kNothingSummarized) prep->previous_summary.reset();
      Unmask(session, &prep->messages_to_summarize);
      Unmask(session, &prep->turn_prefix_messages);
      r.messages_summarized = prep->messages_to_summarize.size();
      r.turn_prefix_messages = prep->turn_prefix_messages.size();
      r.split_turn = prep->is_split_turn;
      r.summarized_tokens =
          EstimateContextTokens(session, prep->messages_to_summarize, mc.counter).heuristic_sum +
          EstimateContextTokens(session, prep->turn_prefix_messages, mc.counter).heuristic_sum;
      COMPACTOR_ASSIGN_OR_RETURN(f.summary,
                                 SummarizePreparation(session, o, pr, summarizer, &preserve, &r));
      f.first_kept_entry_id = prep->first_kept_entry_id;
      files = prep->file_lists;
      // Outputs before the cut are summarized, not shown: no placeholder to record.
      std::erase_if(plan.outputs, [&](const ReplacedOutput& x) {
        return x.path_index < prep->first_kept_path_index;
      });
      summary_message = ContextMessage{Role::kCompactionSummary,
                                       path.back(),
                                       {},
                                       MakeCompactionSummaryJson(f.summary, f.tokens_before, 0),
                                       {}};
    } else if (plan.outputs.empty()) {
      r.skipped_reason = plan.skipped_reason.empty() ? "nothing to mask" : plan.skipped_reason;
      return Status::Ok();
    } else if (mc.ctx.compaction_path_index) {
      // Nothing summarized: pi keeps seeing what the earlier compaction gave it.
      const size_t prev = path[*mc.ctx.compaction_path_index];
      f.summary = session.StringField(prev, "summary").value_or("");
      f.first_kept_entry_id = std::string(session.entry(prev).first_kept_entry_id);
      files = ReadFileLists(session.FieldJson(prev, "details"));
    } else {
      f.summary = std::string(kNothingSummarized);
      f.first_kept_entry_id = std::string(session.entry(path.front()).id);
    }
    f.details_json = MaskedDetails(files, summary_message.has_value(), plan);
    r.masked_outputs = plan.outputs.size();
    r.first_kept_entry_id = f.first_kept_entry_id;
    r.read_files = files.read_files;
    r.modified_files = files.modified_files;
    const std::vector<ContextMessage> view =
        View(session, path, mc.ctx.messages, summary_message, f.first_kept_entry_id, masked);
    r.tokens_after = EstimateContextTokens(session, view, mc.counter).heuristic_sum;
    f.extra.push_back({"method", "\"mask-summary\""});
    f.extra.push_back({"tokensAfter", JsNumber(static_cast<double>(r.tokens_after))});
    f.extra.push_back({"maskedOutputs", JsNumber(static_cast<double>(plan.outputs.size()))});
    if (!preserve.empty()) f.extra.push_back({"preserveData", preserve});
    EntryBase base = NewBase(session, LeafIdOf(session, o), o);
    r.entry_id = base.id;
    r.entry_json = MakeCompactionEntry(base, f);
    r.summary = summary_message ? f.summary : "";
    r.compacted = true;
    CheckEffective(o, &r);
    return Status::Ok();
  }

  // Compactor's view: the context at the entry's parent (itself expanded, so
  // earlier mask-summary entries keep their placeholders), cut at
  // firstKeptEntryId behind the summary when one was made, with this entry's
  // placeholders.
  bool ExpandCompaction(const CompactionOnPath& c,
                        std::vector<ContextMessage>* out) const override {
    const Session& s = c.session;
    const size_t index = c.path[c.path_index];
    bool summarized = false;
    Placeholders masked;
    if (c.path_index == 0 || !ReadDetails(s.FieldJson(index, "details"), &summarized, &masked))
      return false;
    ContextOptions co;
    co.leaf_id = std::string(s.entry(c.path[c.path_index - 1]).id);
    co.expander = StrategyExpander();
    auto before = BuildSessionContext(s, co);
    if (!before.ok()) return false;
    std::optional<ContextMessage> summary;
    if (summarized) {
      summary = EntryMessage(s, index);
      if (!summary) return false;
    }
    std::vector<ContextMessage> view = View(s, before->path, before->messages, std::move(summary),
                                            s.entry(index).first_kept_entry_id, masked);
    for (ContextMessage& m : view) out->push_back(std::move(m));
    return true;
  }
};

}  // namespace

const CompactionStrategy& MaskSummaryStrategy() {
  static const MaskSummary kStrategy;
  return kStrategy;
}

}  // namespace internal
}  // namespace compactor
