// One call run on another thread while the caller does something else: what
// std::async(std::launch::async, ...) gave, with the thread from an Env.
#ifndef COMPACTOR_SRC_UTIL_BACKGROUND_H_
#define COMPACTOR_SRC_UTIL_BACKGROUND_H_

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "compactor/env.h"

namespace compactor::internal {

// Starts fn() on a thread from `env` (null = Env::Default()); when no thread
// can be had, fn() runs in Get() on the caller's thread instead. Get() waits
// and returns fn's value, or rethrows what fn threw. The destructor joins.
// REQUIRES: Get() is called at most once.
template <typename T>
class Background {
 public:
  Background(Env* env, std::function<T()> fn) : fn_(std::move(fn)) {
    Result<std::unique_ptr<Thread>> t = EnvOrDefault(env)->StartThread([this] { Run(); });
    if (t.ok()) thread_ = std::move(t).value();
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    if (thread_) thread_->Join();
  }

  T Get() {
    if (thread_) {
      thread_->Join();
    } else {
      Run();
    }
    if (error_) std::rethrow_exception(error_);
    return std::move(*value_);
  }

 private:
  void Run() {
    try {
      value_.emplace(fn_());
    } catch (...) {
      error_ = std::current_exception();  // a throw on a thread would terminate
    }
  }

  std::function<T()> fn_;
  std::optional<T> value_;
  std::exception_ptr error_;
  std::unique_ptr<Thread> thread_;
};

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_BACKGROUND_H_
