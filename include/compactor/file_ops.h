// File-operation tracking for summaries (compaction-algorithms.md A8): which
// files the agent read and modified, taken mechanically from tool calls, and
// the `<read-files>` / `<modified-files>` footer pi appends to compaction and
// branch summaries.
//
// Pure functions over parsed messages; shared by preparation (policy) and the
// summarizers.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_FILE_OPS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_FILE_OPS_H_

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/message.h"

namespace compactor {

// Sets of paths, taken verbatim (no normalization), as pi's createFileOps().
struct FileOps {
  std::set<std::string> read;
  std::set<std::string> written;
  std::set<std::string> edited;
};

// pi's extractFileOpsFromMessage: only assistant messages; every toolCall block
// whose arguments.path is a non-empty string counts when the tool is `read`,
// `write` or `edit`. Everything else (bash, grep, tool results) is ignored.
void ExtractFileOps(const Message& message, FileOps& ops);
void ExtractFileOps(std::span<const Message> messages, FileOps& ops);

// Seeds from a pi-generated compaction's or branch summary's `details`
// (readFiles -> read, modifiedFiles -> edited). Callers skip fromHook entries.
void SeedFileOps(std::span<const std::string> read_files,
                 std::span<const std::string> modified_files, FileOps& ops);

struct FileLists {
  std::vector<std::string> read_files;      // read and never modified, sorted
  std::vector<std::string> modified_files;  // edited ∪ written, sorted
};

// pi's computeFileLists. Sorted as JavaScript's default sort does (UTF-16
// code-unit order, which differs from UTF-8 byte order above U+FFFF).
FileLists ComputeFileLists(const FileOps& ops);

// pi's formatFileOperations (exact): "" when both lists are empty, otherwise
// "\n\n" + the non-empty blocks joined with "\n\n".
std::string FormatFileOperations(const FileLists& lists);

// JavaScript's default string comparison (UTF-16 code units) on UTF-8 input.
bool JsStringLess(std::string_view a, std::string_view b);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_FILE_OPS_H_
