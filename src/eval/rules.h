// Rules shared by the eval's fact extraction and its measures.
#ifndef COMPACTOR_SRC_EVAL_RULES_H_
#define COMPACTOR_SRC_EVAL_RULES_H_

#include <string_view>

namespace compactor::internal {

// Read-only exploration (listing, searching, viewing, inspecting git state,
// after any `cd X &&`): tool noise, not a command whose outcome a continuing
// agent needs (docs/quality.md, "Extracted facts").
bool IsExplorationCommand(std::string_view command);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_EVAL_RULES_H_
