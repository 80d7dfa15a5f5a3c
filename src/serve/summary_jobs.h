// The proxy's conversations and their summaries (docs/serve.md, "Compaction
// in the proxy", "Never worse than no proxy"): per conversation the summary
// in force (the items it replaced and its text) and at most one summary
// being written (single flight: a second request of the conversation joins
// the running job instead of starting another). Jobs run on threads of their
// own (Env::StartThread), so a request waits for its summary at most a
// deadline, and a summary prepared ahead (at ~80% of the threshold) runs
// while requests keep passing.
//
// Thread safety: every method may be called from any thread.
#ifndef COMPACTOR_SRC_SERVE_SUMMARY_JOBS_H_
#define COMPACTOR_SRC_SERVE_SUMMARY_JOBS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/message.h"
#include "compactor/store.h"
#include "compactor/summarizer.h"
#include "serve/compact_plan.h"

namespace compactor::serve {

// What one job summarizes.
struct SummaryWork {
  // The items the summary replaces (raw JSON of [0, cut)), committed with it.
  std::vector<std::string> prefix;
  std::vector<Message> messages;
  std::string previous;  // folded into (an update) when not empty
  // The summarizer (owned by the job when `owned` is set) and its window.
  std::shared_ptr<const Summarizer> summarizer;
  int64_t window = 0;
  // Prepared ahead (at ~80% of the threshold): nobody waits for it and no
  // client's disconnect cancels it.
  bool background = false;
};

// Where summaries outlive the in-memory conversation table: the store's
// summary cache (SessionStore::PutSummary / FindSummary), keyed by
// SummaryKey of the items a summary replaces. Either function may be empty.
// `claim` (SessionStore::TryClaimSummary): servers sharing the store
// summarize each prefix once; a job that finds the claim taken waits for
// the holder's summary (at most kClaimWaitMs) instead of writing its own.
struct DurableSummaries {
  std::function<void(const std::string& key, const std::string& summary)> put;
  std::function<std::optional<std::string>(const std::string& key)> find;
  std::function<Result<std::unique_ptr<SummaryClaim>>(const std::string& key)> claim;
};

// How long a summary job waits for another server's summary of the same
// prefix before it writes its own: 30 s.
inline constexpr int64_t kClaimWaitMs = 30'000;

// The conversation table's bounds.
struct ConversationLimits {
  // Conversations kept in memory (settings "serve.maxConversations"):
  // beyond it the least recently used one without a running summary is
  // evicted; when it comes back, its summary is found again through
  // `durable` (the same bytes: the upstream's prompt cache still hits).
  size_t max_conversations = 4096;
  // Not owned; null = none. Points at an object that outlives the table
  // and is set, if at all, before the first request.
  const DurableSummaries* durable = nullptr;
};

// One summary being written. The result is set once, then `done`.
class SummaryJob {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }
  // REQUIRES: done().
  const Result<std::string>& result() const { return result_; }
  bool background() const { return background_; }
  bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }

 private:
  friend class Conversations;
  std::atomic<bool> done_{false};
  std::atomic<bool> cancel_{false};
  Result<std::string> result_ = Status::Internal("not run");
  bool background_ = false;
  // Guarded by Conversations::mu_: the callers waiting, and whether one left
  // at its deadline with its client still there (then nobody cancels it).
  int waiters_ = 0;
  bool served_live_client_ = false;
};

class Conversations {
 public:
  // `env`: threads and the clock. REQUIRES: non-null, outlives this.
  explicit Conversations(Env* env, ConversationLimits limits = {});
  // Cancels every running job and waits for its thread.
  ~Conversations();
  Conversations(const Conversations&) = delete;
  Conversations& operator=(const Conversations&) = delete;

  // The summary in force for `id`, or null. Counts as a use of `id`. Shared,
  // not copied: its prefix holds the raw items it replaced (a megabyte for
  // a long conversation), read by every request of the conversation.
  std::shared_ptr<const ConversationSummary> Prior(const std::string& id);
  // The summary for `request` of `id` when the table does not know `id`
  // (new, or evicted and back): the longest prefix of the request whose
  // summary the durable cache holds, committed to `id`. Asked once per
  // stay of `id` in the table; null otherwise.
  std::shared_ptr<const ConversationSummary> Restore(const std::string& id,
                                                     const ClientRequest& request);
  void Commit(const std::string& id, ConversationSummary summary);
  // Whether a job runs for `id`.
  bool Running(const std::string& id);

  // Starts `work` for `id`, or joins the job already running for it (single
  // flight; `*started` says which). A waiting caller counts as a waiter until
  // Wait returns. A finished job commits its summary to `id` (prefix + text)
  // before it is done. Errors: the thread could not be started.
  Result<std::shared_ptr<SummaryJob>> Start(const std::string& id, SummaryWork work, bool* started);

  enum class WaitEnd { kDone, kDeadline, kGone };
  // Waits for `job` until it is done, `deadline_ms` passed (then the job goes
  // on: its summary serves the next request), or `gone()` says the client
  // went away: when no other waiter is left and the job was not prepared
  // ahead, it is cancelled (its work was only for that client).
  WaitEnd Wait(const std::shared_ptr<SummaryJob>& job, int64_t deadline_ms,
               const std::function<bool()>& gone);

  // True the first time it is called for `id` (log a reason once).
  bool FirstWarning(const std::string& id);

  // Jobs started so far (tests, metrics).
  int64_t jobs_started() const { return jobs_started_.load(); }
  // Conversations in memory now (tests, metrics).
  size_t size();

 private:
  struct Entry {
    std::shared_ptr<const ConversationSummary> summary;
    std::shared_ptr<SummaryJob> running;
    uint64_t last_use = 0;
    bool warned = false;
    bool restored = false;  // the durable cache was asked (Restore)
  };
  // The entry of `id`, created when missing, marked used (mu_ held); may
  // evict another entry.
  Entry& UseLocked(const std::string& id);
  void EvictLocked();
  std::optional<std::string> Claim(const std::string& key, const SummaryJob& job,
                                   std::unique_ptr<SummaryClaim>* claim);
  void Run(const std::string& id, const std::shared_ptr<SummaryJob>& job,
           const std::shared_ptr<SummaryWork>& work);
  void ReapLocked();

  Env* env_;
  ConversationLimits limits_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
  uint64_t tick_ = 0;  // guarded by mu_
  struct Worker {
    std::shared_ptr<SummaryJob> job;
    std::unique_ptr<Thread> thread;
  };
  std::vector<Worker> workers_;
  std::atomic<int64_t> jobs_started_{0};
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_SUMMARY_JOBS_H_
