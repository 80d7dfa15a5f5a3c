// The "summary" strategy (pi 0.73.1; oh-my-pi's "context-full"): the
// preparation's cut, the history before it summarized (a split turn's prefix
// separately, concurrently), and a plain pi compaction entry appended at the
// leaf (docs/strategies.md).
#include <algorithm>
#include <span>

#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/strategy.h"
#include "strategies/message_feed.h"
#include "strategies/support.h"
#include "util/background.h"

namespace compactor {
namespace internal {

Result<std::string> SummarizePreparation(const Session& session, const CompactOptions& o,
                                         const PrepareResult& pr, const Summarizer& summarizer,
                                         std::string* preserve, CompactionResult* r) {
  const CompactionPreparation& prep = *pr.preparation;
  // The messages kept verbatim: the context's last ones. The summaries read
  // them only to learn what they revise (SummaryRequest::later_messages),
  // and only a summarizer that reads them needs them parsed.
  const std::vector<ContextMessage>& context = pr.context.messages;
  const size_t kept_count =
      summarizer.ReadsLaterMessages() ? std::min(prep.kept_messages, context.size()) : 0;
  const std::vector<ContextMessage> kept(context.end() - static_cast<std::ptrdiff_t>(kept_count),
                                         context.end());
  MessageFeed kept_feed({&kept}, o.env);
  kept_feed.ParseAll();
  const std::span<const Message> kept_messages = kept_feed.messages();
  // One vector for both: the compacting hooks see them together, the
  // summaries each see their own part. A summarizer that reads in order
  // starts while later messages are parsed.
  MessageFeed feed({&prep.messages_to_summarize, &prep.turn_prefix_messages}, o.env);
  const bool stream = summarizer.ReadsMessagesInOrder();
  if (stream) {
    feed.Start();
  } else {
    feed.ParseAll();
  }
  const size_t history_size = prep.messages_to_summarize.size();
  const std::span<const Message> all = feed.messages();
  const std::span<const Message> history = all.first(history_size);
  const std::span<const Message> prefix = all.subspan(history_size);
  SummaryRequest req;
  req.kind = SummaryKind::kHistory;
  req.previous_summary = prep.previous_summary.value_or("");
  req.read_files = prep.file_lists.read_files;
  req.modified_files = prep.file_lists.modified_files;
  req.max_output_tokens = DefaultMaxOutputTokens(SummaryKind::kHistory, o.settings.reserve_tokens);
  if (o.hooks) feed.WaitFor(all.size());  // the hooks see every message
  ApplyCompactingHooks(o, session, feed.messages(), &req, preserve, &r->hook_errors);
  // Later messages are numbered after the summarized ones: the turn prefix
  // in the feed, then the kept ones, parsed already.
  if (stream) {
    req.wait_for_messages = [&feed](size_t n) {
      feed.WaitFor(std::min(n, feed.messages().size()));
    };
  }
  std::string summary;
  if (prep.is_split_turn && !prefix.empty()) {
    SummaryRequest preq = req;
    preq.kind = SummaryKind::kTurnPrefix;
    preq.previous_summary.clear();
    preq.messages = prefix;
    preq.later_messages = {kept_messages};
    if (stream) {
      preq.wait_for_messages = [&feed, history_size](size_t n) {
        feed.WaitFor(std::min(history_size + n, feed.messages().size()));
      };
    }
    preq.max_output_tokens =
        DefaultMaxOutputTokens(SummaryKind::kTurnPrefix, o.settings.reserve_tokens);
    // The two summaries are independent: run the turn prefix concurrently.
    Background<Result<std::string>> prefix_task(o.env, [&] { return summarizer.Summarize(preq); });
    std::string history_text;
    Status history_status;
    if (history.empty() && req.previous_summary.empty()) {
      history_text = std::string(kNoPriorHistory);
    } else {
      req.messages = history;
      req.later_messages = {prefix, kept_messages};
      auto h = SummarizeInPasses(summarizer, req);
      if (h.ok()) {
        history_text = *h;
      } else {
        history_status = h.status();
      }
    }
    Result<std::string> p = prefix_task.Get();
    COMPACTOR_RETURN_IF_ERROR(history_status);
    if (!p.ok()) return p.status();
    summary = MergeSplitTurnSummaries(history_text, *p);
  } else {
    req.messages = history;
    req.later_messages = {kept_messages};
    COMPACTOR_ASSIGN_OR_RETURN(summary, SummarizeInPasses(summarizer, req));
  }
  return summary + FormatFileOperations(prep.file_lists);
}

namespace {

constexpr std::string_view kAliases[] = {"context-full"};

class Summary final : public CompactionStrategy {
 public:
  std::string_view name() const override { return "summary"; }
  std::span<const std::string_view> aliases() const override { return kAliases; }
  std::string_view description() const override {
    return "pi's compaction: the history before the cut summarized, recent messages kept "
           "verbatim (default)";
  }
  StrategyNeeds needs() const override { return {.summarizer = true}; }
  CompactionOutput output() const override { return CompactionOutput::kAppendEntry; }

