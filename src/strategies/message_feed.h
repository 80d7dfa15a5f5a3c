// The messages a compaction summarizes, parsed from their stored JSON. Long
// histories are parsed by a second thread, either all before the summary or,
// for a summarizer that reads them in order, while the summary runs.
#ifndef COMPACTOR_SRC_STRATEGIES_MESSAGE_FEED_H_
#define COMPACTOR_SRC_STRATEGIES_MESSAGE_FEED_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "compactor/context.h"
#include "compactor/env.h"
#include "compactor/message.h"

namespace compactor::internal {

class MessageFeed {
 public:
  // The messages of `lists`, in order, one slot each. A message that does not
  // parse (not a JSON object) stays a default Message: role kOther, nothing
  // a summarizer reads. The lists must outlive the feed.
  // The worker thread comes from `env` (null = Env::Default()).
  explicit MessageFeed(std::initializer_list<const std::vector<ContextMessage>*> lists,
                       Env* env = nullptr);
  // Stops the worker, if any, after the message it is parsing.
  ~MessageFeed();
  MessageFeed(const MessageFeed&) = delete;
  MessageFeed& operator=(const MessageFeed&) = delete;

  // Parses every message before returning (two threads for long histories).
  void ParseAll();
  // Parses on a worker thread, in order; WaitFor tells when a prefix is
  // ready. Short histories (or no thread to be had) are parsed here instead.
  void Start();
  // Blocks until the first `n` messages are parsed. Rethrows what the worker
  // threw (std::bad_alloc); ParseAll rethrows it too, on the caller's thread.
  void WaitFor(size_t n);

  // Every slot; a slot may be read once WaitFor covered it.
  const std::vector<Message>& messages() const { return messages_; }
  // Whether slot i held a JSON object (read after WaitFor covered it).
  bool parsed(size_t i) const { return parsed_[i] != 0; }
  // The messages, moved out (after ParseAll).
  std::vector<Message> TakeMessages() { return std::move(messages_); }

 private:
  void Parse(size_t from, size_t to, bool publish);
  void Publish(size_t n);

  std::vector<const ContextMessage*> in_;
  size_t bytes_ = 0;
  std::vector<Message> messages_;
  std::vector<char> parsed_;
  std::atomic<size_t> ready_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  Env* env_;
  std::unique_ptr<Thread> worker_;
  std::exception_ptr error_;  // guarded by mu_ while a streaming worker runs
  std::atomic<bool> failed_{false};
};

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_STRATEGIES_MESSAGE_FEED_H_
