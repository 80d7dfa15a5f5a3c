// The "user-prompts" strategy (Kimi Code, Codex): the prompt selection, the
// strategy and the expansion of its compaction entries (docs/strategies.md).
#include "compactor/user_prompts.h"

#include <simdjson.h>

#include <algorithm>

#include "compactor/js_json.h"
#include "compactor/strategy.h"
#include "strategies/message_feed.h"
#include "strategies/support.h"

namespace compactor {
namespace {

// Length of the UTF-8 sequence starting with byte c (1 for stray bytes).
size_t SeqLen(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

int64_t Cost(int64_t ascii, int64_t other) { return (ascii + 3) / 4 + other; }

}  // namespace

int64_t PromptTextTokens(std::string_view text) {
  int64_t ascii = 0, other = 0;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++ascii;
      ++i;
    } else {
      ++other;
      i += SeqLen(c);
    }
  }
  return Cost(ascii, other);
}

std::string TruncateToPromptTokens(std::string_view text, int64_t max_tokens, bool from_end) {
  if (max_tokens <= 0) return "";
  int64_t ascii = 0, other = 0;
  if (!from_end) {
    size_t i = 0;
    while (i < text.size()) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      int64_t a = ascii + (c < 0x80), o = other + (c >= 0x80);
      if (Cost(a, o) > max_tokens) break;
      ascii = a, other = o;
      i += c < 0x80 ? 1 : std::min(SeqLen(c), text.size() - i);
    }
    return std::string(text.substr(0, i));
  }
  size_t begin = text.size();
  while (begin > 0) {
    // Step back over one whole code point (continuation bytes first).
    size_t j = begin - 1;
    while (j > 0 && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80 && begin - j < 4) --j;
    bool is_ascii = static_cast<unsigned char>(text[j]) < 0x80 && j == begin - 1;
    int64_t a = ascii + is_ascii, o = other + !is_ascii;
    if (Cost(a, o) > max_tokens) break;
    ascii = a, other = o;
    begin = j;
  }
  return std::string(text.substr(begin));
}

UserPromptSelection SelectUserPrompts(const std::vector<UserPrompt>& prompts,
                                      const UserPromptOptions& options) {
  UserPromptSelection sel;
  std::vector<int64_t> cost(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    cost[i] = PromptTextTokens(prompts[i].text) + prompts[i].media_parts * kPromptMediaTokens;
    sel.total_tokens += cost[i];
  }
  auto whole = [&](size_t i) {
    return KeptPrompt{prompts[i].entry_id, prompts[i].text, "", cost[i]};
  };
  if (sel.total_tokens <= options.max_tokens) {
    for (size_t i = 0; i < prompts.size(); ++i) sel.tail.push_back(whole(i));
    return sel;
  }
  const int64_t head_budget = std::clamp<int64_t>(options.head_tokens, 0, options.max_tokens);
  int64_t remaining = options.max_tokens - head_budget;
  // Tail: newest first; the first prompt that does not fit is cut to its end.
  size_t tail_begin = prompts.size();
  std::string boundary_rest;  // the cut-off beginning of the boundary prompt
  bool boundary = false;
  std::vector<KeptPrompt> tail;
  while (tail_begin > 0) {
    size_t i = tail_begin - 1;
    if (cost[i] <= remaining) {
      tail.push_back(whole(i));
      remaining -= cost[i];
      tail_begin = i;
      continue;
    }
    std::string kept = TruncateToPromptTokens(prompts[i].text, remaining, true);
    if (!kept.empty()) {
      int64_t t = PromptTextTokens(kept);
      tail.push_back({prompts[i].entry_id, kept, "tail", t});
      boundary_rest = prompts[i].text.substr(0, prompts[i].text.size() - kept.size());
      boundary = true;
    }
    break;
  }
  std::reverse(tail.begin(), tail.end());
  // Head: oldest first over what the tail did not take (plus the boundary's beginning).
  int64_t head_left = head_budget;
  // Prompts [0, tail_begin) are free for the head.
  std::vector<UserPrompt> pool(prompts.begin(), prompts.begin() + static_cast<long>(tail_begin));
  std::vector<int64_t> pool_cost(cost.begin(), cost.begin() + static_cast<long>(tail_begin));
  if (boundary && tail_begin > 0 && !boundary_rest.empty()) {
    // The boundary prompt is prompts[tail_begin - 1]; its cut-off beginning may
    // still go to the head.
    UserPrompt rest{prompts[tail_begin - 1].entry_id, boundary_rest, 0};
    pool.back() = rest;
    pool_cost.back() = PromptTextTokens(boundary_rest);
  }
  for (size_t i = 0; i < pool.size(); ++i) {
    bool is_boundary_rest = boundary && i + 1 == pool.size() && !boundary_rest.empty();
    if (pool_cost[i] <= head_left) {
      sel.head.push_back(
          {pool[i].entry_id, pool[i].text, is_boundary_rest ? "head" : "", pool_cost[i]});
      head_left -= pool_cost[i];
      continue;
    }
    std::string kept = TruncateToPromptTokens(pool[i].text, head_left, false);
    if (!kept.empty()) sel.head.push_back({pool[i].entry_id, kept, "head", PromptTextTokens(kept)});
    break;
  }
  sel.tail = std::move(tail);
  int64_t kept = 0;
  for (const auto& k : sel.head) kept += k.tokens;
  for (const auto& k : sel.tail) kept += k.tokens;
  sel.omitted_tokens = std::max<int64_t>(0, sel.total_tokens - kept);
  return sel;
}

