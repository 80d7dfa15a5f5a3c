// The JSON shapes of the CLI's `--json` output, built in one place so that
// the CLI and the service API (`compactor serve`, docs/api.md) answer with
// the same bytes for the same session. docs/cli.md is the contract of each
// shape; changing one here changes both.
//
// Thread safety: pure functions of their arguments.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_REPORT_H_
#define COMPACTOR_INCLUDE_COMPACTOR_REPORT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "compactor/branch.h"
#include "compactor/compaction.h"
#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/prepare.h"
#include "compactor/session.h"

namespace compactor {

// Receives consecutive pieces of a document (each valid only during the call).
using JsonSink = std::function<void(std::string_view piece)>;

// What `compactor stats` counts (both its forms read it).
struct SessionStats {
  std::map<std::string, int64_t> entries_by_type, messages_by_role;
  int64_t compactions = 0, branch_summaries = 0;
  int64_t branch_points = 0, leaves = 0;
  int64_t compactions_on_path = 0;
  ContextEstimate estimate;  // pi's estimate of the context's messages
};
SessionStats ComputeSessionStats(const Session& session, const SessionContext& context);

// `compactor stats --json` for `session` and the context at its leaf (or the
// leaf the context was built for). One line, no trailing newline.
std::string StatsJson(const Session& session, const SessionContext& context);

// `compactor tree --json` (version 2): written to `sink` in pieces of about
// 1 MiB, so a long session needs no document as large as itself. Ends with
// "]}" and no newline.
void WriteTreeJson(const Session& session, const SessionContext& context, const JsonSink& sink);
std::string TreeJson(const Session& session, const SessionContext& context);

// `compactor plan --json` (no trailing newline).
std::string PlanJson(const PrepareResult& result);

// `compactor compact --json`: `dry_run` says whether the result was written.
std::string CompactionResultJson(const CompactionResult& result, bool dry_run);

// `compactor branch --json`.
std::string BranchResultJson(const BranchResult& result, bool dry_run);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_REPORT_H_
