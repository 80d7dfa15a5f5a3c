// Tool-output pruning (oh-my-pi 15.7.2's pruneToolOutputs) and observation
// masking (the `mask` strategy). Both shrink a session by replacing the content
// of old tool results with a short text, in place: the rewritten entries keep
// their id, parentId and position, every other line stays byte-identical, and
// pi loads the result as an ordinary session. See docs/strategies.md ("prune",
// "mask").
//
// Thread safety: the functions are pure over an immutable Session and safe to
// call concurrently; only WriteRewrittenSession touches the file system.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_PRUNE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_PRUNE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/session.h"
#include "compactor/status.h"
#include "compactor/writer.h"

namespace compactor {

// Counts the tokens of one tool-result message, given its raw JSON.
using MessageTokenCounter = std::function<int64_t(std::string_view message_json)>;
// Counts the tokens of a piece of text (an exact tokenizer's Count).
using TextTokenCounter = std::function<int64_t(std::string_view text)>;

// pi's chars/4 estimate (estimate.h): ceil(UTF-16 units / 4) per message,
// 4800 characters per image block.
MessageTokenCounter PiEstimateCounter();

// oh-my-pi 15.x's estimateTokens over an exact tokenizer: the sum of
// count_text over the message's text fragments (the string content, or each
// text block) plus `image_tokens` per image block. For oh-my-pi's own numbers:
//   options.count_tokens = TokenizerCounter([&](std::string_view t) {
//     return static_cast<int64_t>(o200k->Count(t)); });
inline constexpr int64_t kOmpImageTokens = 1200;
MessageTokenCounter TokenizerCounter(TextTokenCounter count_text,
                                     int64_t image_tokens = kOmpImageTokens);

// One tool result whose content is (to be) replaced.
struct ReplacedOutput {
  size_t entry_index = 0;  // Session index
  size_t path_index = 0;   // position on the root -> leaf path (0 = root)
  std::string entry_id;
  std::string tool_name;     // the result's toolName ("" when absent)
  std::string tool_call_id;  // the result's toolCallId
  int64_t tokens = 0;        // the output's size, by the options' counter
  int64_t tokens_saved = 0;  // tokens minus the replacement's cost, never negative
  std::string replacement;   // the text the content becomes
};

// What pruning or masking would do. `outputs` is in file (path) order, oldest first.
struct RewritePlan {
  std::vector<ReplacedOutput> outputs;
  int64_t tokens_saved = 0;  // Σ outputs[i].tokens_saved
  // Tool results seen on the path, those protected (by the token window, the
  // count window or their tool name), and those already pruned/masked before.
  size_t scanned = 0;
  size_t kept = 0;
  size_t already_pruned = 0;
  // Savings the candidates would have given even when `outputs` is empty
  // because they fell short of the minimum (prune's all-or-nothing rule).
  int64_t candidate_savings = 0;
  size_t candidate_count = 0;
  // Why nothing is replaced ("no candidates", "savings 1234 below minimum
  // 20000"); empty when `outputs` is not empty.
  std::string skipped_reason;
};

// ---------------------------------------------------------------------------
// prune: oh-my-pi 15.7.2's pruneToolOutputs (docs/strategies.md). Defaults
// are oh-my-pi's DEFAULT_PRUNE_CONFIG.
struct PruneOptions {
  // The newest tool-output tokens never pruned. The result that crosses the
  // limit is still protected (the check comes before adding it).
  int64_t protect_tokens = 40000;
  // All or nothing: prune only when the total savings reach this.
  int64_t minimum_savings = 20000;
  // Results of these tools are never pruned (they still count toward protect_tokens).
  std::vector<std::string> protected_tools = {"skill", "read"};
  // Ours (oh-my-pi 18.x has MIN_PRUNE_TOKENS): results smaller than this are
  // not candidates. 0 = oh-my-pi 15.7.2 (a 3-token output becomes a notice).
  int64_t min_prune_tokens = 0;
  // Ours: only consider results that are part of the rebuilt context (skip
  // those a compaction already summarized). false = oh-my-pi 15.7.2, which
  // scans the whole root -> leaf path.
  bool only_in_context = false;
  // Token count of one tool result. Empty = PiEstimateCounter(). oh-my-pi's
  // numbers use o200k: TokenizerCounter(o200k Count). The notice's own cost is
  // always ceil(length / 4), as in oh-my-pi.
  MessageTokenCounter count_tokens;
};

// oh-my-pi's notice: "[Output truncated - <tokens> tokens]".
std::string PruneNotice(int64_t tokens);

// Plans pruning of the path ending at `leaf` (nullopt = the file's leaf).
// kInvalidArgument for a leaf index out of range; an empty session plans nothing.
Result<RewritePlan> PlanPrune(const Session& session, std::optional<size_t> leaf,
                              const PruneOptions& options = {});

// ---------------------------------------------------------------------------
// mask: observation masking (JetBrains, "The Complexity Trap"): old tool
// outputs replaced by a placeholder naming the tool, a summary of the call's
// arguments and the output's original size. No summarizer call.
struct MaskOptions {
  // Tool results kept verbatim: the newest `keep_recent_outputs` results of
  // the context, and (when > 0) the newest results within `keep_recent_tokens`
  // tool-output tokens (the crossing result kept). A result either rule keeps
  // stays.
  int64_t keep_recent_outputs = 10;
  int64_t keep_recent_tokens = 0;
  // Results smaller than this stay verbatim: short outputs ("File written",
  // an exit code) are cheap and often what the model needs; masking them
  // would save almost nothing.
  int64_t min_output_tokens = 100;
  // Never masked (they still count toward the windows). Skills are standing
  // instructions, not observations.
  std::vector<std::string> protected_tools = {"skill"};
  // Longest argument summary in the placeholder (UTF-16 units, then "…").
  size_t max_arguments_chars = 160;
  // Token count of one tool result; empty = PiEstimateCounter(). Placeholders
  // are charged ceil(length / 4).
  MessageTokenCounter count_tokens;
};

// Plans masking of the context of `leaf` (nullopt = the file's leaf): only
// tool results that are part of the rebuilt context are considered.
Result<RewritePlan> PlanMask(const Session& session, std::optional<size_t> leaf,
                             const MaskOptions& options = {});

// ---------------------------------------------------------------------------
// Applying a plan.

struct ApplyOptions {
  // pruned/masked results get "prunedAt": now (epoch ms, env's wall clock),
  // one value for the whole batch as in oh-my-pi. null = Env::Default().
  Env* env = nullptr;
  // The exact bytes `session` was loaded from, when the caller has them:
  // every line not rewritten is then copied byte for byte (blank and
  // malformed lines, CRLF endings, and the v1/v2 format of an old file
  // included). Without them the base is the session's v3 form
  // (Session::ToV3Jsonl), identical for a clean v3 file.
  std::optional<std::string_view> original_text;
};

// The whole file text with each planned result's message rewritten in place:
// "content" becomes [{"type":"text","text":<replacement>}] (same key
// position) and "prunedAt" is appended; everything else on the line is kept.
// kFailedPrecondition when `original_text` does not match the session
// (another file, or the file changed).
Result<std::string> ApplyRewrite(const Session& session, const RewritePlan& plan,
                                 const ApplyOptions& options = {});

// Plan + apply of the mask strategy (for `compact --strategy mask`).
struct MaskResult {
  RewritePlan plan;
  std::string rewritten;  // the new file text (the base text when nothing is masked)
};
Result<MaskResult> MaskObservations(const Session& session, std::optional<size_t> leaf,
                                    const MaskOptions& options = {},
                                    const ApplyOptions& apply = {});

// ---------------------------------------------------------------------------
// Writing.

struct WriteRewrittenOptions {
  // Write here instead of over `path` (no backup is made then).
  std::string output_path;
  // In-place rewrites keep the old file as <path><backup_suffix>.
  // (rewrite.env is ignored: `env` below is used for everything.)
  RewriteOptions rewrite;
  // Reads, the clock for "prunedAt" and the write; null = Env::Default().
  Env* env = nullptr;
  // The in-place protocol's waits (SessionRewriteOptions, writer.h).
  int64_t lock_timeout_ms = -1;
  int64_t grace_ms = 300;
};
struct WriteRewrittenResult {
  std::string output_path;
  std::optional<std::string> backup_path;
  // Bytes other writers appended during the rewrite, carried over (in place only).
  uint64_t carried_bytes = 0;
};

// Applies `plan` to the bytes of `path` (the file `session` was loaded from;
// ApplyOptions::original_text) and writes the result. In place (no
// output_path, or one naming the same file) this is RewriteSessionFile
// (writer.h): under the sidecar lock, entries appended by other writers
// since the load, and during the grace period after the rename, are carried
// over. To output_path it is an atomic replacement of that file (a symlink is
// followed, a non-regular file refused). Fails with kFailedPrecondition,
// writing nothing, when a planned line no longer holds the message it was
// planned from (another process rewrote the file: load again and retry).
Result<WriteRewrittenResult> WriteRewrittenSession(const Session& session, const std::string& path,
                                                   const RewritePlan& plan,
                                                   const WriteRewrittenOptions& options = {});

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_PRUNE_H_