std::string ElisionMarkerText(int64_t omitted_tokens) {
  return "<system-reminder>\nThe user messages above are the oldest of this conversation and the "
         "ones "
         "below are the most recent. About " +
         std::to_string(omitted_tokens) +
         " tokens of user messages in between were left out to save context; the summary at the "
         "end "
         "covers that part.\n</system-reminder>";
}

std::string UserPromptsSummaryText(std::string_view summary) {
  std::string s(summary);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t b = s.find_first_not_of("\n ");
  s = b == std::string::npos ? "" : s.substr(b);
  return "Earlier turns of this conversation were compacted. Above are the user's own messages; "
         "below "
         "is the working summary written at that point. Treat it as notes, not proof: check claims "
         "against the files before relying on them.\n" +
         (s.empty() ? std::string("(no summary available)") : s);
}

namespace internal {
namespace {

// The rebuilt context split as the strategy needs it.
struct CollectedContext {
  // Real user prompts: stored user messages and prompts kept by an earlier
  // user-prompts compaction.
  std::vector<UserPrompt> prompts;
  std::vector<Message> to_summarize;  // everything the summary covers
  std::string previous_summary;
};

// Summaries, markers, custom/extension messages and bash executions were
// injected, not typed: they are summarized but not kept as prompts. Messages
// are parsed with threads from `env`.
CollectedContext Collect(const Session& session, const SessionContext& ctx, Env* env) {
  CollectedContext c;
  MessageFeed feed({&ctx.messages}, env);
  feed.ParseAll();
  std::vector<Message> parsed = feed.TakeMessages();
  for (size_t i = 0; i < ctx.messages.size(); ++i) {
    const ContextMessage& cm = ctx.messages[i];
    if (!feed.parsed(i)) continue;
    Message* m = &parsed[i];
    if (cm.origin == "summary") {
      c.previous_summary = m->JoinedText();
      continue;
    }
    if (cm.origin == "elision") continue;
    if (m->role == Role::kCompactionSummary) {
      c.previous_summary = m->summary;
      continue;
    }
    if (m->role == Role::kUser) {
      UserPrompt p;
      p.entry_id = session.entry(cm.entry_index).id;
      p.text = m->JoinedText();
      for (const ContentBlock& blk : m->content)
        if (blk.kind == ContentBlock::Kind::kImage) ++p.media_parts;
      c.prompts.push_back(std::move(p));
    }
    c.to_summarize.push_back(std::move(*m));
  }
  return c;
}

// details.keptPrompts (JSON array) and pi's view of the entry (its summary
// field): the kept prompts, the omission note, then the summary.
void RepresentSelection(const UserPromptSelection& sel, const std::string& summary,
                        std::string* kept, std::string* pi_view) {
  *kept = "[";
  *pi_view = "<user-messages>\n";
  bool first = true;
  auto add = [&](const KeptPrompt& k, const char* part) {
    if (!first) *kept += ",";
    first = false;
    *kept += "{\"entryId\":";
    AppendJsString(*kept, k.entry_id);
    *kept += ",\"text\":";
    AppendJsString(*kept, k.text);
    *kept += ",\"cut\":";
    AppendJsString(*kept, k.cut);
    *kept += ",\"part\":";
    AppendJsString(*kept, part);
    *kept += "}";
    *pi_view += k.text + "\n\n";
  };
  for (const KeptPrompt& k : sel.head) add(k, "head");
  if (sel.elided())
    *pi_view += "[... about " + std::to_string(sel.omitted_tokens) +
                " tokens of user messages left out ...]\n\n";
  for (const KeptPrompt& k : sel.tail) add(k, "tail");
  *kept += "]";
  while (!pi_view->empty() && pi_view->back() == '\n') pi_view->pop_back();
  *pi_view += "\n</user-messages>\n\n" + summary;
}

// tokensAfter: the expanded context (kept prompts, marker, summary message).
int64_t ExpandedTokens(const UserPromptSelection& sel, const std::string& summary,
                       const TokenCounter& counter) {
  int64_t after = 0;
  for (const KeptPrompt& k : sel.head) after += counter.Text(k.text);
  for (const KeptPrompt& k : sel.tail) after += counter.Text(k.text);
  if (sel.elided()) after += counter.Text(ElisionMarkerText(sel.omitted_tokens));
  after += counter.Text(UserPromptsSummaryText(summary));
  return after;
}

// Compactor's view of a user-prompts compaction: kept prompts (head, marker,
// tail) and the summary as a user message. False when the details are unreadable.
bool ExpandEntry(const Session& s, size_t index, std::vector<ContextMessage>* out) {
  std::string details(s.FieldJson(index, "details"));
  if (details.empty()) return false;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(details).get(root)) return false;
  simdjson::dom::array kept;
  std::string_view summary;
  int64_t omitted = 0;
  if (root["keptPrompts"].get(kept) || root["userSummary"].get(summary)) return false;
  if (root["omittedTokens"].get(omitted)) omitted = 0;
  const double ts = s.entry(index).timestamp_ms;
  auto marker = [&] {
    return ContextMessage{
        Role::kUser, index, {}, MakeUserTextMessageJson(ElisionMarkerText(omitted), ts), "elision"};
  };
  bool marker_done = omitted <= 0;
  for (simdjson::dom::element k : kept) {
    std::string_view id, text, cut, part;
    if (k["entryId"].get(id) || k["text"].get(text)) return false;
    if (k["cut"].get(cut)) cut = "";
    if (k["part"].get(part)) part = "tail";
    if (!marker_done && part == "tail") {
      out->push_back(marker());
      marker_done = true;
    }
    ContextMessage m{Role::kUser, index, {}, "", "kept-prompt"};
    auto source = s.Find(id);
    if (cut.empty() && source && s.entry(*source).role == Role::kUser) {
      m.stored = s.MessageJson(*source);  // kept whole: the original message, media included
      m.entry_index = *source;
    } else {
      m.owned = MakeUserTextMessageJson(text, ts);
    }
    out->push_back(std::move(m));
  }
  if (!marker_done) out->push_back(marker());
  out->push_back({Role::kUser,
                  index,
                  {},
                  MakeUserTextMessageJson(UserPromptsSummaryText(summary), ts),
                  "summary"});
  return true;
}

class UserPrompts final : public CompactionStrategy {
 public:
  std::string_view name() const override { return "user-prompts"; }
  std::string_view description() const override {
    return "Kimi Code / Codex: the user's own prompts kept (oldest and newest within a budget), "
           "everything else summarized";
  }
  StrategyNeeds needs() const override { return {.summarizer = true}; }
  CompactionOutput output() const override { return CompactionOutput::kAppendEntry; }
  void InitResult(CompactionResult* result) const override { result->kept_user_messages = 0; }

