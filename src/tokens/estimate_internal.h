// pi's message estimate over a message object another parser is already
// iterating: what TokenEstimateObserver() runs for the session indexer
// (session/message_observer.h), and the two paths of EstimateMessageTokens.
#ifndef COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
#define COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "session/message_observer.h"

namespace compactor::internal {

// Measures the object `message` in one forward pass. Returns false (and the
// iterator is spent) when the message needs the tolerant path of
// EstimateMessageTokens(json): a parse error, escaped object keys or unusual
// numbers in tool-call arguments, lone surrogates.
// `other`, when given, gets every member the estimate does not read (any key
// but role, content, command, output, summary) in order, during the same
// pass, so a caller reading more of the message needs no second walk.
bool MeasureMessageObject(simdjson::ondemand::object message, MessageMeasure* out,
                          const OtherField* other = nullptr);

// The two paths EstimateMessageTokens(json) chooses between, for tests: the
// fast one (nullopt where it gives up) must agree with the full one wherever
// it answers.
std::optional<int64_t> EstimateMessageTokensFast(std::string_view message_json);
int64_t EstimateMessageTokensFull(std::string_view message_json);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_TOKENS_ESTIMATE_INTERNAL_H_
