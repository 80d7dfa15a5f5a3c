// pi's message estimate over a message object another parser is already
// iterating (the session indexer measures every message in its single pass).
#ifndef COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
#define COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace compactor::internal {

struct MessageMeasure {
  int64_t tokens = 0;            // EstimateMessageTokens
  int64_t tool_call_blocks = 0;  // content blocks with a "type" of "toolCall"
};

// Measures the object `message` in one forward pass. Returns false (and the
// iterator is spent) when the message needs the tolerant path of
// EstimateMessageTokens(json): a parse error, escaped object keys or unusual
// numbers in tool-call arguments, lone surrogates.
bool MeasureMessageObject(simdjson::ondemand::object message, MessageMeasure* out);

// The two paths EstimateMessageTokens(json) chooses between, for tests: the
// fast one (nullopt where it gives up) must agree with the full one wherever
// it answers.
std::optional<int64_t> EstimateMessageTokensFast(std::string_view message_json);
int64_t EstimateMessageTokensFull(std::string_view message_json);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
