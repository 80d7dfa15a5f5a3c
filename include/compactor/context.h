// Rebuilding the context the model sees, exactly as pi 0.73.1's
// buildSessionContext (docs/session-format.md).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_CONTEXT_H_
#define COMPACTOR_INCLUDE_COMPACTOR_CONTEXT_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/message.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

// One message of the rebuilt context.
struct ContextMessage {
  Role role = Role::kOther;
  // The entry it came from (message, custom_message, branch_summary or compaction).
  size_t entry_index = 0;
  // Its JSON object, deep-equal to the object pi puts in `messages`. Stored
  // messages are views into the Session's bytes (valid while the Session
  // lives); summaries and custom messages are synthesized and owned.
  std::string_view json() const { return owned.empty() ? stored : std::string_view(owned); }

  std::string_view stored;
  std::string owned;
  // Set on messages a CompactionExpander synthesized or kept when expanding a
  // compaction entry (user-prompts: "kept-prompt", "elision", "summary"); a
  // string with static storage. Empty otherwise.
  std::string_view origin;
};

struct ModelRef {
  std::string provider;
  std::string model_id;
  // False when the source entry lacked the field (pi then has undefined and
  // the JSON object omits the key).
  bool has_provider = true;
  bool has_model_id = true;
};

struct SessionContext {
  std::optional<std::string> leaf_id;  // nullopt for an empty session
  std::vector<ContextMessage> messages;
  std::string thinking_level = "off";
  bool thinking_level_set = true;  // false: the last change had no level (pi: undefined)
  std::optional<ModelRef> model;
  // Entry indices of the active path, root to leaf.
  std::vector<size_t> path;
  // Index in `path` of the latest compaction on it, if any.
  std::optional<size_t> compaction_path_index;
};

// The latest compaction entry on the active path, as an expander sees it.
struct CompactionOnPath {
  const Session& session;
  const std::vector<size_t>& path;  // entry indices of the active path, root to leaf
  size_t path_index = 0;            // the compaction entry is path[path_index]
};

// The representation hook: a compaction strategy may record a compaction
// entry that Compactor rebuilds into other messages than pi's view of it (one
// compactionSummary message, then the entries it kept). The context builder
// knows no strategy; it hands the latest compaction on the path to the
// expander given in ContextOptions. strategy.h's StrategyExpander() is the
// expander of the registered strategies.
//
// Thread safety: Expand is const and may be called concurrently.
class CompactionExpander {
 public:
  virtual ~CompactionExpander() = default;
  // Appends to `out` the messages that stand for path[0 .. path_index] (the
  // compaction and whatever it keeps from before it) and returns true; the
  // builder then adds the messages of the entries after the compaction as
  // usual. Returns false to leave pi's view of the entry; anything appended
  // before returning false is discarded. Messages may be views into the
  // Session's bytes (ContextMessage::stored) or owned.
  virtual bool Expand(const CompactionOnPath& compaction,
                      std::vector<ContextMessage>* out) const = 0;
};

struct ContextOptions {
  // Build for this entry instead of the file's leaf. Unknown id -> kInvalidArgument
  // (pi silently falls back to the last entry; Compactor reports the mistake).
  std::optional<std::string> leaf_id;
  // Rebuilds the latest compaction through this hook (not owned; must outlive
  // the call). nullptr: pi 0.73.1's view of every compaction entry.
  // StrategyExpander() (strategy.h) gives Compactor's own view of the entries
  // its strategies write (`compactor context --expand`; docs/strategies.md).
  const CompactionExpander* expander = nullptr;
};

Result<SessionContext> BuildSessionContext(const Session& session,
                                           const ContextOptions& options = {});

// The context of a session that grows (Session::Refresh) kept up to date
// cheaply: when the requested leaf descends from the leaf of the previous
// result through entries appended since (the common case: a new entry whose
// parent is the previous leaf), the previous context is extended by those
// entries alone, in O(new entries) whatever the session's size. Anything
// else (a compaction among them, another branch, an older leaf, a reloaded
// or different session) is built in full by BuildSessionContext. Either way
// the result is exactly what BuildSessionContext gives (docs/incremental.md).
//
// Results are immutable snapshots: a caller may keep one (and read it on
// any thread) while the cache goes on; the cache then extends a copy instead
// of the shared one. A snapshot's views point into the Session: valid while
// it lives and is not reloaded.
//
// Thread safety: not thread-safe (one owner calls Get); the snapshots it
// returns are safe for concurrent reads.
class ContextCache {
 public:
  // `options.leaf_id` is ignored (Get names the leaf); the expander is used
  // for every build and must outlive the cache.
  explicit ContextCache(const ContextOptions& options = {});

  // The context of `leaf_id` (nullopt: the session's leaf, Session::Leaf)
  // in `session`. Errors as BuildSessionContext. The cache recognizes the
  // session by its address and Session::generation(): call Reset() before
  // the Session of the previous call is destroyed.
  Result<std::shared_ptr<const SessionContext>> Get(
      const Session& session, const std::optional<std::string>& leaf_id = std::nullopt);
  // Forgets the cached context.
  void Reset();

  // How many Get calls extended the previous context / built one in full.
  size_t extended() const { return extended_; }
  size_t rebuilt() const { return rebuilt_; }

 private:
  // Extends `ctx_` from its leaf to `leaf`; false when it cannot be extended.
  bool Extend(const Session& session, size_t leaf);

  const CompactionExpander* expander_;
  const Session* session_ = nullptr;
  uint64_t generation_ = 0;
  size_t built_size_ = 0;  // session.size() when ctx_ was last brought up to date
  size_t leaf_ = 0;        // ctx_'s leaf index
  std::shared_ptr<SessionContext> ctx_;
  size_t extended_ = 0, rebuilt_ = 0;
};

// The message an entry stands for (pi's entry-to-message mapping), compaction
// entries included (as their compactionSummary message): what branch
// summarization feeds the summarizer. nullopt for entries that stand for no
// message (settings, labels, custom state, empty branch summaries).
std::optional<ContextMessage> EntryMessage(const Session& session, size_t index);

// The tail of the contract object after the messages:
// ],"thinkingLevel":...,"model":...} (shared by ContextToJson and streaming writers).
std::string ContextJsonTail(const SessionContext& context);

// Serializes a context as the CLI contract's JSON object:
// {"leafId","messages","thinkingLevel","model"}.
std::string ContextToJson(const SessionContext& context);

// Synthesized messages (pi's createCompactionSummaryMessage & co), as JSON text.
std::string MakeCompactionSummaryJson(std::string_view summary, double tokens_before,
                                      double timestamp_ms);
std::string MakeBranchSummaryJson(std::string_view summary, std::string_view from_id,
                                  double timestamp_ms);
// A user message with one text block: {"role":"user","content":[{"type":"text",
// "text":...}],"timestamp":...} (what expanders synthesize).
std::string MakeUserTextMessageJson(std::string_view text, double timestamp_ms);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_CONTEXT_H_
