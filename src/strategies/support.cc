#include "strategies/support.h"

#include "compactor/js_json.h"
#include "compactor/policy.h"
#include "compactor/writer.h"
#include "strategies/message_feed.h"

namespace compactor::internal {

int64_t NowMs(const CompactOptions& o) { return EnvOrDefault(o.env)->NowMs(); }

std::vector<Message> ParseAll(std::initializer_list<const std::vector<ContextMessage>*> lists,
                              Env* env) {
  MessageFeed feed(lists, env);
  feed.ParseAll();
  return feed.TakeMessages();
}

std::string DetailsJson(const FileLists& lists, const std::string& extra_members) {
  std::string d = "{\"readFiles\":" + JsStringArray(lists.read_files) +
                  ",\"modifiedFiles\":" + JsStringArray(lists.modified_files);
  d += extra_members;
  d += "}";
  return d;
}

void ApplyCompactingHooks(const CompactOptions& o, const Session& session,
                          const std::vector<Message>& messages, SummaryRequest* req,
                          std::string* preserve_data, std::vector<std::string>* errors) {
  req->custom_instructions = o.instructions;
  if (!o.hooks) return;
  CompactingResult r = o.hooks->RunCompacting({session, messages}, errors);
  if (r.prompt) {
    req->custom_instructions = *r.prompt;
    req->replace_instructions = true;
  }
  if (!r.context.empty()) {
    std::string extra = "Additional context:";
    for (const std::string& line : r.context) extra += "\n- " + line;
    req->custom_instructions =
        req->custom_instructions.empty() ? extra : req->custom_instructions + "\n\n" + extra;
  }
  *preserve_data = r.preserve_data_json;
}

Result<CompactionPreparation*> PrepareOrSkip(const Session& session, const CompactOptions& o,
                                             PrepareResult* out, CompactionResult* result) {
  PrepareOptions po;
  po.settings = o.settings;
  po.leaf_id = o.leaf_id;
  po.pi_quirks = o.pi_quirks;
  po.env = o.env;
  COMPACTOR_ASSIGN_OR_RETURN(*out, PrepareCompaction(session, po));
  result->tokens_before = out->estimate.tokens;
  if (!out->preparation) {
    switch (out->skip) {
      case PrepareSkip::kAlreadyCompacted:
        result->skipped_reason = "already compacted";
        break;
      case PrepareSkip::kEmptySession:
        result->skipped_reason = "empty session";
        break;
      default:
        result->skipped_reason = "nothing to summarize";
        break;
    }
    return static_cast<CompactionPreparation*>(nullptr);
  }
  return &*out->preparation;
}

Result<bool> SkipBelowThreshold(const CompactOptions& o, CompactionResult* result) {
  if (!o.only_if_needed) return false;
  COMPACTOR_ASSIGN_OR_RETURN(
      TriggerDecision d,
      ShouldCompact(result->tokens_before, o.settings.context_window, o.settings));
  if (d.compact) return false;
  result->skipped_reason = "below threshold: " + d.reason;
  return true;
}

bool CancelledByHook(const Session& session, const CompactionPreparation& preparation,
                     const CompactOptions& o, std::string_view strategy, CompactionResult* result,
                     BeforeCompactResult* hook_result) {
  if (!o.hooks) return false;
  BeforeCompactResult b = o.hooks->RunBeforeCompact(
      {session, preparation, strategy, o.instructions}, &result->hook_errors);
  if (b.cancel) {
    result->skipped_reason = "cancelled by hook";
    return true;
  }
  if (hook_result) *hook_result = std::move(b);
  return false;
}

void CheckEffective(const CompactOptions& o, CompactionResult* r) {
  if (o.settings.context_window <= 0) return;
  auto d =
      ShouldCompact(static_cast<double>(r->tokens_after), o.settings.context_window, o.settings);
  if (d.ok() && d->compact) r->ineffective = true;
}

EntryBase NewBase(const Session& session, const std::string& parent, const CompactOptions& o) {
  return EntryBase{NewEntryId(session, {}, o.env), parent, FormatIsoTimestamp(NowMs(o))};
}

std::string LeafIdOf(const Session& session, const CompactOptions& o) {
  if (o.leaf_id) return *o.leaf_id;
  auto leaf = session.Leaf();
  return leaf ? std::string(session.entry(*leaf).id) : "";
}

Result<MeasuredContext> MeasureContext(const Session& session, const CompactOptions& o,
                                       const CompactionExpander* expander, CompactionResult* r) {
  ContextOptions co;
  co.leaf_id = o.leaf_id;
  co.expander = expander;
  MeasuredContext m;
  COMPACTOR_ASSIGN_OR_RETURN(m.ctx, BuildSessionContext(session, co));
  COMPACTOR_ASSIGN_OR_RETURN(m.counter,
                             TokenCounter::FromName(TokenizerSettingName(o.settings.tokenizer)));
  m.est = EstimateContextTokens(session, m.ctx.messages, m.counter);
  r->tokens_before = m.est.tokens;
  return m;
}

}  // namespace compactor::internal
