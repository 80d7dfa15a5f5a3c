// The "notes" strategy (Nominal Code): the content of a notes file the agent
// keeps is the summary; the last keepMessages messages stay verbatim. No
// summarizer is called (docs/strategies.md).
#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/strategy.h"
#include "strategies/support.h"

namespace compactor {
namespace internal {
namespace {

class Notes final : public CompactionStrategy {
 public:
  std::string_view name() const override { return "notes"; }
  std::string_view description() const override {
    return "the notes file (--notes) is the summary, the last messages kept verbatim; no "
           "summarizer";
  }
  StrategyNeeds needs() const override { return {.notes_file = true}; }
  CompactionOutput output() const override { return CompactionOutput::kAppendEntry; }

  Status Compute(const Session& session, const CompactOptions& o, const Summarizer& /*summarizer*/,
                 ComputedCompaction* out) const override {
    CompactionResult& r = out->result;
    if (o.notes_path.empty())
      return Status::InvalidArgument("the notes strategy needs a notes file (--notes FILE)");
    COMPACTOR_ASSIGN_OR_RETURN(std::string notes, EnvOrDefault(o.env)->ReadFile(o.notes_path));
    size_t b = notes.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) {
      r.skipped_reason = "empty notes";
      return Status::Ok();
    }
    size_t e = notes.find_last_not_of(" \t\r\n");
    notes = notes.substr(b, e - b + 1);
    CompactOptions po = o;
    po.settings.keep_policy = KeepPolicy::kLastMessages;
    PrepareResult pr;
    COMPACTOR_ASSIGN_OR_RETURN(CompactionPreparation * prep, PrepareOrSkip(session, po, &pr, &r));
    if (!prep) return Status::Ok();
    COMPACTOR_ASSIGN_OR_RETURN(bool below, SkipBelowThreshold(o, &r));
    if (below) return Status::Ok();
    if (CancelledByHook(session, *prep, o, name(), &r)) return Status::Ok();
    r.messages_summarized = prep->messages_to_summarize.size() + prep->turn_prefix_messages.size();
    r.summarized_tokens = prep->messages_to_summarize_tokens + prep->turn_prefix_tokens;
    CompactionEntryFields f;
    f.summary = notes;
    f.first_kept_entry_id = prep->first_kept_entry_id;
    f.tokens_before = prep->tokens_before;
    f.details_json = DetailsJson(prep->file_lists);
    f.from_hook = false;
    r.tokens_after =
        EstimateMessageTokens(MakeCompactionSummaryJson(notes, 0, 0)) + prep->kept_tokens;
    f.extra.push_back({"method", "\"notes\""});
    f.extra.push_back({"tokensAfter", JsNumber(static_cast<double>(r.tokens_after))});
    EntryBase base = NewBase(session, LeafIdOf(session, o), o);
    r.entry_id = base.id;
    r.entry_json = MakeCompactionEntry(base, f);
    r.summary = notes;
    r.first_kept_entry_id = prep->first_kept_entry_id;
    r.tokens_before = prep->tokens_before;
    r.read_files = prep->file_lists.read_files;
    r.modified_files = prep->file_lists.modified_files;
    r.compacted = true;
    CheckEffective(o, &r);
    return Status::Ok();
  }
};

}  // namespace

const CompactionStrategy& NotesStrategy() {
  static const Notes kStrategy;
  return kStrategy;
}

}  // namespace internal
}  // namespace compactor
