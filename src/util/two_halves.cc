#include "util/two_halves.h"

#include <exception>
#include <memory>

namespace compactor::internal {

void RunInTwoHalves(Env* env, size_t n, bool parallel,
                    const std::function<size_t(size_t i)>& weight,
                    const std::function<void(size_t from, size_t to, int half)>& work) {
  size_t mid = n;
  std::unique_ptr<Thread> worker;
  std::exception_ptr worker_error;
  if (parallel) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += weight(i);
    // Split by weight, not by count: tool results dwarf most messages.
    size_t acc = 0;
    mid = 0;
    while (mid < n && acc < total / 2) acc += weight(mid++);
    Result<std::unique_ptr<Thread>> started =
        EnvOrDefault(env)->StartThread([&work, &worker_error, mid, n] {
          try {
            work(mid, n, 1);
          } catch (...) {
            worker_error = std::current_exception();  // a throw on a thread would terminate
          }
        });
    if (started.ok()) {
      worker = std::move(started).value();
    } else {
      mid = n;  // no thread to be had: everything here
    }
  }
  try {
    work(0, mid, 0);
  } catch (...) {
    if (worker) worker->Join();
    throw;
  }
  if (worker) worker->Join();
  if (worker_error) std::rethrow_exception(worker_error);
}

}  // namespace compactor::internal
