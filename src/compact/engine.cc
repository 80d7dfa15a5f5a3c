#include <algorithm>
#include <exception>
#include <initializer_list>
#include <span>

#include "compact/message_feed.h"
#include "compactor/compact.h"
#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/policy.h"
#include "compactor/user_prompts.h"
#include "compactor/writer.h"
#include "util/background.h"
#include "util/json_scan.h"

namespace compactor {

std::string_view StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kSummary:
      return "summary";
    case Strategy::kUserPrompts:
      return "user-prompts";
    case Strategy::kNotes:
      return "notes";
    case Strategy::kHandoff:
      return "handoff";
    case Strategy::kMask:
      return "mask";
  }
  return "summary";
}

Result<Strategy> ParseStrategy(std::string_view n) {
  if (n == "summary" || n == "context-full") return Strategy::kSummary;
  if (n == "user-prompts") return Strategy::kUserPrompts;
  if (n == "notes") return Strategy::kNotes;
  if (n == "handoff") return Strategy::kHandoff;
  if (n == "mask") return Strategy::kMask;
  return Status::InvalidArgument("unknown strategy \"" + std::string(n) +
                                 "\" (summary, user-prompts, notes, handoff, mask)");
}

namespace {

int64_t NowMs(const CompactOptions& o) { return EnvOrDefault(o.env)->NowMs(); }

// Every message of `lists`, parsed (see internal::MessageFeed).
std::vector<Message> ParseAll(std::initializer_list<const std::vector<ContextMessage>*> lists,
                              Env* env) {
  internal::MessageFeed feed(lists, env);
  feed.ParseAll();
  return feed.TakeMessages();
}

std::string DetailsJson(const FileLists& lists, const std::string& extra_members = "") {
  std::string d = "{\"readFiles\":" + JsStringArray(lists.read_files) +
                  ",\"modifiedFiles\":" + JsStringArray(lists.modified_files);
  d += extra_members;
  d += "}";
  return d;
}

// The instructions a summarizer gets: the caller's text plus what compacting
// hooks added.
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

// Whether the trigger policy says the context needs compacting at all.
Result<bool> BelowThreshold(const CompactOptions& o, double tokens, std::string* reason) {
  if (!o.only_if_needed) return false;
  COMPACTOR_ASSIGN_OR_RETURN(TriggerDecision d,
                             ShouldCompact(tokens, o.settings.context_window, o.settings));
  *reason = d.reason;
  return !d.compact;
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

// --- summary -------------------------------------------------------------

Result<ComputedCompaction> ComputeSummary(const Session& session, const CompactOptions& o,
                                          const Summarizer& summarizer) {
  ComputedCompaction out;
  CompactionResult& r = out.result;
  r.strategy = Strategy::kSummary;
  PrepareResult pr;
  COMPACTOR_ASSIGN_OR_RETURN(CompactionPreparation * prep, PrepareOrSkip(session, o, &pr, &r));
  if (!prep) return out;
  std::string why;
  COMPACTOR_ASSIGN_OR_RETURN(bool below, BelowThreshold(o, r.tokens_before, &why));
  if (below) {
    r.skipped_reason = "below threshold: " + why;
    return out;
  }
  r.first_kept_entry_id = prep->first_kept_entry_id;
  r.split_turn = prep->is_split_turn;
  r.messages_summarized = prep->messages_to_summarize.size();
  r.turn_prefix_messages = prep->turn_prefix_messages.size();
  r.summarized_tokens = prep->messages_to_summarize_tokens + prep->turn_prefix_tokens;
  r.read_files = prep->file_lists.read_files;
  r.modified_files = prep->file_lists.modified_files;

  std::string summary, details = DetailsJson(prep->file_lists), preserve;
  std::optional<bool> from_hook;
  std::string first_kept = prep->first_kept_entry_id;
  double tokens_before = prep->tokens_before;
  bool supplied = false;
  if (o.hooks) {
    BeforeCompactResult b = o.hooks->RunBeforeCompact(
        {session, *prep, Strategy::kSummary, o.instructions}, &r.hook_errors);
    if (b.cancel) {
      r.skipped_reason = "cancelled by hook";
      return out;
    }
    if (b.compaction) {
      supplied = true;
      from_hook = true;
      r.from_hook = true;
      summary = b.compaction->summary;
      if (b.compaction->first_kept_entry_id) first_kept = *b.compaction->first_kept_entry_id;
      if (b.compaction->tokens_before) tokens_before = *b.compaction->tokens_before;
      details = b.compaction->details_json;
      preserve = b.compaction->preserve_data_json;
    }
  }
  if (!supplied) {
    // One vector for both: the compacting hooks see them together, the
    // summaries each see their own part. A summarizer that reads in order
    // starts while later messages are parsed.
    internal::MessageFeed feed({&prep->messages_to_summarize, &prep->turn_prefix_messages}, o.env);
    const bool stream = summarizer.ReadsMessagesInOrder();
    if (stream) {
      feed.Start();
    } else {
      feed.ParseAll();
    }
    const size_t history_size = prep->messages_to_summarize.size();
    const std::span<const Message> all = feed.messages();
    const std::span<const Message> history = all.first(history_size);
    const std::span<const Message> prefix = all.subspan(history_size);
    SummaryRequest req;
    req.kind = SummaryKind::kHistory;
    req.previous_summary = prep->previous_summary.value_or("");
    req.read_files = prep->file_lists.read_files;
    req.modified_files = prep->file_lists.modified_files;
    req.max_output_tokens =
        DefaultMaxOutputTokens(SummaryKind::kHistory, o.settings.reserve_tokens);
    if (o.hooks) feed.WaitFor(all.size());  // the hooks see every message
    ApplyCompactingHooks(o, session, feed.messages(), &req, &preserve, &r.hook_errors);
    if (stream) req.wait_for_messages = [&feed](size_t n) { feed.WaitFor(n); };
    if (prep->is_split_turn && !prefix.empty()) {
      SummaryRequest preq = req;
      preq.kind = SummaryKind::kTurnPrefix;
      preq.previous_summary.clear();
      preq.messages = prefix;
      if (stream) {
        preq.wait_for_messages = [&feed, history_size](size_t n) {
          feed.WaitFor(history_size + n);
        };
      }
      preq.max_output_tokens =
          DefaultMaxOutputTokens(SummaryKind::kTurnPrefix, o.settings.reserve_tokens);
      // The two summaries are independent: run the turn prefix concurrently.
      internal::Background<Result<std::string>> prefix_task(
          o.env, [&] { return summarizer.Summarize(preq); });
      std::string history_text;
      Status history_status;
      if (history.empty() && req.previous_summary.empty()) {
        history_text = std::string(kNoPriorHistory);
      } else {
        req.messages = history;
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
      COMPACTOR_ASSIGN_OR_RETURN(summary, SummarizeInPasses(summarizer, req));
    }
    summary += FormatFileOperations(prep->file_lists);
  }

  CompactionEntryFields f;
  f.summary = summary;
  f.first_kept_entry_id = first_kept;
  f.tokens_before = tokens_before;
  f.details_json = details;
  f.from_hook = from_hook.value_or(false);
  int64_t summary_tokens =
      EstimateMessageTokens(MakeCompactionSummaryJson(summary, tokens_before, 0));
  r.tokens_after = summary_tokens + prep->kept_tokens;
  f.extra.push_back({"method", "\"summary\""});
  f.extra.push_back({"tokensAfter", JsNumber(static_cast<double>(r.tokens_after))});
  if (!preserve.empty()) f.extra.push_back({"preserveData", preserve});
  EntryBase base = NewBase(session, LeafIdOf(session, o), o);
  r.entry_id = base.id;
  r.entry_json = MakeCompactionEntry(base, f);
  r.summary = summary;
  r.first_kept_entry_id = first_kept;
  r.tokens_before = tokens_before;
  r.compacted = true;
  CheckEffective(o, &r);
  return out;
}

// --- notes ---------------------------------------------------------------

Result<ComputedCompaction> ComputeNotes(const Session& session, const CompactOptions& o) {
  ComputedCompaction out;
  CompactionResult& r = out.result;
  r.strategy = Strategy::kNotes;
  if (o.notes_path.empty())
    return Status::InvalidArgument("the notes strategy needs a notes file (--notes FILE)");
  COMPACTOR_ASSIGN_OR_RETURN(std::string notes, EnvOrDefault(o.env)->ReadFile(o.notes_path));
  size_t b = notes.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) {
    r.skipped_reason = "empty notes";
    return out;
  }
  size_t e = notes.find_last_not_of(" \t\r\n");
  notes = notes.substr(b, e - b + 1);
  CompactOptions po = o;
  po.settings.keep_policy = "messages";
  PrepareResult pr;
  COMPACTOR_ASSIGN_OR_RETURN(CompactionPreparation * prep, PrepareOrSkip(session, po, &pr, &r));
  if (!prep) return out;
  std::string why;
  COMPACTOR_ASSIGN_OR_RETURN(bool below, BelowThreshold(o, r.tokens_before, &why));
  if (below) {
    r.skipped_reason = "below threshold: " + why;
    return out;
  }
  if (o.hooks) {
    BeforeCompactResult bc = o.hooks->RunBeforeCompact(
        {session, *prep, Strategy::kNotes, o.instructions}, &r.hook_errors);
    if (bc.cancel) {
      r.skipped_reason = "cancelled by hook";
      return out;
    }
  }
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
  return out;
}

// What strategies that work on the whole rebuilt context (user-prompts,
// handoff, mask) measure first: the context, the counter and its size.
struct MeasuredContext {
  SessionContext ctx;
  TokenCounter counter;
  ContextEstimate est;
};

Result<MeasuredContext> MeasureContext(const Session& session, const CompactOptions& o, bool expand,
                                       CompactionResult* r) {
  ContextOptions co;
  co.leaf_id = o.leaf_id;
  co.expand_compactions = expand;
  MeasuredContext m;
  COMPACTOR_ASSIGN_OR_RETURN(m.ctx, BuildSessionContext(session, co));
  COMPACTOR_ASSIGN_OR_RETURN(m.counter, TokenCounter::FromName(o.settings.tokenizer));
  m.est = EstimateContextTokens(session, m.ctx.messages, m.counter);
  r->tokens_before = m.est.tokens;
  return m;
}

// --- user-prompts --------------------------------------------------------

Result<ComputedCompaction> ComputeUserPrompts(const Session& session, const CompactOptions& o,
                                              const Summarizer& summarizer) {
  ComputedCompaction out;
  CompactionResult& r = out.result;
  r.strategy = Strategy::kUserPrompts;
  COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc, MeasureContext(session, o, true, &r));
  const SessionContext& ctx = mc.ctx;
  const TokenCounter& counter = mc.counter;
  const ContextEstimate& est = mc.est;
  if (ctx.messages.empty()) {
    r.skipped_reason = "nothing to summarize";
    return out;
  }
  if (ctx.compaction_path_index && *ctx.compaction_path_index + 1 == ctx.path.size()) {
    r.skipped_reason = "already compacted";
    return out;
  }
  std::string why;
  COMPACTOR_ASSIGN_OR_RETURN(bool below, BelowThreshold(o, r.tokens_before, &why));
  if (below) {
    r.skipped_reason = "below threshold: " + why;
    return out;
  }
  // Real user prompts: stored user messages and prompts kept by an earlier
  // user-prompts compaction. Summaries, markers, custom/extension messages and
  // bash executions were injected, not typed, and are dropped.
  std::vector<UserPrompt> prompts;
  std::vector<Message> to_summarize;
  std::string previous_summary;
  internal::MessageFeed feed({&ctx.messages}, o.env);
  feed.ParseAll();
  std::vector<Message> parsed = feed.TakeMessages();
  for (size_t i = 0; i < ctx.messages.size(); ++i) {
    const ContextMessage& cm = ctx.messages[i];
    if (!feed.parsed(i)) continue;
    Message* m = &parsed[i];
    if (cm.origin == "summary") {
      previous_summary = m->JoinedText();
      continue;
    }
    if (cm.origin == "elision") continue;
    if (m->role == Role::kCompactionSummary) {
      previous_summary = m->summary;
      continue;
    }
    if (m->role == Role::kUser) {
      UserPrompt p;
      p.entry_id = session.entry(cm.entry_index).id;
      p.text = m->JoinedText();
      for (const ContentBlock& blk : m->content)
        if (blk.kind == ContentBlock::Kind::kImage) ++p.media_parts;
      prompts.push_back(std::move(p));
    }
    to_summarize.push_back(std::move(*m));
  }
  FileOps ops;
  ExtractFileOps(to_summarize, ops);
  FileLists lists = ComputeFileLists(ops);
  if (o.hooks) {
    CompactionPreparation fake;
    fake.first_kept_entry_id = "";
    fake.tokens_before = r.tokens_before;
    BeforeCompactResult bc = o.hooks->RunBeforeCompact(
        {session, fake, Strategy::kUserPrompts, o.instructions}, &r.hook_errors);
    if (bc.cancel) {
      r.skipped_reason = "cancelled by hook";
      return out;
    }
  }
  SummaryRequest req;
  req.kind = SummaryKind::kHistory;
  req.previous_summary = previous_summary;
  req.messages = to_summarize;
  req.read_files = lists.read_files;
  req.modified_files = lists.modified_files;
  req.max_output_tokens = DefaultMaxOutputTokens(SummaryKind::kHistory, o.settings.reserve_tokens);
  std::string preserve;
  ApplyCompactingHooks(o, session, to_summarize, &req, &preserve, &r.hook_errors);
  COMPACTOR_ASSIGN_OR_RETURN(std::string summary, SummarizeInPasses(summarizer, req));
  summary += FormatFileOperations(lists);

  UserPromptSelection sel = SelectUserPrompts(prompts);
  std::string kept = "[";
  std::string pi_view = "<user-messages>\n";
  bool first = true;
  auto add = [&](const KeptPrompt& k, const char* part) {
    if (!first) kept += ",";
    first = false;
    kept += "{\"entryId\":";
    AppendJsString(kept, k.entry_id);
    kept += ",\"text\":";
    AppendJsString(kept, k.text);
    kept += ",\"cut\":";
    AppendJsString(kept, k.cut);
    kept += ",\"part\":";
    AppendJsString(kept, part);
    kept += "}";
    pi_view += k.text + "\n\n";
  };
  for (const KeptPrompt& k : sel.head) add(k, "head");
  if (sel.elided())
    pi_view += "[... about " + std::to_string(sel.omitted_tokens) +
               " tokens of user messages left out ...]\n\n";
  for (const KeptPrompt& k : sel.tail) add(k, "tail");
  kept += "]";
  while (!pi_view.empty() && pi_view.back() == '\n') pi_view.pop_back();
  pi_view += "\n</user-messages>\n\n" + summary;
  r.kept_user_messages = sel.head.size() + sel.tail.size();
  r.messages_summarized = to_summarize.size();
  r.summarized_tokens = est.heuristic_sum;

  // tokensAfter: the expanded context (kept prompts, marker, summary message).
  int64_t after = 0;
  for (const KeptPrompt& k : sel.head) after += counter.Text(k.text);
  for (const KeptPrompt& k : sel.tail) after += counter.Text(k.text);
  if (sel.elided()) after += counter.Text(ElisionMarkerText(sel.omitted_tokens));
  after += counter.Text(UserPromptsSummaryText(summary));
  r.tokens_after = after;

  std::string extra = ",\"keptPrompts\":" + kept +
                      ",\"omittedTokens\":" + std::to_string(sel.omitted_tokens) +
                      ",\"userSummary\":";
  AppendJsString(extra, summary);
  EntryBase base = NewBase(session, LeafIdOf(session, o), o);
  CompactionEntryFields f;
  f.summary = pi_view;
  // pi keeps nothing before a compaction whose firstKeptEntryId is not an
  // earlier entry of the path: pointing at the entry itself gives exactly that.
  f.first_kept_entry_id = base.id;
  f.tokens_before = r.tokens_before;
  f.details_json = DetailsJson(lists, extra);
  f.from_hook = false;
  f.extra.push_back({"method", "\"user-prompts\""});
  f.extra.push_back({"keptUserMessageCount", std::to_string(r.kept_user_messages)});
  f.extra.push_back({"tokensAfter", std::to_string(r.tokens_after)});
  if (!preserve.empty()) f.extra.push_back({"preserveData", preserve});
  r.entry_id = base.id;
  r.entry_json = MakeCompactionEntry(base, f);
  r.first_kept_entry_id = base.id;
  r.summary = summary;
  r.read_files = lists.read_files;
  r.modified_files = lists.modified_files;
  r.compacted = true;
  CheckEffective(o, &r);
  return out;
}

// --- handoff -------------------------------------------------------------

std::string Dir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

Result<ComputedCompaction> ComputeHandoff(const Session& session, const CompactOptions& o,
                                          const Summarizer& summarizer) {
  ComputedCompaction out;
  CompactionResult& r = out.result;
  r.strategy = Strategy::kHandoff;
  COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc, MeasureContext(session, o, true, &r));
  const SessionContext& ctx = mc.ctx;
  const TokenCounter& counter = mc.counter;
  const ContextEstimate& est = mc.est;
  if (ctx.messages.size() < 2) {
    r.skipped_reason = "nothing to summarize";
    return out;
  }
  std::string why;
  COMPACTOR_ASSIGN_OR_RETURN(bool below, BelowThreshold(o, r.tokens_before, &why));
  if (below) {
    r.skipped_reason = "below threshold: " + why;
    return out;
  }
  std::vector<Message> all = ParseAll({&ctx.messages}, o.env);
  FileOps ops;
  ExtractFileOps(all, ops);
  FileLists lists = ComputeFileLists(ops);
  SummaryRequest req;
  req.kind = SummaryKind::kHandoff;
  req.messages = all;
  req.read_files = lists.read_files;
  req.modified_files = lists.modified_files;
  req.max_output_tokens = DefaultMaxOutputTokens(SummaryKind::kHandoff, o.settings.reserve_tokens);
  std::string preserve;
  ApplyCompactingHooks(o, session, all, &req, &preserve, &r.hook_errors);
  COMPACTOR_ASSIGN_OR_RETURN(std::string doc, SummarizeInPasses(summarizer, req));
  doc += FormatFileOperations(lists);

