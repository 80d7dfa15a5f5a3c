// Compaction quality evaluation (docs/quality.md): probe facts a continuing
// agent needs, a scorer that decides which facts survive in a rebuilt context,
// a deterministic generator of evaluation sessions with planted facts,
// rule-based fact extraction from real sessions, and the runner behind
// `compactor eval`.
//
// Thread safety: every function here is pure or works on its own arguments;
// a loaded Session may be evaluated from several threads at once.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_EVAL_H_
#define COMPACTOR_INCLUDE_COMPACTOR_EVAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/providers.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

// ---------------------------------------------------------------------------
// Facts

enum class FactKind {
  kGoal,          // what the user wants overall
  kConstraint,    // an explicit rule or preference ("use pnpm, not npm")
  kFileModified,  // a file changed by edit/write
  kFileRead,      // a file read and not modified
  kCommand,       // a significant command and its final outcome
  kError,         // an error that occurred (fixed or not)
  kDecision,      // a key decision together with its reason
  kNextStep,      // what the agent is to do next
};
inline constexpr int kFactKindCount = 8;
// "goal", "constraint", "file_modified", "file_read", "command", "error", "decision", "next_step".
std::string_view FactKindName(FactKind kind);
Result<FactKind> ParseFactKind(std::string_view name);

struct Fact {
  std::string id;  // unique within its file
  FactKind kind = FactKind::kGoal;
  // The canonical text the scorer looks for (file kinds: the path; command: the command).
  std::string text;
  // Other texts accepted in place of `text` (shorter forms, paraphrases).
  std::vector<std::string> variants;
  // Each group must be satisfied by one of its alternatives near an
  // occurrence of the text (command outcome, decision reason); see
  // docs/quality.md for "near".
  std::vector<std::vector<std::string>> qualifiers;
  // Set on a stale fact: the id of the fact that replaced it. A stale fact
  // is not expected to be retained; it is scored on whether it is wrongly
  // presented as current.
  std::string superseded_by;
  // command: the final exit code; error: whether a later call fixed it.
  std::optional<int> exit_code;
  std::optional<bool> fixed;
  // Where it was stated: entry id (and index among entries) of the message.
  std::string entry_id;
  // Free-form note (generator / extractor provenance), not scored.
  std::string note;
};

struct FactFile {
  std::string session;  // file name of the session the facts belong to
  std::string source;   // "generated" or "extracted"
  uint64_t seed = 0;    // generator seed (0 for extracted)
  std::vector<Fact> facts;
};

// JSON in the documented `<name>.facts.json` layout (stable key order).
std::string FactFileToJson(const FactFile& file);
Result<FactFile> ParseFactFile(std::string_view json, std::string_view name = "facts");
// Reads and parses `path` through `env` (null = Env::Default()).
Result<FactFile> ReadFactFile(const std::string& path, Env* env = nullptr);

// ---------------------------------------------------------------------------
// Rendering and matching

// One unit of rendered context: a message, or a tool call merged with its
// result ("exchange": the call and its outcome belong together).
struct RenderedBlock {
  size_t message_index = 0;  // first context message it came from
  Role role = Role::kOther;
  bool exchange = false;
  bool summary = false;  // a compaction/branch summary or a strategy-synthesized message
  std::string text;
};
std::vector<RenderedBlock> RenderContext(const std::vector<ContextMessage>& messages);

// Lowercases ASCII, drops markdown quoting characters (` * " '), and collapses
// every whitespace run to one space. Matching happens on this form.
std::string NormalizeForMatch(std::string_view text);

struct FactOutcome {
  std::string id;
  FactKind kind = FactKind::kGoal;
  bool stale = false;      // superseded_by set
  bool mentioned = false;  // the text (or a variant) occurs
  bool retained = false;   // occurs with every qualifier satisfied (stale facts: false)
  // Stale facts only: an occurrence is presented as current (rule in docs/quality.md).
  bool stale_as_current = false;
  // The fact was stated in the part the compaction replaced (before the
  // first kept entry); false for the ceiling.
  bool in_summarized_part = false;
};

