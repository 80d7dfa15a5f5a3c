// The engine's driver: resolves the strategy through the registry, runs the
// checks every strategy shares, and records the result by its output kind.
// What strategies share lives in src/strategies/support.h, next to them.
#include <algorithm>

#include "compactor/compact.h"
#include "compactor/js_json.h"
#include "compactor/prune.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "util/json_scan.h"

namespace compactor {

Result<ComputedCompaction> ComputeCompaction(const Session& session, const CompactOptions& o) {
  const int64_t start_us = EnvOrDefault(o.env)->MonotonicMicros();
  const CompactionStrategy* strategy = o.strategy;
  if (!strategy) {
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
  ComputedCompaction out;
  out.result.strategy = std::string(strategy->name());
  out.result.output = strategy->output();
  strategy->InitResult(&out.result);
  if (!o.settings.enabled && o.only_if_needed) {
    out.result.skipped_reason = "disabled";
  } else {
    COMPACTOR_RETURN_IF_ERROR(strategy->Compute(session, o, *summarizer, &out));
  }
  out.result.duration_ms =
      static_cast<double>(EnvOrDefault(o.env)->MonotonicMicros() - start_us) / 1000.0;
  return out;
}

Result<std::unique_ptr<Session>> SessionWithAppended(const Session& session,
                                                     const std::string& entry_json) {
  return Session::FromString(session.ToV3Jsonl() + entry_json + "\n", session.path());
}

Result<std::unique_ptr<Session>> SessionAfterCompaction(const Session& session,
                                                        const ComputedCompaction& c) {
  switch (c.result.output) {
    case CompactionOutput::kNewSession:
      return Session::FromString(c.new_session_jsonl, c.result.output_path);
    case CompactionOutput::kRewriteFile:
      return Session::FromString(c.rewritten_jsonl, session.path());
    case CompactionOutput::kAppendEntry:
      break;
  }
  return SessionWithAppended(session, c.result.entry_json);
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
  if (!o.settings.tokenizer) measured.message_observer = TokenEstimateObserver();
  // The file as it was before the load: at the append, an unchanged identity
  // means the computed entry still fits; a changed one is checked again.
  std::optional<FileIdentity> loaded;
  if (Result<FileInfo> before = EnvOrDefault(o.env)->Stat(path); before.ok())
    loaded = before->identity;
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Open(path, measured));
  COMPACTOR_ASSIGN_OR_RETURN(ComputedCompaction c, ComputeCompaction(*session, o));
  CompactionResult& r = c.result;
  if (!r.compacted || o.dry_run) return r;
  switch (r.output) {
    case CompactionOutput::kNewSession:
      COMPACTOR_RETURN_IF_ERROR(WriteFileAtomic(r.output_path, c.new_session_jsonl,
                                                RewriteOptions{false, ".bak", o.env}));
      break;
    case CompactionOutput::kRewriteFile: {
      if (!c.rewrite_plan) return Status::Internal(r.strategy + ": no rewrite plan");
      // Rewrites only the changed lines, carrying over what agents append
      // meanwhile (RewriteSessionFile); the old file is kept as FILE.bak.
      WriteRewrittenOptions w;
      w.env = o.env;
      w.grace_ms = o.rewrite_grace_ms;
      COMPACTOR_ASSIGN_OR_RETURN(WriteRewrittenResult written,
                                 WriteRewrittenSession(*session, path, *c.rewrite_plan, w));
      r.output_path = written.output_path;
      break;
    }
    case CompactionOutput::kAppendEntry: {
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
      break;
    }
  }
  if (o.hooks) o.hooks->RunAfterCompact({r}, &r.hook_errors);
  return r;
}

}  // namespace compactor