  const int64_t now = NowMs(o);
  const std::string ts = FormatIsoTimestamp(now);
  SessionHeaderFields h;
  h.id = NewUuidV7(o.env);
  h.timestamp = ts;
  h.cwd = session.header().cwd;
  h.parent_session = session.path();
  std::string file_ts = ts;
  for (char& c : file_ts)
    if (c == ':' || c == '.') c = '-';
  std::string dir = o.handoff_dir.empty() ? Dir(session.path()) : o.handoff_dir;
  r.output_path = dir + "/" + file_ts + "_" + h.id + ".jsonl";

  std::string jsonl = MakeSessionHeader(h) + "\n";
  std::string parent;
  std::vector<std::string> ids;
  auto next_id = [&] {
    std::string id = NewEntryId(session, ids, o.env);
    ids.push_back(id);
    return id;
  };
  // Carry the model and thinking level over so the new session continues with them.
  if (ctx.model) {
    std::string id = next_id();
    std::string line = "{\"type\":\"model_change\",\"id\":";
    AppendJsString(line, id);
    line += ",\"parentId\":null,\"timestamp\":";
    AppendJsString(line, ts);
    line += ",\"provider\":";
    AppendJsString(line, ctx.model->provider);
    line += ",\"modelId\":";
    AppendJsString(line, ctx.model->model_id);
    line += "}";
    jsonl += line + "\n";
    parent = id;
  }
  if (ctx.thinking_level != "off") {
    std::string id = next_id();
    std::string line = "{\"type\":\"thinking_level_change\",\"id\":";
    AppendJsString(line, id);
    line += ",\"parentId\":";
    if (parent.empty()) {
      line += "null";
    } else {
      AppendJsString(line, parent);
    }
    line += ",\"timestamp\":";
    AppendJsString(line, ts);
    line += ",\"thinkingLevel\":";
    AppendJsString(line, ctx.thinking_level);
    line += "}";
    jsonl += line + "\n";
    parent = id;
  }
  std::string content =
      "<handoff-context>\n" + doc +
      "\n</handoff-context>\n\nThis is the handoff document of the previous session "
      "(" +
      session.path() + "). Continue the work from here.";
  std::string content_json;
  AppendJsString(content_json, content);
  CustomMessageEntryFields cf;
  cf.custom_type = "handoff";
  cf.content_json = content_json;
  cf.display = true;
  cf.details_json = DetailsJson(
      lists, ",\"parentSession\":" + [&] {
        std::string s;
        AppendJsString(s, session.path());
        return s;
      }());
  EntryBase base{next_id(), parent, ts};
  r.entry_id = base.id;
  r.entry_json = MakeCustomMessageEntry(base, cf);
  jsonl += r.entry_json + "\n";
  out.handoff_jsonl = std::move(jsonl);
  r.summary = doc;
  r.messages_summarized = all.size();
  r.summarized_tokens = est.heuristic_sum;
  r.tokens_after = counter.Text(content);
  r.read_files = lists.read_files;
  r.modified_files = lists.modified_files;
  r.compacted = true;
  return out;
}