// Proximity window for qualifiers and supersession markers, in normalized characters.
inline constexpr size_t kQualifierWindow = 300;

// Scores facts against a rendered context (in_summarized_part is left false;
// the runner sets it). A stale fact's replacement is found by superseded_by.
std::vector<FactOutcome> ScoreFacts(const std::vector<Fact>& facts,
                                    const std::vector<RenderedBlock>& blocks);

// ---------------------------------------------------------------------------
// Generator

struct GeneratorOptions {
  uint64_t seed = 1;
  // Approximate size of the conversation in pi-estimated tokens; the
  // generator varies it by +-25% with the seed. Default lands in 100k-250k.
  int64_t target_tokens = 160000;
  // The simulated agent has a notes tool: it keeps `<name>.notes.md` up to
  // date through write_notes calls in the session (docs/quality.md, "Agent
  // notes"). Off: an agent without one, no notes calls and no notes file;
  // the rest of the session is byte for byte the same.
  bool agent_notes = true;
};

struct GeneratedSession {
  std::string name;   // e.g. "eval-0001" (no extension)
  std::string jsonl;  // the session file (pi v3), newline-terminated lines
  FactFile facts;
  // The simulated agent's notes file as it stands at the end of the session:
  // the content of its last write_notes call (docs/quality.md, "Agent
  // notes"); what the notes strategy uses as its summary.
  std::string notes;
};

// Same options -> same bytes.
GeneratedSession GenerateEvalSession(const GeneratorOptions& options);

// Writes `count` sessions with seeds seed, seed+1, ... into `dir` (created if
// needed) as `<name>.jsonl`, `<name>.facts.json` and (with agent_notes)
// `<name>.notes.md`, through `env` (null = Env::Default()). Returns the
// session paths.
Result<std::vector<std::string>> WriteEvalCorpus(const std::string& dir, int count, uint64_t seed,
                                                 int64_t target_tokens = 160000,
                                                 bool agent_notes = true, Env* env = nullptr);

// ---------------------------------------------------------------------------
// Extraction from real sessions (rules in docs/quality.md)

// The probe facts of a session that has no fact file, taken by rule from its
// current context: what the eval then checks the compacted context for.
FactFile ExtractProbeFacts(const Session& session);

// ---------------------------------------------------------------------------
// Probe questions for an LLM judge (the four probe types of Factory's
// compression evaluation: recall, artifact, continuation, decision;
// docs/quality.md). String matching cannot tell whether an
// error's fix status or a decision's reasoning survived in other words; a
// judge model answers these from the rebuilt context and grades the answer.

enum class ProbeType { kRecall, kArtifact, kContinuation, kDecision };
std::string_view ProbeTypeName(ProbeType type);  // "recall", "artifact", "continuation", "decision"

struct ProbeQuestion {
  ProbeType type = ProbeType::kRecall;
  std::string question;
  // The reference answer the judge grades against (built from current facts).
  std::string expected;
  std::vector<std::string> fact_ids;
};

// One question per probe type that has facts: the goal and constraints
// (recall), errors and whether they were fixed (recall), modified files
// (artifact), the next step (continuation), current decisions with reasons
// (decision). Superseded facts are named as such in the expected answer.
std::vector<ProbeQuestion> MakeProbeQuestions(const FactFile& facts);

// The rendered context as one text (blocks joined by blank lines), as a
// judge would read it.
std::string RenderedText(const std::vector<RenderedBlock>& blocks);

struct JudgePrompt {
  std::string system_prompt;
  std::string user_text;
};
// The grading request: the context, the question and the reference answer;
// the judge must reply with one line "SCORE: <0-5>" first.
JudgePrompt BuildJudgePrompt(std::string_view context_text, const ProbeQuestion& question);
// Parses "SCORE: n" (0-5, decimals allowed) from a judge reply.
Result<double> ParseJudgeScore(std::string_view reply);

// A judge model. Implementations call an LLM with BuildJudgePrompt's text.
class ProbeJudge {
 public:
  virtual ~ProbeJudge() = default;
  virtual std::string_view name() const = 0;
  // Score 0-5 for the question against the context.
  virtual Result<double> Score(std::string_view context_text,
                               const ProbeQuestion& question) const = 0;
};

