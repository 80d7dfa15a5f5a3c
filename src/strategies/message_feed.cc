#include "strategies/message_feed.h"

#include <exception>

#include "util/two_halves.h"

namespace compactor::internal {
namespace {

// Below this much JSON a second thread costs more than it saves.
constexpr size_t kParallelBytes = 4u << 20;
// Messages parsed between two announcements to a waiting reader.
constexpr size_t kPublishEvery = 32;

bool CanUseTwoThreads(Env* env, size_t bytes) {
  return bytes >= kParallelBytes && env->HardwareThreads() >= 2;
}

}  // namespace

MessageFeed::MessageFeed(std::initializer_list<const std::vector<ContextMessage>*> lists, Env* env)
    : env_(EnvOrDefault(env)) {
  for (const auto* list : lists) {
    for (const ContextMessage& cm : *list) {
      in_.push_back(&cm);
      bytes_ += cm.json().size();
    }
  }
  messages_.resize(in_.size());
  parsed_.assign(in_.size(), 0);
}

MessageFeed::~MessageFeed() {
  stop_.store(true, std::memory_order_relaxed);
  if (worker_) worker_->Join();
}

void MessageFeed::Parse(size_t from, size_t to, bool publish) {
  for (size_t i = from; i < to; ++i) {
    if (stop_.load(std::memory_order_relaxed)) break;
    auto m = ParseMessage(in_[i]->json());
    if (m.ok()) {
      messages_[i] = std::move(m).value();
      parsed_[i] = 1;
    }
    if (publish && (i + 1 - from) % kPublishEvery == 0) Publish(i + 1);
  }
  if (publish) Publish(to);
}

void MessageFeed::Publish(size_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.store(n, std::memory_order_release);
  }
  cv_.notify_all();
}

void MessageFeed::ParseAll() {
  RunInTwoHalves(
      env_, in_.size(), CanUseTwoThreads(env_, bytes_),
      [this](size_t i) { return in_[i]->json().size(); },
      [this](size_t from, size_t to, int) { Parse(from, to, false); });
  ready_.store(in_.size(), std::memory_order_release);
}

void MessageFeed::Start() {
  if (CanUseTwoThreads(env_, bytes_)) {
    Result<std::unique_ptr<Thread>> started = env_->StartThread([this] {
      try {
        Parse(0, in_.size(), true);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          error_ = std::current_exception();
          failed_.store(true, std::memory_order_release);
        }
        Publish(in_.size());  // wake every reader: WaitFor rethrows
      }
    });
    if (started.ok()) {
      worker_ = std::move(started).value();
      return;
    }
    // no thread to be had: parse here
  }
  ParseAll();
}

void MessageFeed::WaitFor(size_t n) {
  if (n > in_.size()) n = in_.size();
  if (ready_.load(std::memory_order_acquire) < n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_.load(std::memory_order_acquire) >= n; });
  }
  // A worker that failed (out of memory) published everything unparsed: its
  // error goes to the reader rather than a summary of half the messages.
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu_);
    std::rethrow_exception(error_);
  }
}

}  // namespace compactor::internal
