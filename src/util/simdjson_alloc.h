// Checked growth of simdjson's buffers. simdjson 3.0.1 (Debian 12) leaves two
// allocations unchecked: padded_string(n) keeps the size n over a null buffer
// when its allocation fails, and the On-Demand parser's allocate() goes on
// with a null string buffer. Out of memory, either ends in a write through a
// null pointer (SIGSEGV; seen under `ulimit -v` in
// HostileInput.JsonOutputUnderTightMemoryLimits) instead of an error. These
// grow them first and throw std::bad_alloc, as a failed `new` does, which the
// commands report as "out of memory" (exit 4, docs/cli.md).
//
// Header-only: the On-Demand types are compiled per CPU kernel (kernel.h).
#ifndef COMPACTOR_SRC_UTIL_SIMDJSON_ALLOC_H_
#define COMPACTOR_SRC_UTIL_SIMDJSON_ALLOC_H_

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace compactor::internal {

// `buffer` holds at least `bytes` (plus simdjson's padding). When it grows, to
// 2 * bytes + 64 so that slowly growing texts do not reallocate each time, its
// contents are not kept.
inline void GrowPadded(simdjson::padded_string& buffer, size_t bytes) {
  if (buffer.size() >= bytes) return;
  simdjson::padded_string grown(bytes * 2 + 64);
  if (grown.data() == nullptr) throw std::bad_alloc();
  buffer = std::move(grown);
}

// `parser` (an On-Demand parser of any kernel) can iterate `bytes` of JSON
// without allocating. The string buffer the parser will ask for is tried
// first, with 1 MiB to spare for what other threads allocate in between; an
// allocation simdjson reports failed (MEMALLOC) throws too. Other errors
// (over simdjson's 4 GiB limit) are left for iterate() to report.
template <typename Parser>
void ReserveOnDemand(Parser& parser, size_t bytes) {
  if (parser.capacity() >= bytes) return;
  const size_t string_bytes = (5 * bytes / 3 + simdjson::SIMDJSON_PADDING + 63) / 64 * 64;
  constexpr size_t kSpare = size_t{1} << 20;
  std::unique_ptr<uint8_t[]> probe(new (std::nothrow) uint8_t[string_bytes + kSpare]);
  if (!probe) throw std::bad_alloc();
  probe.reset();
  if (parser.allocate(bytes) == simdjson::MEMALLOC) throw std::bad_alloc();
}

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_SIMDJSON_ALLOC_H_