  Status Compute(const Session& session, const CompactOptions& o, const Summarizer& summarizer,
                 ComputedCompaction* out) const override {
    CompactionResult& r = out->result;
    COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc,
                               MeasureContext(session, o, StrategyExpander(), &r));
    const SessionContext& ctx = mc.ctx;
    if (ctx.messages.empty()) {
      r.skipped_reason = "nothing to summarize";
      return Status::Ok();
    }
    if (ctx.compaction_path_index && *ctx.compaction_path_index + 1 == ctx.path.size()) {
      r.skipped_reason = "already compacted";
      return Status::Ok();
    }
    COMPACTOR_ASSIGN_OR_RETURN(bool below, SkipBelowThreshold(o, &r));
    if (below) return Status::Ok();
    CollectedContext c = Collect(session, ctx, o.env);
    FileOps ops;
    ExtractFileOps(c.to_summarize, ops);
    FileLists lists = ComputeFileLists(ops);
    CompactionPreparation none;  // the hooks see no cut: everything is replaced
    none.first_kept_entry_id = "";
    none.tokens_before = r.tokens_before;
    if (CancelledByHook(session, none, o, name(), &r)) return Status::Ok();
    SummaryRequest req;
    req.kind = SummaryKind::kHistory;
    req.previous_summary = c.previous_summary;
    req.messages = c.to_summarize;
    req.read_files = lists.read_files;
    req.modified_files = lists.modified_files;
    req.max_output_tokens =
        DefaultMaxOutputTokens(SummaryKind::kHistory, o.settings.reserve_tokens);
    std::string preserve;
    ApplyCompactingHooks(o, session, c.to_summarize, &req, &preserve, &r.hook_errors);
    COMPACTOR_ASSIGN_OR_RETURN(std::string summary, SummarizeInPasses(summarizer, req));
    summary += FormatFileOperations(lists);

    UserPromptSelection sel = SelectUserPrompts(c.prompts);
    std::string kept, pi_view;
    RepresentSelection(sel, summary, &kept, &pi_view);
    r.kept_user_messages = sel.head.size() + sel.tail.size();
    r.messages_summarized = c.to_summarize.size();
    r.summarized_tokens = mc.est.heuristic_sum;
    r.tokens_after = ExpandedTokens(sel, summary, mc.counter);

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
    f.extra.push_back({"keptUserMessageCount", std::to_string(*r.kept_user_messages)});
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
    return Status::Ok();
  }

  // Everything before the compaction is replaced, so path[path_index] alone
  // stands for path[0 .. path_index].
  bool ExpandCompaction(const CompactionOnPath& c,
                        std::vector<ContextMessage>* out) const override {
    return ExpandEntry(c.session, c.path[c.path_index], out);
  }
};

}  // namespace

const CompactionStrategy& UserPromptsStrategy() {
  static const UserPrompts kStrategy;
  return kStrategy;
}

}  // namespace internal
}  // namespace compactor
