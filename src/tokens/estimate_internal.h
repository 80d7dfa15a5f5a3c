// pi's message estimate over a message object another parser is already
// iterating (the session indexer measures every message in its single pass).
#ifndef COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
#define COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace compactor::internal {

// EstimateMessageTokens of the object `message`, read in one forward pass.
// Returns false (and the iterator is spent) when the message needs the
// tolerant path of EstimateMessageTokens(json): a parse error, escaped object
// keys or unusual numbers in tool-call arguments, lone surrogates.
bool EstimateMessageObject(simdjson::ondemand::object message, int64_t* tokens);

// The two paths EstimateMessageTokens(json) chooses between, for tests: the
// fast one (nullopt where it gives up) must agree with the full one wherever
// it answers.
std::optional<int64_t> EstimateMessageTokensFast(std::string_view message_json);
int64_t EstimateMessageTokensFull(std::string_view message_json);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
