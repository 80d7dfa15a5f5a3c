#include "serve/summary_jobs.h"

#include <algorithm>
#include <utility>

#include "serve/upstream_summarizer.h"

namespace compactor::serve {

Conversations::Conversations(Env* env) : env_(env) {}

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

std::optional<ConversationSummary> Conversations::Prior(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.summary;
}

void Conversations::Commit(const std::string& id, ConversationSummary summary) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[id].summary = std::move(summary);
}

bool Conversations::Running(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.running != nullptr;
}

bool Conversations::FirstWarning(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  return warned_.insert(id).second;
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
  Entry& e = entries_[id];
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

void Conversations::Run(const std::string& id, const std::shared_ptr<SummaryJob>& job,
                        const std::shared_ptr<SummaryWork>& work) {
  SummaryRequest req;
  req.kind = work->previous.empty() ? SummaryKind::kHistory : SummaryKind::kUpdate;
  req.messages = work->messages;
  req.previous_summary = work->previous;
  req.is_cancelled = [job] { return job->cancelled(); };
  Result<std::string> out = SummarizeWithin(*work->summarizer, req, work->window);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[id];
    if (out.ok()) e.summary = ConversationSummary{std::move(work->prefix), *out};
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
