// The engine's driver: resolves the strategy through the registry, runs the
// checks every strategy shares, and records the result by its output kind.
// What strategies share lives in strategy_support.h; each strategy in
// src/strategies/.
#include "compactor/compact.h"
#include "compactor/prune.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"

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

Result<CompactionResult> CompactFile(const std::string& path, const CompactOptions& o,
                                     const LoadOptions& load) {
  LoadOptions measured = load;
  measured.env = o.env;
  // Compaction estimates every message of the context: measure them while indexing.
  if (!o.settings.tokenizer) measured.estimate_messages = true;
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
      // Rewrites only the changed lines of the bytes on disk, refusing if an
      // agent appended meanwhile; the old file is kept as FILE.bak.
      WriteRewrittenOptions w;
      w.env = o.env;
      COMPACTOR_ASSIGN_OR_RETURN(WriteRewrittenResult written,
                                 WriteRewrittenSession(*session, path, *c.rewrite_plan, w));
      r.output_path = written.output_path;
      break;
    }
    case CompactionOutput::kAppendEntry:
      COMPACTOR_RETURN_IF_ERROR(AppendLines(path, {r.entry_json}, AppendOptions{false, -1, o.env}));
      break;
  }
  if (o.hooks) o.hooks->RunAfterCompact({r}, &r.hook_errors);
  return r;
}

}  // namespace compactor
