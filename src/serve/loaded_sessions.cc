#include "serve/loaded_sessions.h"

#include <algorithm>
#include <utility>

#include "compactor/estimate.h"
#include "compactor/strategy.h"

namespace compactor::serve {
namespace {

ContextOptions Expanded() {
  ContextOptions o;
  o.expander = StrategyExpander();
  return o;
}

}  // namespace

struct LoadedSessions::Slot {
  std::mutex mu;
  std::unique_ptr<Session> session;  // null until loaded
  ContextCache plain;
  ContextCache expanded{Expanded()};

  // Forgets the contexts before the session they point into goes.
  void Drop() {
    plain.Reset();
    expanded.Reset();
    session.reset();
  }
};

LoadedSessions::Handle::Handle(std::shared_ptr<Slot> slot, bool loaded_in_full)
    : slot_(std::move(slot)), lock_(slot_->mu, std::adopt_lock), loaded_in_full_(loaded_in_full) {}

Session& LoadedSessions::Handle::session() { return *slot_->session; }

Result<std::shared_ptr<const SessionContext>> LoadedSessions::Handle::Context(
    const std::optional<std::string>& leaf, bool expand) {
  ContextCache& cache = expand ? slot_->expanded : slot_->plain;
  return cache.Get(*slot_->session, leaf);
}

LoadedSessions::LoadedSessions(SessionStore* store, const LoadedSessionsOptions& options)
    : store_(store), options_(options) {}

size_t LoadedSessions::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

std::shared_ptr<LoadedSessions::Slot> LoadedSessions::SlotFor(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = slots_.find(id); it != slots_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }
  lru_.emplace_front(id);
  auto slot = std::make_shared<Slot>();
  slots_.emplace(std::string(id), std::make_pair(slot, lru_.begin()));
  return slot;
}

void LoadedSessions::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  // A session let go while a request holds it stays alive with that request.
  while (slots_.size() > std::max<size_t>(options_.max_sessions, 1)) {
    slots_.erase(lru_.back());
    lru_.pop_back();
  }
}

Result<LoadedSessions::Handle> LoadedSessions::Acquire(std::string_view id) {
  std::shared_ptr<Slot> slot = SlotFor(id);
  slot->mu.lock();
  Handle handle(slot, false);  // unlocks on every return below
  if (slot->session) {
    // Only the bytes appended since; a replaced or rewritten file is read
    // again by Refresh itself. Sessions that are not files cannot refresh.
    if (slot->session->Refresh().ok()) return handle;
    slot->Drop();
  }
  LoadOptions lo;
  lo.message_observer = TokenEstimateObserver();
  auto loaded = store_->Load(id, lo);
  if (!loaded.ok()) {
    // An unknown id does not push a loaded session out.
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = slots_.find(id); it != slots_.end() && it->second.first == slot) {
      lru_.erase(it->second.second);
      slots_.erase(it);
    }
    return loaded.status();
  }
  slot->session = std::move(loaded).value();
  handle.loaded_in_full_ = true;
  Trim();  // only a session that loaded takes a place
  return handle;
}

}  // namespace compactor::serve