// --- mask ------------------------------------------------------------------

Result<ComputedCompaction> ComputeMask(const Session& session, const CompactOptions& o) {
  ComputedCompaction out;
  CompactionResult& r = out.result;
  r.strategy = Strategy::kMask;
  COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc, MeasureContext(session, o, false, &r));
  const ContextEstimate& est = mc.est;
  std::string why;
  COMPACTOR_ASSIGN_OR_RETURN(bool below, BelowThreshold(o, r.tokens_before, &why));
  if (below) {
    r.skipped_reason = "below threshold: " + why;
    return out;
  }
  std::optional<size_t> leaf = o.leaf_id ? session.Find(*o.leaf_id) : session.Leaf();
  ApplyOptions apply;
  apply.env = o.env;
  COMPACTOR_ASSIGN_OR_RETURN(MaskResult m, MaskObservations(session, leaf, o.mask, apply));
  if (m.plan.outputs.empty()) {
    r.skipped_reason = m.plan.skipped_reason.empty() ? "nothing to mask" : m.plan.skipped_reason;
    return out;
  }
  r.masked_outputs = m.plan.outputs.size();
  r.messages_summarized = 0;
  r.summarized_tokens = m.plan.tokens_saved;
  // Provider usage predates the masking; measure the rebuilt context instead.
  r.tokens_after = est.heuristic_sum - m.plan.tokens_saved;
  r.compacted = true;
  out.rewritten_jsonl = std::move(m.rewritten);
  out.rewrite_plan = std::move(m.plan);
  CheckEffective(o, &r);
  return out;
}

}  // namespace

