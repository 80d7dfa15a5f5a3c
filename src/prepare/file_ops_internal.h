#ifndef COMPACTOR_SRC_PREPARE_FILE_OPS_INTERNAL_H_
#define COMPACTOR_SRC_PREPARE_FILE_OPS_INTERNAL_H_

#include <string>
#include <string_view>

#include "compactor/file_ops.h"

namespace compactor::internal {

// ExtractFileOpsFromJson without its text pre-filter, for a message already
// known to have tool-call blocks (the session index counted them): the
// pre-filter would scan most of the message only to find one.
void ExtractFileOpsFromToolCallJson(std::string_view message_json, FileOps& ops);

// Records `path` under the set of `tool`: "read", "write" or "edit" (any
// other name adds nothing).
void AddFileOp(std::string_view tool, std::string path, FileOps& ops);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_PREPARE_FILE_OPS_INTERNAL_H_
