#include "serve/summary_jobs.h"

#include <algorithm>
#include <utility>

#include "serve/upstream_summarizer.h"

namespace compactor::serve {

Conversations::Conversations(Env* env, ConversationLimits limits) : env_(env), limits_(limits) {}

Conversations::Entry& Conversations::UseLocked(const std::string& id) {
  auto [it, added] = entries_.try_emplace(id);
  it->second.last_use = ++tick_;
  if (added) EvictLocked();
  return it->second;
}

// Evicts the least recently used entries without a running job until the
// table is within its bound (a linear scan, only when an entry is added
// past the bound).
void Conversations::EvictLocked() {
  while (entries_.size() > std::max<size_t>(limits_.max_conversations, 1)) {
    auto lru = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.running != nullptr || it->second.last_use == tick_) continue;
      if (lru == entries_.end() || it->second.last_use < lru->second.last_use) lru = it;
    }
    if (lru == entries_.end()) return;  // every other one is busy
    entries_.erase(lru);
  }
}

size_t Conversations::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::shared_ptr<const ConversationSummary> Conversations::Restore(const std::string& id,
                                                                  const ClientRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = UseLocked(id);
    if (e.restored || e.summary) return nullptr;
    e.restored = true;
  }
  if (limits_.durable == nullptr || !limits_.durable->find) return nullptr;
  // The longest cached prefix: a summary covers [0, cut) of some earlier
  // request, and the request is longer than it (MatchedPrefix).
  std::vector<std::string> keys = SummaryKeys(request);
  for (size_t cut = keys.size(); cut-- > 1;) {
    std::optional<std::string> text = limits_.durable->find(keys[cut]);
    if (!text) continue;
    auto found =
        std::make_shared<const ConversationSummary>(SummaryOf(request, cut, std::move(*text)));
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = UseLocked(id);
    if (!e.summary) e.summary = std::move(found);
    return e.summary;
  }
  return nullptr;
}

Conversations::~Conversations() {
  std::vector<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (Worker& w : workers) {
    w.job->cancel_.store(true);
    w.thread->Join();
  }
}

std::shared_ptr<const ConversationSummary> Conversations::Prior(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return nullptr;
  it->second.last_use = ++tick_;
  return it->second.summary;
}

void Conversations::Commit(const std::string& id, ConversationSummary summary) {
  std::lock_guard<std::mutex> lock(mu_);
  UseLocked(id).summary = std::make_shared<const ConversationSummary>(std::move(summary));
}

bool Conversations::Running(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.running != nullptr;
}

bool Conversations::FirstWarning(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = UseLocked(id);
  return !std::exchange(e.warned, true);
}

// Joins the threads of finished jobs (mu_ held; their threads are past the
// last use of the lock by then, see Run).
void Conversations::ReapLocked() {
  std::vector<Worker> keep;
  for (Worker& w : workers_) {
    if (w.job->done()) {
      w.thread->Join();
    } else {
      keep.push_back(std::move(w));
    }
  }
  workers_.swap(keep);
}

Result<std::shared_ptr<SummaryJob>> Conversations::Start(const std::string& id, SummaryWork work,
                                                         bool* started) {
  std::lock_guard<std::mutex> lock(mu_);
  ReapLocked();
  Entry& e = UseLocked(id);
  if (e.running != nullptr) {
    *started = false;
    if (!work.background) ++e.running->waiters_;
    return e.running;
  }
  auto job = std::make_shared<SummaryJob>();
  job->background_ = work.background;
  job->waiters_ = work.background ? 0 : 1;
  auto shared = std::make_shared<SummaryWork>(std::move(work));
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Thread> thread,
                             env_->StartThread([this, id, job, shared] { Run(id, job, shared); }));
  e.running = job;
  workers_.push_back(Worker{job, std::move(thread)});
  jobs_started_.fetch_add(1);
  *started = true;
  return job;
}

// The summary of `key` another server wrote or is writing (nullopt: this
// job writes it, holding `*claim` when the store has claims). Bounded: a
// holder silent for kClaimWaitMs is given up on.
std::optional<std::string> Conversations::Claim(const std::string& key, const SummaryJob& job,
                                                std::unique_ptr<SummaryClaim>* claim) {
  const DurableSummaries* d = limits_.durable;
  if (d == nullptr || !d->claim || !d->find) return std::nullopt;
  const int64_t end = env_->MonotonicMicros() + kClaimWaitMs * 1000;
  for (;;) {
    auto c = d->claim(key);
    if (!c.ok()) return std::nullopt;  // no claim to be had: summarize unclaimed
    // Claimed or not, the holder may have finished already.
    if (std::optional<std::string> found = d->find(key)) return found;
    if (*c != nullptr) {
      *claim = std::move(*c);
      return std::nullopt;
    }
    if (job.cancelled() || env_->MonotonicMicros() >= end) return std::nullopt;
    env_->SleepMs(50, [&job] { return job.cancelled(); });
  }
}

void Conversations::Run(const std::string& id, const std::shared_ptr<SummaryJob>& job,
                        const std::shared_ptr<SummaryWork>& work) {
  SummaryRequest req;
  req.kind = work->previous.empty() ? SummaryKind::kHistory : SummaryKind::kUpdate;
  req.messages = work->messages;
  req.previous_summary = work->previous;
  req.is_cancelled = [job] { return job->cancelled(); };
  const std::string key = SummaryKey(work->prefix);
  std::unique_ptr<SummaryClaim> claim;  // held until the summary is put
  std::optional<std::string> theirs = Claim(key, *job, &claim);
  Result<std::string> out = theirs ? Result<std::string>(std::move(*theirs))
                                   : SummarizeWithin(*work->summarizer, req, work->window);
  // Durable before the summary is in force: a conversation evicted later
  // finds it again (the put is the store's append, on this job's thread).
  if (!theirs && out.ok() && limits_.durable != nullptr && limits_.durable->put) {
    limits_.durable->put(key, *out);
  }
  claim.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = UseLocked(id);
    if (out.ok()) {
      e.summary = std::make_shared<const ConversationSummary>(
          ConversationSummary{std::move(work->prefix), *out});
    }
    if (e.running == job) e.running = nullptr;
    job->result_ = std::move(out);
    job->done_.store(true, std::memory_order_release);
  }
}

Conversations::WaitEnd Conversations::Wait(const std::shared_ptr<SummaryJob>& job,
                                           int64_t deadline_ms, const std::function<bool()>& gone) {
  const int64_t end = env_->MonotonicMicros() + deadline_ms * 1000;
  WaitEnd how = WaitEnd::kDone;
  while (!job->done()) {
    if (gone && gone()) {
      how = WaitEnd::kGone;
      break;
    }
    int64_t left_ms = (end - env_->MonotonicMicros()) / 1000;
    if (left_ms <= 0) {
      how = WaitEnd::kDeadline;
      break;
    }
    env_->SleepMs(std::min<int64_t>(left_ms, 20), [&] { return job->done(); });
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (job->waiters_ > 0) --job->waiters_;
  if (how == WaitEnd::kDeadline) job->served_live_client_ = true;
  // Work done only for clients that went away is cancelled; a job some
  // waiter left at its deadline goes on (its summary serves that client's
  // next request).
  if (how == WaitEnd::kGone && job->waiters_ == 0 && !job->background_ &&
      !job->served_live_client_) {
    job->cancel_.store(true);
  }
  return how;
}

}  // namespace compactor::serve
