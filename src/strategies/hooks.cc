#include <exception>
#include <new>

#include "compactor/compaction.h"

namespace compactor {
namespace {

// Runs one handler; a throw is reported and counts as "no result".
template <typename R, typename F, typename E>
std::optional<R> Guarded(const F& f, const E& e, std::string_view hook,
                         const std::function<void(std::string_view, std::string_view)>& on_error,
                         std::vector<std::string>* errors) {
  std::string what;
  try {
    return f(e);
  } catch (const std::bad_alloc&) {
    throw;  // out of memory is no hook's failure: the run stops, nothing written
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
    what = "unknown exception";
  }
  std::string msg = std::string(hook) + " handler failed: " + what;
  if (on_error) on_error(hook, what);
  if (errors) errors->push_back(msg);
  return std::nullopt;
}

template <typename F, typename E>
void GuardedVoid(const F& f, const E& e, std::string_view hook,
                 const std::function<void(std::string_view, std::string_view)>& on_error,
                 std::vector<std::string>* errors) {
  try {
    f(e);
    return;
  } catch (const std::bad_alloc&) {
    throw;  // as above
  } catch (const std::exception& ex) {
    if (on_error) on_error(hook, ex.what());
    if (errors) errors->push_back(std::string(hook) + " handler failed: " + ex.what());
  } catch (...) {
    if (on_error) on_error(hook, "unknown exception");
    if (errors) errors->push_back(std::string(hook) + " handler failed: unknown exception");
  }
}

}  // namespace

BeforeCompactResult CompactionHooks::RunBeforeCompact(const BeforeCompactEvent& e,
                                                      std::vector<std::string>* errors) const {
  BeforeCompactResult out;
  for (const auto& f : before_compact_) {
    auto r = Guarded<BeforeCompactResult>(f, e, "before_compact", on_error, errors);
    if (!r) continue;
    if (r->cancel) return *r;
    if (r->compaction) out.compaction = std::move(r->compaction);
  }
  return out;
}

CompactingResult CompactionHooks::RunCompacting(const CompactingEvent& e,
                                                std::vector<std::string>* errors) const {
  CompactingResult out;
  for (const auto& f : compacting_) {
    auto r = Guarded<CompactingResult>(f, e, "compacting", on_error, errors);
    if (!r) continue;
    if (r->prompt || !r->context.empty() || !r->preserve_data_json.empty()) out = std::move(*r);
  }
  return out;
}

void CompactionHooks::RunAfterCompact(const AfterCompactEvent& e,
                                      std::vector<std::string>* errors) const {
  for (const auto& f : after_compact_) GuardedVoid(f, e, "after_compact", on_error, errors);
}

BeforeTreeResult CompactionHooks::RunBeforeTree(const BeforeTreeEvent& e,
                                                std::vector<std::string>* errors) const {
  BeforeTreeResult out;
  for (const auto& f : before_tree_) {
    auto r = Guarded<BeforeTreeResult>(f, e, "before_tree", on_error, errors);
    if (!r) continue;
    if (r->cancel) return *r;
    if (r->summary) out = std::move(*r);
  }
  return out;
}

void CompactionHooks::RunAfterTree(const AfterTreeEvent& e,
                                   std::vector<std::string>* errors) const {
  for (const auto& f : after_tree_) GuardedVoid(f, e, "after_tree", on_error, errors);
}

}  // namespace compactor
