// Work split in two at about half of its weight, the second half on a worker
// thread: the pattern every long, per-item pass of a compaction uses
// (2 cores is the target machine).
#ifndef COMPACTOR_SRC_UTIL_TWO_HALVES_H_
#define COMPACTOR_SRC_UTIL_TWO_HALVES_H_

#include <cstddef>
#include <functional>

#include "compactor/env.h"

namespace compactor::internal {

// Calls work(0, mid, 0) here and work(mid, n, 1) on a worker thread from
// `env` (null = Env::Default()), where mid splits the summed weight(i) of the
// n items about in half. Runs everything here (work(0, n, 0) only) when
// `parallel` is false or no thread can be had. Joins before returning; an
// exception of either half is rethrown here (the caller's first).
void RunInTwoHalves(Env* env, size_t n, bool parallel,
                    const std::function<size_t(size_t i)>& weight,
                    const std::function<void(size_t from, size_t to, int half)>& work);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_TWO_HALVES_H_