  Status Compute(const Session& session, const CompactOptions& o, const Summarizer& summarizer,
                 ComputedCompaction* out) const override {
    CompactionResult& r = out->result;
    PrepareResult pr;
    COMPACTOR_ASSIGN_OR_RETURN(CompactionPreparation * prep, PrepareOrSkip(session, o, &pr, &r));
    if (!prep) return Status::Ok();
    COMPACTOR_ASSIGN_OR_RETURN(bool below, SkipBelowThreshold(o, &r));
    if (below) return Status::Ok();
    r.first_kept_entry_id = prep->first_kept_entry_id;
    r.split_turn = prep->is_split_turn;
    r.messages_summarized = prep->messages_to_summarize.size();
    r.turn_prefix_messages = prep->turn_prefix_messages.size();
    r.summarized_tokens = prep->messages_to_summarize_tokens + prep->turn_prefix_tokens;
    r.read_files = prep->file_lists.read_files;
    r.modified_files = prep->file_lists.modified_files;

    CompactionEntryFields f;
    f.first_kept_entry_id = prep->first_kept_entry_id;
    f.tokens_before = prep->tokens_before;
    f.details_json = DetailsJson(prep->file_lists);
    f.from_hook = false;
    std::string preserve;
    BeforeCompactResult hook;
    if (CancelledByHook(session, *prep, o, name(), &r, &hook)) return Status::Ok();
    if (hook.compaction) {
      // A before_compact handler supplied the compaction: no summarizer call.
      const SuppliedCompaction& c = *hook.compaction;
      r.from_hook = true;
      f.from_hook = true;
      f.summary = c.summary;
      if (c.first_kept_entry_id) f.first_kept_entry_id = *c.first_kept_entry_id;
      if (c.tokens_before) f.tokens_before = *c.tokens_before;
      f.details_json = c.details_json;
      preserve = c.preserve_data_json;
    } else {
      COMPACTOR_ASSIGN_OR_RETURN(f.summary,
                                 SummarizePreparation(session, o, pr, summarizer, &preserve, &r));
    }

    int64_t summary_tokens =
        EstimateMessageTokens(MakeCompactionSummaryJson(f.summary, f.tokens_before, 0));
    r.tokens_after = summary_tokens + prep->kept_tokens;
    f.extra.push_back({"method", "\"summary\""});
    f.extra.push_back({"tokensAfter", JsNumber(static_cast<double>(r.tokens_after))});
    if (!preserve.empty()) f.extra.push_back({"preserveData", preserve});
    EntryBase base = NewBase(session, LeafIdOf(session, o), o);
    r.entry_id = base.id;
    r.entry_json = MakeCompactionEntry(base, f);
    r.summary = f.summary;
    r.first_kept_entry_id = f.first_kept_entry_id;
    r.tokens_before = f.tokens_before;
    r.compacted = true;
    CheckEffective(o, &r);
    return Status::Ok();
  }
};

}  // namespace

const CompactionStrategy& SummaryStrategy() {
  static const Summary kStrategy;
  return kStrategy;
}

}  // namespace internal
}  // namespace compactor
