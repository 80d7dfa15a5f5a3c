// Shared by prune and mask: the tool results of a path or context, newest
// first, with the fields both selection rules need.
#ifndef COMPACTOR_SRC_PRUNE_COMMON_H_
#define COMPACTOR_SRC_PRUNE_COMMON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/message.h"
#include "compactor/prune.h"
#include "compactor/session.h"

namespace compactor::internal {

struct ToolOutput {
  size_t entry_index = 0;
  size_t path_index = 0;
  std::string_view json;  // the message, a view into the session
  Message message;        // parsed (tool name, call id, content)
  int64_t tokens = 0;
  bool already_pruned = false;  // "prunedAt" present, whatever its value (omp: !== undefined)
};

// The counter to use: `counter`, or pi's estimate when empty.
MessageTokenCounter CounterOrDefault(const MessageTokenCounter& counter);

// toolResult message entries among `entries` (session indices in path
// order, with their path positions), returned newest first.
std::vector<ToolOutput> CollectToolOutputs(const Session& session,
                                           const std::vector<size_t>& entries,
                                           const std::vector<size_t>& path_positions,
                                           const MessageTokenCounter& count);

// ceil(UTF-16 length / 4): what oh-my-pi charges for its notice.
int64_t QuarterCharTokens(std::string_view text);

bool IsProtectedTool(const std::vector<std::string>& tools, std::string_view name);

// The record of replacing output `t` with `replacement` (tokens_saved: what
// the output costs beyond the replacement's QuarterCharTokens, at least 0).
ReplacedOutput Replace(const Session& session, const ToolOutput& t, std::string replacement);

// Resolves the optional leaf to a valid index (nullopt for an empty session).
Result<std::optional<size_t>> ResolveLeaf(const Session& session, std::optional<size_t> leaf);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_PRUNE_COMMON_H_
