#include "compactor/branch.h"

#include <unordered_set>

#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/file_ops.h"
#include "compactor/js_json.h"
#include "compactor/writer.h"

namespace compactor {
namespace {

int64_t NowMs(const BranchOptions& o) { return EnvOrDefault(o.env)->NowMs(); }

std::string LabelEntry(const EntryBase& base, const std::string& target, const std::string& label) {
  std::string out = "{\"type\":\"label\",\"id\":";
  AppendJsString(out, base.id);
  out += ",\"parentId\":";
  if (base.parent_id.empty()) {
    out += "null";
  } else {
    AppendJsString(out, base.parent_id);
  }
  out += ",\"timestamp\":";
  AppendJsString(out, base.timestamp);
  out += ",\"targetId\":";
  AppendJsString(out, target);
  out += ",\"label\":";
  AppendJsString(out, label);
  out += "}";
  return out;
}

// The entries of the branch being left: the old leaf up to (excluding) the
// deepest entry of the target's path also on the old path, oldest first.
// Sets r->common_ancestor_id.
std::vector<size_t> AbandonedEntries(const Session& session, std::optional<size_t> old_leaf,
                                     size_t target, BranchResult* r) {
  std::vector<size_t> old_path = old_leaf ? session.PathTo(*old_leaf) : std::vector<size_t>{};
  std::unordered_set<size_t> on_old(old_path.begin(), old_path.end());
  std::optional<size_t> ancestor;
  for (size_t i : session.PathTo(target))
    if (on_old.count(i)) ancestor = i;
  if (ancestor) r->common_ancestor_id = session.entry(*ancestor).id;
  std::vector<size_t> abandoned;
  for (size_t k = old_path.size(); k-- > 0;) {
    if (ancestor && old_path[k] == *ancestor) break;
    abandoned.push_back(old_path[k]);
  }
  std::reverse(abandoned.begin(), abandoned.end());
  return abandoned;
}

// The leaf after navigation: a user or custom message target is re-edited
// from its parent (its text handed back in r->editor_text).
std::string NewLeafFor(const Session& session, size_t target, BranchResult* r) {
  const Entry& t = session.entry(target);
  const bool reedit = (t.type == EntryType::kMessage && t.role == Role::kUser) ||
                      t.type == EntryType::kCustomMessage;
  if (!reedit) return std::string(t.id);
  std::string new_leaf(t.parent_id);
  if (!new_leaf.empty() && !session.Find(new_leaf)) new_leaf.clear();
  if (auto m = EntryMessage(session, target)) {
    auto parsed = ParseMessage(m->json());
    if (parsed.ok()) r->editor_text = parsed->JoinedText();
  }
  return new_leaf;
}

// The abandoned messages that fit the summarizer's budget, newest first into
// it (a summary entry that overflows still goes in while under 90%), and the
// file operations of every visited message. Records the summarized ids.
std::vector<Message> MessagesToSummarize(const Session& session,
                                         const std::vector<size_t>& abandoned,
                                         const BranchOptions& o, FileOps& ops, BranchResult* r) {
  for (size_t i : abandoned) {
    const Entry& e = session.entry(i);
    if (e.type == EntryType::kBranchSummary && !e.from_hook) {
      SeedFileOpsFromDetails(session.FieldJson(i, "details"), ops);
    }
  }
  const int64_t budget = (o.context_window > 0 ? o.context_window : 128000) - o.reserve_tokens;
  std::vector<Message> messages;
  int64_t total = 0;
  for (size_t k = abandoned.size(); k-- > 0;) {
    size_t i = abandoned[k];
    const Entry& e = session.entry(i);
    if (e.type == EntryType::kMessage && e.role == Role::kToolResult) continue;
    auto cm = EntryMessage(session, i);
    if (!cm) continue;
    auto m = ParseMessage(cm->json());
    if (!m.ok()) continue;
    ExtractFileOps(*m, ops);
    int64_t tokens = EstimateMessageTokens(*m);
    if (budget > 0 && total + tokens > budget) {
      bool summary_entry = e.type == EntryType::kCompaction || e.type == EntryType::kBranchSummary;
      if (summary_entry && total < budget * 9 / 10) {
        messages.insert(messages.begin(), std::move(m).value());
      }
      break;
    }
    messages.insert(messages.begin(), std::move(m).value());
    total += tokens;
    r->entries_summarized.insert(r->entries_summarized.begin(), std::string(e.id));
  }
  return messages;
}

// The branch summary of the abandoned entries (pi's preamble, the
// summarizer's text, the file lists); sets *details and r's file lists.
Result<std::string> SummarizeAbandoned(const Session& session, const std::vector<size_t>& abandoned,
                                       const BranchOptions& o, std::string* details,
                                       BranchResult* r) {
  FileOps ops;
  std::vector<Message> messages = MessagesToSummarize(session, abandoned, o, ops, r);
  FileLists lists = ComputeFileLists(ops);
  r->read_files = lists.read_files;
  r->modified_files = lists.modified_files;
  *details = "{\"readFiles\":" + JsStringArray(lists.read_files) +
             ",\"modifiedFiles\":" + JsStringArray(lists.modified_files) + "}";
  std::string text;
  if (messages.empty()) {
    text = "No content to summarize";
  } else {
    std::unique_ptr<Summarizer> offline;
    const Summarizer* s = o.summarizer;
    if (!s) {
      offline = NewOfflineSummarizer();
      s = offline.get();
    }
    if (!s) return Status::Internal("no summarizer available");
    SummaryRequest req;
    req.kind = SummaryKind::kBranch;
    req.messages = std::move(messages);
    req.custom_instructions = o.instructions;
    req.replace_instructions = o.replace_instructions;
    req.read_files = lists.read_files;
    req.modified_files = lists.modified_files;
    req.max_output_tokens = DefaultMaxOutputTokens(SummaryKind::kBranch, o.reserve_tokens);
    COMPACTOR_ASSIGN_OR_RETURN(text, s->Summarize(req));
  }
  return std::string(kBranchSummaryPreamble) + text + FormatFileOperations(lists);
}

// The lines navigation appends: the branch summary entry (an empty one when
// only moving) as the new leaf, then the label when one is asked for.
void AppendNavigationEntries(const Session& session, const BranchOptions& o,
                             const std::string& new_leaf, const std::string& details,
                             BranchResult* r) {
  const std::string ts = FormatIsoTimestamp(NowMs(o));
  std::vector<std::string> taken;
  auto next_id = [&] {
    std::string id = NewEntryId(session, taken, o.env);
    taken.push_back(id);
    return id;
  };
  BranchSummaryEntryFields f;
  f.from_id = new_leaf.empty() ? "root" : new_leaf;
  f.summary = r->summary;
  f.details_json = details;
  if (!r->summary.empty()) f.from_hook = r->from_hook;
  EntryBase base{next_id(), new_leaf, ts};
  r->appended.push_back(MakeBranchSummaryEntry(base, f));
  r->new_leaf_id = base.id;
  if (!o.label.empty()) {
    // pi labels the summary entry when there is one, the target otherwise.
    std::string labelled = r->summary.empty() ? o.target_id : base.id;
    EntryBase lb{next_id(), base.id, ts};
    r->appended.push_back(LabelEntry(lb, labelled, o.label));
    r->new_leaf_id = lb.id;
  }
}

}  // namespace

Result<BranchResult> ComputeBranch(const Session& session, const BranchOptions& o) {
  BranchResult r;
  auto target = session.Find(o.target_id);
  if (!target)
    return Status::InvalidArgument(session.path() + ": no entry with id \"" + o.target_id +
                                   "\" (--to)");
  std::optional<size_t> old_leaf;
  if (o.from_leaf) {
    old_leaf = session.Find(*o.from_leaf);
    if (!old_leaf)
      return Status::InvalidArgument(session.path() + ": no entry with id \"" + *o.from_leaf +
                                     "\" (--from)");
  } else {
    old_leaf = session.Leaf();
  }
  r.target_id = o.target_id;
  if (old_leaf) r.old_leaf_id = session.entry(*old_leaf).id;
  if (old_leaf && *old_leaf == *target) {
    r.noop = true;
    r.new_leaf_id = r.old_leaf_id;
    return r;
  }
  std::vector<size_t> abandoned = AbandonedEntries(session, old_leaf, *target, &r);
  std::string new_leaf = NewLeafFor(session, *target, &r);

  std::string summary, details;
  if (o.hooks) {
    BeforeTreeEvent ev{session,   o.target_id, r.old_leaf_id, r.common_ancestor_id,
                       abandoned, o.summarize};
    BeforeTreeResult h = o.hooks->RunBeforeTree(ev, &r.hook_errors);
    if (h.cancel) return Status::Cancelled("navigation cancelled by a before_tree hook");
    if (h.summary && o.summarize) {
      summary = *h.summary;
      details = h.details_json;
      r.from_hook = true;
    }
  }
  if (o.summarize && !r.from_hook && !abandoned.empty()) {
    COMPACTOR_ASSIGN_OR_RETURN(summary, SummarizeAbandoned(session, abandoned, o, &details, &r));
  }
  r.summary = summary;
  AppendNavigationEntries(session, o, new_leaf, details, &r);
  return r;
}

namespace {

// Whether the computed navigation still applies to the session as it is now
// (AppendComputedLines' recheck). A summary describes the branch being left
// as it was read: an entry appended to it since (the leaf moved) would be
// missing from the summary, so the branch is refused. A plain move needs only
// its target.
Result<std::vector<std::string>> RecheckBranch(const Session& now, const std::string& path,
                                               const BranchOptions& o, const BranchResult& r) {
  if (!now.Find(o.target_id))
    return Status::FailedPrecondition(path + ": entry " + o.target_id +
                                      " is no longer in the file; nothing written");
  if (!r.summary.empty()) {
    const std::optional<size_t> leaf = now.Leaf();
    const std::string from = o.from_leaf ? *o.from_leaf : r.old_leaf_id;
    const bool moved = o.from_leaf ? !now.Find(*o.from_leaf)
                                   : (!leaf || now.entry(*leaf).id != std::string_view(from));
    if (moved)
      return Status::FailedPrecondition(
          path +
          ": an entry was appended while the branch summary was computed; nothing written "
          "(run branch again)");
  }
  return r.appended;
}

}  // namespace

Result<BranchResult> BranchFile(const std::string& path, const BranchOptions& o) {
  LoadOptions load;
  load.env = o.env;
  // The file before the load: unchanged at the append, the result still fits.
  std::optional<FileIdentity> loaded;
  if (Result<FileInfo> before = EnvOrDefault(o.env)->Stat(path); before.ok())
    loaded = before->identity;
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Open(path, load));
  COMPACTOR_ASSIGN_OR_RETURN(BranchResult r, ComputeBranch(*session, o));
  if (r.noop || o.dry_run) return r;
  AppendOptions append;
  append.env = o.env;
  RecheckFn recheck = [&](const Session& now) { return RecheckBranch(now, path, o, r); };
  COMPACTOR_RETURN_IF_ERROR(AppendComputedLines(path, loaded, r.appended, recheck, append));
  if (o.hooks) {
    AfterTreeEvent ev{r.new_leaf_id, r.old_leaf_id, r.summary.empty() ? "" : r.appended[0],
                      r.from_hook};
    o.hooks->RunAfterTree(ev, &r.hook_errors);
  }
  return r;
}

}  // namespace compactor
