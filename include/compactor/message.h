// Agent messages as pi stores them (docs/session-format.md), parsed on demand
// from their raw JSON. The raw JSON stays the source of truth: a Message is a
// read-only convenience view used by estimation, compaction and summarizers.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_MESSAGE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_MESSAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/status.h"

namespace compactor {

enum class Role {
  kUser,
  kAssistant,
  kToolResult,
  kBashExecution,
  kCustom,
  kBranchSummary,
  kCompactionSummary,
  kOther,  // any other role string (kept, never estimated: pi counts it as 0)
};

// "user", "assistant", "toolResult", ... ; kOther -> "other".
std::string_view RoleName(Role role);
Role RoleFromName(std::string_view name);

struct ContentBlock {
  enum class Kind { kText, kThinking, kImage, kToolCall, kOther };
  Kind kind = Kind::kOther;
  std::string type;          // the block's "type" string as stored
  std::string text;          // kText: text; kThinking: thinking
  bool redacted = false;     // kThinking
  std::string mime_type;     // kImage
  size_t data_length = 0;    // kImage: length of the base64 data (the data itself is not copied)
  std::string tool_call_id;  // kToolCall: id
  std::string tool_name;     // kToolCall: name
  std::string
      arguments_json;  // kToolCall: arguments as JavaScript's JSON.stringify would print them
};

struct Usage {
  double input = 0, output = 0, cache_read = 0, cache_write = 0, total_tokens = 0;
};

struct Message {
  Role role = Role::kOther;
  std::string role_name;
  double timestamp = 0;  // Unix ms (NaN when absent or invalid)

  // user / toolResult / custom: content may be a plain string (content_is_string) or blocks.
  bool content_is_string = false;
  std::string content_string;
  std::vector<ContentBlock> content;  // assistant, and block-array content of the roles above

  // assistant
  std::string api, provider, model, stop_reason, error_message;
  std::optional<Usage> usage;

  // toolResult
  std::string tool_call_id, tool_name;
  bool is_error = false;

  // bashExecution
  std::string command, output, full_output_path;
  std::optional<double> exit_code;
  bool cancelled = false, truncated = false, exclude_from_context = false;

  // custom
  std::string custom_type;
  bool display = false;

  // branchSummary / compactionSummary
  std::string summary, from_id;
  double tokens_before = 0;

  // All text of text blocks (or the string content), joined with "\n".
  std::string JoinedText() const;
};

// Parses one message object (its raw JSON text). Fails only on invalid JSON or a
// non-object value; unknown roles, fields and block types are accepted.
Result<Message> ParseMessage(std::string_view json);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_MESSAGE_H_