Result<ComputedCompaction> ComputeCompaction(const Session& session, const CompactOptions& o) {
  const int64_t start_us = EnvOrDefault(o.env)->MonotonicMicros();
  Strategy strategy = Strategy::kSummary;
  if (o.strategy) {
    strategy = *o.strategy;
  } else {
    COMPACTOR_ASSIGN_OR_RETURN(strategy, ParseStrategy(o.settings.strategy));
  }
  if (o.leaf_id && !session.Find(*o.leaf_id))
    return Status::InvalidArgument(session.path() + ": no entry with id \"" + *o.leaf_id +
                                   "\" (--leaf)");
  std::unique_ptr<Summarizer> offline;
  const Summarizer* summarizer = o.summarizer;
  if (!summarizer) {
    offline = NewOfflineSummarizer();
    summarizer = offline.get();
  }
  if (!summarizer && strategy != Strategy::kNotes && strategy != Strategy::kMask)
    return Status::Internal("no summarizer available");
  Result<ComputedCompaction> out = Status::Internal("unreachable");
  if (!o.settings.enabled && o.only_if_needed) {
    ComputedCompaction c;
    c.result.strategy = strategy;
    c.result.skipped_reason = "disabled";
    out = std::move(c);
  } else {
    switch (strategy) {
      case Strategy::kSummary:
        out = ComputeSummary(session, o, *summarizer);
        break;
      case Strategy::kUserPrompts:
        out = ComputeUserPrompts(session, o, *summarizer);
        break;
      case Strategy::kNotes:
        out = ComputeNotes(session, o);
        break;
      case Strategy::kHandoff:
        out = ComputeHandoff(session, o, *summarizer);
        break;
      case Strategy::kMask:
        out = ComputeMask(session, o);
        break;
    }
  }
  if (out.ok()) {
    out->result.duration_ms =
        static_cast<double>(EnvOrDefault(o.env)->MonotonicMicros() - start_us) / 1000.0;
  }
  return out;
}