// A judge backed by configured LLM models (providers.h): sends
// BuildJudgePrompt's text through CompleteSummary and parses "SCORE: n".
std::unique_ptr<ProbeJudge> NewLlmProbeJudge(std::vector<ModelConfig> candidates);

// ---------------------------------------------------------------------------
// Runner

struct EvalConfig {
  // nullptr = no compaction (the ceiling). Not owned (strategy.h).
  const CompactionStrategy* strategy = nullptr;
  CompactOptions compact;  // strategy, dry_run and only_if_needed are set by the runner
  // Display name of the summarizer ("offline", ...).
  std::string summarizer_name = "offline";
  // Optional: grade MakeProbeQuestions with this judge (nullptr = string rules only).
  const ProbeJudge* judge = nullptr;
};

struct ProbeScore {
  ProbeType type = ProbeType::kRecall;
  std::string question;
  double score = 0;   // 0-5; meaningful only when error is empty
  std::string error;  // the judge's failure, if any
};

struct KindScore {
  int total = 0;
  int retained = 0;
  int mentioned = 0;
  int summarized_total = 0;  // facts stated in the summarized part
  int summarized_retained = 0;
};

struct SessionEval {
  std::string session;   // path
  std::string strategy;  // "none" for the ceiling
  std::string summarizer;
  bool compacted = false;
  std::string skipped_reason;  // why no compaction happened, or the error
  std::vector<FactOutcome> outcomes;
  KindScore kinds[kFactKindCount];
  int stale_total = 0;
  int stale_as_current = 0;
  // Tokens (pi's estimate). Summarized part: what the summary replaced vs the
  // summary; whole context: Σ message estimates before vs after.
  int64_t summarized_tokens = 0;
  int64_t summary_tokens = 0;
  int64_t context_tokens_before = 0;
  int64_t context_tokens_after = 0;
  double compact_ms = 0;           // the compaction itself
  double total_ms = 0;             // compaction + rebuild + scoring
  std::vector<ProbeScore> probes;  // with EvalConfig::judge
};

// Compacts `session` in memory (nothing is written), rebuilds the context and
// scores `facts` against it. A strategy that cannot run (unsupported, nothing
// to summarize, empty notes) yields a result with compacted=false,
// skipped_reason set and no outcomes: it is not scored. Only internal
// failures are errors.
Result<SessionEval> EvaluateSession(const Session& session, const FactFile& facts,
                                    const EvalConfig& config);

struct EvalSummary {
  std::string strategy;
  std::string summarizer;
  int sessions = 0;
  int compacted = 0;
  KindScore kinds[kFactKindCount];
  int total = 0, retained = 0;
  int summarized_total = 0, summarized_retained = 0;
  int stale_total = 0, stale_as_current = 0;
  int64_t summarized_tokens = 0, summary_tokens = 0;
  int64_t context_tokens_before = 0, context_tokens_after = 0;
  double compact_ms = 0, total_ms = 0;
  // Shares in [0, 1]; 1 when there is nothing to count.
  double Retention() const;
  double KindRetention(FactKind kind) const;
  double SummaryReduction() const;  // 1 - summary / summarized
  double ContextReduction() const;  // 1 - after / before
};
EvalSummary Summarize(const std::vector<SessionEval>& evals);

// The targets for the offline summarizer on the generated corpus.
struct EvalTargets {
  double overall = 0.90;
  double files_modified = 0.95;
  double constraints = 0.95;
  int stale_as_current = 0;
  double summary_reduction = 0.85;
};
// Empty when every target is met; otherwise one line per miss.
std::vector<std::string> CheckTargets(const EvalSummary& summary, const EvalTargets& targets = {});

// Reports over summaries (one per strategy) and, for JSON, the per-session results.
std::string EvalTable(const std::vector<EvalSummary>& summaries);
std::string EvalJson(const std::vector<EvalSummary>& summaries,
                     const std::vector<SessionEval>& sessions);
std::string EvalHtml(const std::vector<EvalSummary>& summaries);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_EVAL_H_
