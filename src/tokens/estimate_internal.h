// pi's message estimate over a message object another parser is already
// iterating (the session indexer measures every message in its single pass).
#ifndef COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
#define COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::internal {

// A read, write or edit tool call with a non-empty "path" argument.
struct FileCall {
  char tool;              // 'r' read, 'w' write, 'e' edit
  std::string_view path;  // a view into the measured JSON (a plain string: no escapes)
};

struct MessageMeasure {
  int64_t tokens = 0;            // EstimateMessageTokens
  int64_t tool_call_blocks = 0;  // content blocks with a "type" of "toolCall"
  // The file tool calls in content order, read in the same pass so that file
  // operations need no second parse. Only trusted when file_calls_known: an
  // escaped tool name or path, or a repeated key among those the file rules
  // read ("role", "content", a block's "type"/"name"/"arguments", the
  // arguments' "path"), leaves them to ExtractFileOps on the message.
  bool file_calls_known = true;
  std::vector<FileCall> file_calls;
  std::string role;  // the last string "role"
};

// Measures the object `message` in one forward pass. Returns false (and the
// iterator is spent) when the message needs the tolerant path of
// EstimateMessageTokens(json): a parse error, escaped object keys or unusual
// numbers in tool-call arguments, lone surrogates.
// `other`, when given, gets every member the estimate does not read (any key
// but role, content, command, output, summary) in order, during the same
// pass, so a caller reading more of the message needs no second walk.
bool MeasureMessageObject(
    simdjson::ondemand::object message, MessageMeasure* out,
    const std::function<void(std::string_view key, simdjson::ondemand::value v)>* other = nullptr);

// The two paths EstimateMessageTokens(json) chooses between, for tests: the
// fast one (nullopt where it gives up) must agree with the full one wherever
// it answers.
std::optional<int64_t> EstimateMessageTokensFast(std::string_view message_json);
int64_t EstimateMessageTokensFull(std::string_view message_json);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
