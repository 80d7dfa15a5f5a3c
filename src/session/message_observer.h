// What the session indexer asks of the module that measures messages while it
// indexes (LoadOptions::message_observer): the index stores the measure with
// each message entry (Entry::estimate, Entry::tool_call_blocks and the file
// tool calls behind Session::ForEachFileCall), so callers that estimate the
// context or prepare a compaction never read the messages a second time.
//
// The session module defines the interface and the measure's shape; the
// tokens module implements it with pi's estimate (TokenEstimateObserver() in
// compactor/estimate.h). Exported to the modules that use session
// (cmake/modules.cmake): it names simdjson types, so it is not public.
#ifndef COMPACTOR_SRC_SESSION_MESSAGE_OBSERVER_H_
#define COMPACTOR_SRC_SESSION_MESSAGE_OBSERVER_H_

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/session.h"
#include "util/kernel.h"

namespace compactor {
namespace internal {

// A read, write or edit tool call with a non-empty "path" argument.
struct FileCall {
  char tool;              // 'r' read, 'w' write, 'e' edit
  std::string_view path;  // a view into the measured JSON (a plain string: no escapes)
};

struct MessageMeasure {
  int64_t tokens = 0;            // the message's token estimate (Entry::estimate)
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

// Receives every member of the message the observer does not read itself.
using OtherField = std::function<void(std::string_view key, simdjson::ondemand::value v)>;

}  // namespace internal

// Measures one message object per call, on the indexing threads: Measure
// must be thread-safe (the built-in one keeps no shared state).
class MessageObserver {
 public:
  virtual ~MessageObserver() = default;
  // Measures the object `message` in one forward pass into *out. Returns
  // false (the iterator is then spent) when the message needs a tolerant
  // path; the indexer reads the entry again without measuring inline and
  // calls Measure once more without `other`, and a second false leaves the
  // message unmeasured (Entry::estimate -1). `other`, when given, gets every
  // member the observer does not read, in order, during the same pass, so the
  // indexer needs no second walk for the fields it keeps.
  virtual bool Measure(simdjson::ondemand::object message, internal::MessageMeasure* out,
                       const internal::OtherField* other) const = 0;
  // The same observer compiled for CPU kernel `kernel` (util/kernel.h): the
  // indexer's copy for a kernel walks JSON with that kernel's simdjson
  // On-Demand types, so it may only call a Measure compiled with them. The
  // indexer asks the observer it was given (baseline code) once per load.
  virtual const MessageObserver* ForKernel(const internal::KernelTable& kernel) const = 0;
};

}  // namespace compactor

#endif  // COMPACTOR_SRC_SESSION_MESSAGE_OBSERVER_H_
