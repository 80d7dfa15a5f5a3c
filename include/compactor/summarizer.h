// Summarizers: the interface every summary producer implements (the offline
// extractive one here, network LLM ones later), the prompt builder for LLM
// summarizers, and the conversation serialization pi sends to its summarizer
// (pi 0.73.1's serializeConversation; docs/summarizers.md).
//
// Thread safety: Summarizer::Summarize is const and must be safe to call
// concurrently (a split turn runs the history and turn-prefix summaries at the
// same time). All free functions here are pure.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_SUMMARIZER_H_
#define COMPACTOR_INCLUDE_COMPACTOR_SUMMARIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/message.h"
#include "compactor/status.h"

namespace compactor {

// ---------------------------------------------------------------------------
// Conversation serialization (pi 0.73.1's serializeConversation over the
// messages of convertToLlm; docs/summarizers.md)
// ---------------------------------------------------------------------------

// Tool results longer than this many UTF-16 units are cut for the summarizer.
inline constexpr int64_t kToolResultMaxChars = 2000;

// pi's convertToLlm for the summarizer: bashExecution -> a user message with
// pi's exact "Ran `cmd`" text (dropped when excludeFromContext), custom -> a
// user message with the same content, branch/compaction summaries -> a user
// message wrapping the summary in <summary> tags (our own lead-in wording),
// user/assistant/toolResult unchanged, any other role dropped.
std::vector<Message> ConvertToLlm(std::span<const Message> messages);

// pi's bashExecutionToText, byte for byte.
std::string BashExecutionText(const Message& message);

// pi's serializeConversation over messages that went through ConvertToLlm:
// "[User]: ", "[Assistant thinking]: ", "[Assistant]: ",
// "[Assistant tool calls]: ", "[Tool result]: " parts joined with "\n\n".
std::string SerializeConversation(std::span<const Message> llm_messages);

// serializeConversation(convertToLlm(messages)) in one pass, without copying
// the messages: the exact text pi puts inside <conversation> tags.
std::string SerializeForSummary(std::span<const Message> messages);

// The same text as parts (one per "[...]:" line group) with the index of the
// message each came from; SerializeForSummary == parts joined with "\n\n".
struct SerializedPart {
  size_t message_index = 0;
  std::string text;
};
std::vector<SerializedPart> SerializeForSummaryParts(std::span<const Message> messages);

// pi's truncateForSummary: text longer than `max_units` UTF-16 units keeps its
// first `max_units` units plus "\n\n[... N more characters truncated]".
// Unlike pi, a surrogate pair is never split (one unit fewer is kept).
std::string TruncateForSummary(std::string_view text, int64_t max_units);

// ---------------------------------------------------------------------------
// Requests and the interface
// ---------------------------------------------------------------------------

enum class SummaryKind {
  kHistory,     // first compaction of the messages before the cut
  kUpdate,      // merge new messages into `previous_summary`
  kTurnPrefix,  // the early part of a turn too large to keep (split turn)
  kBranch,      // an abandoned branch, for /tree navigation
  kHandoff,     // a document that lets a fresh session continue the work
  kShort,       // 2-3 sentence, first-person description of the changes
};

// "history", "update", "turn_prefix", "branch", "handoff", "short".
std::string_view SummaryKindName(SummaryKind kind);

struct SummaryRequest {
  SummaryKind kind = SummaryKind::kHistory;
  // Agent messages as stored (ConvertToLlm is applied by the summarizer). Not
  // owned: must outlive the call.
  std::span<const Message> messages;
  // Empty = none. kHistory with a previous summary is treated as kUpdate
  // (pi picks the update prompt whenever a previous summary exists).
  std::string previous_summary;
  // Appended to the prompt as "Additional focus: ..." (or replacing the
  // branch prompt when replace_instructions is set).
  std::string custom_instructions;
  bool replace_instructions = false;
  // Cumulative file lists (file_ops.h) known to the caller, e.g. seeded from earlier
  // compactions. Summarizers may mention them; the caller still appends the
  // FormatFileOperations footer.
  std::vector<std::string> read_files;
  std::vector<std::string> modified_files;
  // Output cap; 0 = DefaultMaxOutputTokens(kind, kDefaultReserveTokens).
  int64_t max_output_tokens = 0;
  // The summarizer's context window for the whole prompt (system + user text),
  // in estimated tokens; 0 = unbounded. LLM summarizers must stay inside it.
  int64_t max_input_tokens = 0;
  // Session thinking level ("off", "low", ...); LLM summarizers map it.
  std::string thinking_level;
  // Cooperative cancellation, polled between units of work; returning true
  // makes the summarizer stop with kCancelled. May be empty.
  std::function<bool()> is_cancelled;
  // Set only for summarizers whose ReadsMessagesInOrder() is true, when the
  // caller is still parsing later messages: messages[i] may be read once
  // wait_for_messages(n) with n > i has returned. Empty: every message is ready.
  std::function<void(size_t n)> wait_for_messages;
  // What comes after `messages` in the conversation, in order: for a history
  // summary, a split turn's prefix and the messages kept verbatim; for a turn
  // prefix, the kept messages. Not summarized: a summarizer that tracks
  // revisions reads them so that the summary never presents as current a
  // value, rule or decision they revise, nor as open an error a later run of
  // the same command fixed. LLM prompts do not include them (the model sees
  // the kept messages anyway). Not owned. With wait_for_messages set, they are
  // numbered after `messages`: the k-th later message may be read once
  // wait_for_messages(messages.size() + k + 1) has returned.
  std::vector<std::span<const Message>> later_messages;
};

// The number of messages in request.later_messages.
size_t LaterMessageCount(const SummaryRequest& request);

// Waits until the first `n` messages of `request` may be read (see
// SummaryRequest::wait_for_messages); returns at once when nothing is pending.
void AwaitMessages(const SummaryRequest& request, size_t n);

// kHistory + previous summary -> kUpdate; every other kind unchanged.
SummaryKind EffectiveKind(const SummaryRequest& request);

// Produces summary text. Errors: kFailedPrecondition when there is nothing to
// summarize (never an empty summary), kCancelled, and whatever the backend
// reports (kUnavailable for a remote that failed).
class Summarizer {
 public:
  virtual ~Summarizer() = default;
  // A short stable name ("offline", "anthropic", ...).
  virtual std::string_view name() const = 0;
  virtual Result<std::string> Summarize(const SummaryRequest& request) const = 0;
  // True for a summarizer that reads request.messages from the first to the
  // last, calling AwaitMessages(request, i + 1) before it reads messages[i].
  // CompactFile then starts the summary while it parses the later messages of
  // a long history. Default false: every message is parsed before the call.
  virtual bool ReadsMessagesInOrder() const { return false; }
  // True for a summarizer that reads request.later_messages. The messages
  // kept verbatim are parsed only for one that does (an LLM prompt leaves
  // them out); a split turn's prefix is passed to every summarizer, parsed
  // for the turn prefix summary anyway. Default false.
  virtual bool ReadsLaterMessages() const { return false; }
};

// The guard from real bug reports: a request whose messages serialize to
// nothing (and, for kUpdate, carry no previous summary either) is refused with
// kFailedPrecondition instead of being sent to a summarizer.
Status CheckSummarizable(const SummaryRequest& request);

// ---------------------------------------------------------------------------
// Offline (deterministic extractive) summarizer
// ---------------------------------------------------------------------------

struct OfflineSummarizerOptions {
  // Output budget as a fraction of the summarized input's estimated tokens
  // (0.10 leaves a 90% reduction), floored at min_budget_tokens and capped by
  // the request's max_output_tokens.
  double target_ratio = 0.10;
  int64_t min_budget_tokens = 700;
};

// The default summarizer: fills the same sections as the LLM prompts from the
// conversation itself (docs/summarizers.md lists its rules). Same input ->
// same bytes.
std::unique_ptr<Summarizer> NewOfflineSummarizer(const OfflineSummarizerOptions& options = {});

// ---------------------------------------------------------------------------
// Prompts for LLM summarizers (our own wording; the section list is pi's,
// docs/summarizers.md)
// ---------------------------------------------------------------------------

inline constexpr int64_t kDefaultReserveTokens = 16384;

// floor(0.8 x reserve) for history/update/handoff, floor(0.5 x reserve) for the
// turn prefix, 2048 for a branch, min(512, floor(0.2 x reserve)) for short.
int64_t DefaultMaxOutputTokens(SummaryKind kind, int64_t reserve_tokens = kDefaultReserveTokens);

// The system prompt of every summarizer call.
std::string_view SummarizationSystemPrompt();
// The instructions that follow the conversation for a kind (no custom text).
std::string_view SummaryInstructions(SummaryKind kind);

struct SummaryPrompt {
  std::string system_prompt;
  // "<conversation>\n" + serialized + "\n</conversation>\n\n"
  // [+ "<previous-summary>\n" + previous + "\n</previous-summary>\n\n"]
  // + instructions [+ "\n\nAdditional focus: " + custom instructions]
  std::string user_text;
  int64_t max_output_tokens = 0;
  // Messages whose parts were left out to fit max_input_tokens (oldest first).
  size_t omitted_messages = 0;
};

// Builds the prompt of one summarizer call. With max_input_tokens set, the
// oldest serialized parts are dropped (and a single oversized part is cut in
// the middle) until the prompt fits; use SummarizeInPasses to lose nothing.
// kFailedPrecondition when there is nothing to summarize.
Result<SummaryPrompt> BuildSummaryPrompt(const SummaryRequest& request);

// Estimated tokens of a prompt text: ceil(UTF-16 units / 4), pi's heuristic.
int64_t EstimateTextTokens(std::string_view text);

// Bounded summarization for history/update requests: when the prompt would
// exceed request.max_input_tokens, the messages are split into consecutive
// chunks that fit, the first summarized as history (or update when a previous
// summary exists) and each next chunk as an update of the running summary
// (ours: pi sends one unbounded request, which fails on very large sessions).
// Other kinds make one call. An update
// whose messages hold nothing returns the previous summary without a call
// (oh-my-pi's rule); any other empty request is kFailedPrecondition.
Result<std::string> SummarizeInPasses(const Summarizer& summarizer, const SummaryRequest& request);

// Split-turn merge (pi 0.73.1's compact, exact): history + divider +
// turn-prefix summary.
std::string MergeSplitTurnSummaries(std::string_view history, std::string_view turn_prefix);
// The history text pi uses for a split turn with no history messages.
inline constexpr std::string_view kNoPriorHistory = "No prior history.";
// Stored preamble of a branch summary (pi 0.73.1's generateBranchSummary,
// exact: part of the persisted text).
inline constexpr std::string_view kBranchSummaryPreamble =
    "The user explored a different conversation branch before returning here.\n"
    "Summary of that exploration:\n\n";

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_SUMMARIZER_H_