Result<std::unique_ptr<Session>> SessionWithAppended(const Session& session,
                                                     const std::string& entry_json) {
  return Session::FromString(session.ToV3Jsonl() + entry_json + "\n", session.path());
}

namespace {

// The compaction entry as it must be appended to the session as it is now
// (AppendComputedLines' recheck): the entry it was computed at must still be
// on the active path; entries appended after it move the compaction onto
// the current leaf (they stay in the kept part of the context); a compaction
// among them means another process compacted first.
Result<std::vector<std::string>> AttachToCurrentLeaf(const Session& now, const std::string& path,
                                                     const std::string& computed_at,
                                                     const std::string& entry_json,
                                                     bool explicit_leaf) {
  const std::optional<size_t> at = now.Find(computed_at);
  if (!at)
    return Status::FailedPrecondition(path + ": entry " + computed_at +
                                      ", where the compaction was computed, is no longer in the "
                                      "file; nothing written (run compact again)");
  // --leaf names the point itself: entries appended elsewhere do not matter.
  if (explicit_leaf) return std::vector<std::string>{entry_json};
  const std::optional<size_t> leaf = now.Leaf();
  const std::vector<size_t> active = leaf ? now.PathTo(*leaf) : std::vector<size_t>{};
  auto it = std::find(active.begin(), active.end(), *at);
  if (it == active.end())
    return Status::FailedPrecondition(path +
                                      ": the session moved to another branch while the "
                                      "compaction was computed; nothing written (run compact "
                                      "again)");
  for (auto later = it + 1; later != active.end(); ++later) {
    if (now.entry(*later).type == EntryType::kCompaction)
      return Status::FailedPrecondition(path +
                                        ": already compacted by another process while this "
                                        "compaction was computed; nothing written");
  }
  if (*leaf == *at) return std::vector<std::string>{entry_json};
  std::string parent;
  AppendJsString(parent, now.entry(*leaf).id);
  return std::vector<std::string>{internal::SetMember(entry_json, "parentId", parent)};
}

}  // namespace

