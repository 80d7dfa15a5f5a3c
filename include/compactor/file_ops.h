// File operations seen in tool calls, carried from compaction to compaction
// and appended to summaries as a footer (pi 0.73.1's file-operation
// tracking; docs/summarizers.md).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_FILE_OPS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_FILE_OPS_H_

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/message.h"

namespace compactor {

struct FileOps {
  std::set<std::string> read;
  std::set<std::string> written;
  std::set<std::string> edited;
};

// The lists a summary footer and a compaction's `details` carry.
struct FileLists {
  std::vector<std::string> read_files;      // read and never modified, sorted
  std::vector<std::string> modified_files;  // written or edited, sorted
};

// Adds the paths of an assistant message's `read`, `write` and `edit` tool
// calls (arguments.path, a non-empty string, taken verbatim). Other roles and
// tools are ignored, as in pi.
void ExtractFileOps(const Message& message, FileOps& ops);
void ExtractFileOps(std::span<const Message> messages, FileOps& ops);
// Same on a message's raw JSON; unreadable JSON adds nothing.
void ExtractFileOpsFromJson(std::string_view message_json, FileOps& ops);

// Seeds from a pi-generated compaction's or branch summary's `details`
// ({"readFiles": [...], "modifiedFiles": [...]}): readFiles -> read,
// modifiedFiles -> edited. Anything else adds nothing.
void SeedFileOpsFromDetails(std::string_view details_json, FileOps& ops);
// Same from lists already parsed.
void SeedFileOps(std::span<const std::string> read_files,
                 std::span<const std::string> modified_files, FileOps& ops);

// pi's computeFileLists: modified = edited + written; read = read - modified;
// both sorted the way JavaScript's default sort orders strings (UTF-16 code units).
FileLists ComputeFileLists(const FileOps& ops);

// pi's formatFileOperations:
// "\n\n<read-files>\n...\n</read-files>\n\n<modified-files>\n...\n</modified-files>", each section
// only when non-empty; "" when both are empty.
std::string FormatFileOperations(const FileLists& lists);

// JavaScript's string comparison (UTF-16 code unit order) on UTF-8 strings.
bool Utf16Less(std::string_view a, std::string_view b);
inline bool JsStringLess(std::string_view a, std::string_view b) { return Utf16Less(a, b); }

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_FILE_OPS_H_
