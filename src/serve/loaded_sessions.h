// The sessions the service API keeps loaded between requests (docs/api.md,
// "Loaded sessions"): a request on a session it served recently reads only
// what was appended since (Session::Refresh) and extends the context it
// built last time (ContextCache) instead of loading and building it all
// again, so that appending an entry to a large session and asking for its
// context costs what the new entry costs, not what the session costs.
//
// Thread safety: Acquire may be called from any thread. A Handle holds its
// session's lock: requests on one session run one at a time, requests on
// different sessions in parallel.
#ifndef COMPACTOR_SRC_SERVE_LOADED_SESSIONS_H_
#define COMPACTOR_SRC_SERVE_LOADED_SESSIONS_H_

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "compactor/context.h"
#include "compactor/session.h"
#include "compactor/status.h"
#include "compactor/store.h"

namespace compactor::serve {

struct LoadedSessionsOptions {
  // How many sessions stay loaded; the least recently used is let go first.
  // A 50 MB session costs about its size again in memory (docs/incremental.md).
  size_t max_sessions = 16;
};

class LoadedSessions {
  struct Slot;

 public:
  // `store` must outlive this.
  explicit LoadedSessions(SessionStore* store, const LoadedSessionsOptions& options = {});
  LoadedSessions(const LoadedSessions&) = delete;
  LoadedSessions& operator=(const LoadedSessions&) = delete;

  // A loaded session, locked for its holder until destroyed.
  class Handle {
   public:
    Session& session();
    // The context at `leaf` (nullopt: the session's leaf), pi's view or,
    // with `expand`, Compactor's (StrategyExpander). Valid while the handle
    // lives. Errors as BuildSessionContext.
    Result<std::shared_ptr<const SessionContext>> Context(const std::optional<std::string>& leaf,
                                                          bool expand);
    // Whether the session was read in full for this handle (not refreshed).
    bool loaded_in_full() const { return loaded_in_full_; }

   private:
    friend class LoadedSessions;
    Handle(std::shared_ptr<Slot> slot, bool loaded_in_full);
    std::shared_ptr<Slot> slot_;
    std::unique_lock<std::mutex> lock_;
    bool loaded_in_full_ = false;
  };

  // The session `id`, brought up to date with its store: loaded the first
  // time (with pi's token estimates), then refreshed (only the bytes
  // appended since are read; a replaced file is read again). A store whose
  // sessions cannot be refreshed (not files) is read again each time.
  // Errors as SessionStore::Load.
  Result<Handle> Acquire(std::string_view id);

  // How many sessions are loaded now.
  size_t size() const;

 private:
  std::shared_ptr<Slot> SlotFor(std::string_view id);
  // Lets the least recently used sessions go down to max_sessions.
  void Trim();

  SessionStore* store_;
  LoadedSessionsOptions options_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recent first
  std::map<std::string, std::pair<std::shared_ptr<Slot>, std::list<std::string>::iterator>,
           std::less<>>
      slots_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_LOADED_SESSIONS_H_