Result<CompactionResult> CompactFile(const std::string& path, const CompactOptions& o,
                                     const LoadOptions& load) {
  LoadOptions measured = load;
  measured.env = o.env;
  // Compaction estimates every message of the context: measure them while indexing.
  if (o.settings.tokenizer.empty() || o.settings.tokenizer == "estimate")
    measured.estimate_messages = true;
  // The file as it was before the load: at the append, an unchanged identity
  // means the computed entry still fits; a changed one is checked again.
  std::optional<FileIdentity> loaded;
  if (Result<FileInfo> before = EnvOrDefault(o.env)->Stat(path); before.ok())
    loaded = before->identity;
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Open(path, measured));
  COMPACTOR_ASSIGN_OR_RETURN(ComputedCompaction c, ComputeCompaction(*session, o));
  CompactionResult& r = c.result;
  if (!r.compacted || o.dry_run) return r;
  switch (r.strategy) {
    case Strategy::kHandoff:
      COMPACTOR_RETURN_IF_ERROR(
          WriteFileAtomic(r.output_path, c.handoff_jsonl, RewriteOptions{false, ".bak", o.env}));
      break;
    case Strategy::kMask: {
      // Rewrites only the masked lines, carrying over what agents append
      // meanwhile (RewriteSessionFile); the old file is kept as FILE.bak.
      WriteRewrittenOptions w;
      w.env = o.env;
      w.grace_ms = o.rewrite_grace_ms;
      COMPACTOR_ASSIGN_OR_RETURN(WriteRewrittenResult written,
                                 WriteRewrittenSession(*session, path, *c.rewrite_plan, w));
      r.output_path = written.output_path;
      break;
    }
    default: {
      std::optional<size_t> at = o.leaf_id ? session->Find(*o.leaf_id) : session->Leaf();
      const std::string computed_at = at ? std::string(session->entry(*at).id) : std::string();
      RecheckFn recheck = [&](const Session& now) -> Result<std::vector<std::string>> {
        COMPACTOR_ASSIGN_OR_RETURN(
            std::vector<std::string> lines,
            AttachToCurrentLeaf(now, path, computed_at, r.entry_json, o.leaf_id.has_value()));
        r.entry_json = lines.front();  // the result shows the entry as written
        return lines;
      };
      COMPACTOR_RETURN_IF_ERROR(AppendComputedLines(path, loaded, {r.entry_json}, recheck,
                                                    AppendOptions{false, -1, o.env}));
    }
  }
  if (o.hooks) o.hooks->RunAfterCompact({r}, &r.hook_errors);
  return r;
}

}  // namespace compactor
