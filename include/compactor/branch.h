// Moving to another point of the session tree with a summary of the branch
// being left (pi 0.73.1's /tree navigation: collectEntriesForBranchSummary,
// generateBranchSummary, navigateTree).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_BRANCH_H_
#define COMPACTOR_INCLUDE_COMPACTOR_BRANCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compactor/compact.h"
#include "compactor/session.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor {

struct BranchOptions {
  std::string target_id;                 // REQUIRES: an entry of the session
  std::optional<std::string> from_leaf;  // the branch being left; default: the file's leaf
  bool summarize = false;                // write a summary of the abandoned branch
  std::string instructions;  // extra focus (replaces the prompt with replace_instructions)
  bool replace_instructions = false;
  std::string label;                       // optional label on the new position
  const Summarizer* summarizer = nullptr;  // nullptr = the offline summarizer
  // The summarized branch must fit (context_window - reserve_tokens) estimated tokens.
  int64_t context_window = 128000;
  int64_t reserve_tokens = 16384;
  const CompactionHooks* hooks = nullptr;
  bool dry_run = false;
  // The session file, entry timestamps and ids; null = Env::Default().
  Env* env = nullptr;
};

struct BranchResult {
  bool noop = false;  // the target already is the leaf
  std::string old_leaf_id;
  std::string target_id;
  std::string common_ancestor_id;  // empty: the branches share no entry
  std::string new_leaf_id;  // the leaf after navigation (the appended entry when one was written)
  // When the target is a user or custom message, pi moves to its parent and
  // hands the text back for editing.
  std::string editor_text;
  std::vector<std::string> entries_summarized;  // ids, oldest first
  std::string summary;                          // empty without --summarize
  bool from_hook = false;
  std::vector<std::string> read_files, modified_files;
  std::vector<std::string> appended;  // JSON lines written (or that would be, with dry_run)
  std::vector<std::string> hook_errors;
};

Result<BranchResult> ComputeBranch(const Session& session, const BranchOptions& options);
// Loads, computes and appends. Without a summary the move is recorded as a
// branch_summary with an empty summary (pi ignores it in the context) so the
// new position survives a reload; see docs/strategies.md.
Result<BranchResult> BranchFile(const std::string& path, const BranchOptions& options);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_BRANCH_H_
